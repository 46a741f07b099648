// Rule: a `remove state` that base rows still lead into keeps the state
// and says so, naming the variant's own rows that name it too (they would
// be the next build's errors).
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        remove state PostToolsHook,
        PostToolsHook + ShutdownRequested => ShuttingDown / Shutdown,
    }
}

fn main() {}
