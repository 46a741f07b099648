// Rule: two rows with the same state, event and guard are a slip. The
// variant writes Loom's `CallingLlm + LlmEvent(ToolCallDelta)` row again as an
// added row instead of a `replace` row.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        CallingLlm + LlmEvent(StreamEvent::ToolCallDelta { .. }) => CallingLlm / DisplayMessage(String::new()),
    }
}

fn main() {}
