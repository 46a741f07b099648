// Rule: a row that repeats a base row is one mistake, reported once. The
// variant writes Loom's unguarded `CallingLlm + LlmFailed(..)`
// row again; it would also hide the guarded base row for that pair, which
// is not reported a second time.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        CallingLlm + LlmFailed(error) => WaitingForUserInput / DisplayError(error.to_string()),
    }
}

fn main() {}
