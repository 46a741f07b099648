// Rule: every state must stay reachable. The first removal is harmless; the
// second drops Loom's only row into `PostToolsHook` without
// `remove state PostToolsHook`.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        remove CallingLlm + LlmEvent(StreamEvent::ToolCallDelta { .. }),
        remove ExecutingTools { mut executions } + ToolCompleted { call_id, outcome }
            [let Some(at) = executions.pending_at(call_id) && executions.mutates_at(at, outcome, &ctx.mutating_tools)],
    }
}

fn main() {}
