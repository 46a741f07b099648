// Rule: every state must stay reachable. Replacing Loom's only row into
// `PostToolsHook` with one that goes elsewhere cuts it off.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        replace ExecutingTools { mut executions } + ToolCompleted { call_id, outcome }
            [let Some(at) = executions.pending_at(call_id) && executions.mutates_at(at, outcome, &ctx.mutating_tools)]
            => { executions.complete_at(at, outcome); executions.record_results(&mut conversation); }
               CallingLlm { retries: 0 } / SendLlmRequest(ctx.request(&conversation, 0)),
    }
}

fn main() {}
