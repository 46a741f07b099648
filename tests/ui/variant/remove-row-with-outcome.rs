// Rule: a `remove` row names only the base row it drops; an outcome after
// `=>` belongs to a `replace` row.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        remove * + ShutdownRequested => ShuttingDown / Shutdown,
    }
}

fn main() {}
