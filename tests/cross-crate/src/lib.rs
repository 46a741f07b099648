//! Loom without its post-tool hook, declared in a different crate than
//! Loom itself: the base is named by the path its crate exports
//! (`agent_fsm_examples::loom_machine`), and the variant removes the hook
//! state and the row that led into it.
//!
//! This crate depends on agent-fsm under another name (`fsm`), so every
//! machine here says how to reach it: `crate = ::fsm`.

pub mod renamed;

pub use machine::{AgentAction, AgentEvent, AgentState, LoomWithoutHook};

/// Loom's table minus `PostToolsHook`: a round of tools always goes
/// straight back to the model.
#[fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = LoomWithoutHook, crate = ::fsm)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        remove ExecutingTools { mut executions } + ToolCompleted { call_id, outcome }
            [let Some(at) = executions.pending_at(call_id) && executions.mutates_at(at, outcome, &ctx.mutating_tools)],
        remove state PostToolsHook,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_fsm_examples::loom::{
        AgentConfig, ConversationContext, Executions, Loom, Message, ToolCall, ToolExecutionOutcome,
    };

    fn round() -> (Vec<ToolCall>, ConversationContext) {
        let calls = vec![ToolCall { id: "1".into(), name: "edit_file".into(), arguments: serde_json::Value::Null }];
        (calls, ConversationContext::from_messages(vec![Message::user("fix")]))
    }

    #[test]
    fn a_mutating_round_goes_straight_back_to_the_model() {
        let (calls, conversation) = round();
        let mut m = LoomWithoutHook::with_state(
            AgentState::ExecutingTools { executions: Executions::pending(&calls), conversation },
            AgentConfig::default(),
        );
        let outcome = ToolExecutionOutcome::Success { call_id: "1".into(), output: "ok".into() };
        let action = m.handle_event(AgentEvent::ToolCompleted { call_id: "1".into(), outcome });
        assert!(matches!(action, AgentAction::SendLlmRequest(_)), "{action:?}");
        assert!(m.state().is_calling_llm());
    }

    #[test]
    fn the_hook_state_is_gone() {
        assert!(LoomWithoutHook::DESCRIPTION.state("PostToolsHook").is_none());
        assert!(!LoomWithoutHook::DESCRIPTION.mermaid.contains("PostToolsHook"));
        assert!(Loom::DESCRIPTION.state("PostToolsHook").is_some());
    }
}
