// Rule: `replace` stands in for a base row with the same source, event and
// guard; Loom has no `CallingLlm + UserInput` row to replace.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        replace CallingLlm + UserInput(msg)
            => { conversation.push(msg); } CallingLlm { retries: 0 } / SendLlmRequest(ctx.request(&conversation, 0)),
    }
}

fn main() {}
