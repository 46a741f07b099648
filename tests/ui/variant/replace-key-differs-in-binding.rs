// Rule: `replace` matches a base row by its key as written, bindings
// included: Loom's row binds `error`, this one binds `e`.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        replace CallingLlm + LlmFailed(e)
            => WaitingForUserInput / DisplayError(format!("gave up: {e}")),
    }
}

fn main() {}
