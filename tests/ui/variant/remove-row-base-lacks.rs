// Rule: `remove` drops a base row with the same source, event and guard;
// Loom has no `CallingLlm + UserInput` row to remove.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        remove CallingLlm + UserInput(msg),
    }
}

fn main() {}
