// Rule: `remove state` cannot take away where the machine starts; Loom's
// initial state `WaitingForUserInput` still has rows into it as well.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        remove state WaitingForUserInput,
    }
}

fn main() {}
