// Rule: a `///` comment may document a `replace` row (it is in the table)
// but not a `remove`, whose row leaves the table.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        /// Streamed text is shown as it comes (documented, and accepted).
        replace CallingLlm + LlmEvent(StreamEvent::TextDelta(content)) => CallingLlm / DisplayMessage(content),
        /// Errors no longer end the turn.
        remove CallingLlm + LlmFailed(error),
    }
}

fn main() {}
