// Rule: `remove state` names a state of the base; Loom has no `Paused`.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        remove state Paused,
    }
}

fn main() {}
