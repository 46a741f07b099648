// Rule: every state must stay reachable. Removing Loom's only row into
// `PostToolsHook` without `remove state PostToolsHook` cuts it off.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        remove ExecutingTools { mut executions } + ToolCompleted { call_id, outcome }
            [let Some(at) = executions.pending_at(call_id) && executions.mutates_at(at, outcome, &ctx.mutating_tools)],
    }
}

fn main() {}
