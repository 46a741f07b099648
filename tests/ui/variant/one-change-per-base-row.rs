// Rule: a base row is replaced or removed once; a second change to it
// would silently undo the first.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        replace CallingLlm + LlmFailed(error) => WaitingForUserInput / DisplayError(error.to_string()),
        remove CallingLlm + LlmFailed(error),
    }
}

fn main() {}
