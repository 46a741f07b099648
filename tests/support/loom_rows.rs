//! What the Loom row tests share: the default configuration, short
//! conversations, and constructors for the calls, outcomes, events,
//! requests and states the tests compare, with a check of shutdown from a
//! given state.

// Each test file including this module uses a different part of it.
#![allow(dead_code)]

use std::sync::Arc;

use agent_fsm::Recorder;
use agent_fsm::llm::ErrorKind;
use agent_fsm_examples::loom::{
    AgentAction, AgentConfig, AgentError, AgentEvent, AgentState, AssistantMessage, ConversationContext, ErrorOrigin,
    Executions, LlmRequest, Loom, Message, ProviderError, ToolCall, ToolError, ToolExecutionOutcome, ToolProgress,
    ToolProgressEvent,
};
use serde_json::json;

pub(crate) fn cfg() -> AgentConfig {
    AgentConfig::default()
}

/// A short conversation that already has one exchange in it.
pub(crate) fn history() -> Vec<Message> {
    vec![Message::user("earlier question"), assistant("earlier answer", Vec::new())]
}

pub(crate) fn conv(messages: Vec<Message>) -> ConversationContext {
    ConversationContext::from_messages(messages)
}

pub(crate) fn with(mut messages: Vec<Message>, more: impl IntoIterator<Item = Message>) -> Vec<Message> {
    messages.extend(more);
    messages
}

pub(crate) fn call(id: &str, name: &str) -> ToolCall {
    ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: json!({ "path": format!("src/{id}.rs") }) }
}

pub(crate) fn success(id: &str, output: serde_json::Value) -> ToolExecutionOutcome {
    ToolExecutionOutcome::Success { call_id: id.to_owned(), output }
}

pub(crate) fn failure(id: &str, message: &str) -> ToolExecutionOutcome {
    ToolExecutionOutcome::Error { call_id: id.to_owned(), error: ToolError { message: message.to_owned() } }
}

pub(crate) fn completed(id: &str, outcome: ToolExecutionOutcome) -> AgentEvent {
    AgentEvent::ToolCompleted { call_id: id.to_owned(), outcome }
}

pub(crate) fn progress(id: &str, fraction: f32, message: &str) -> AgentEvent {
    AgentEvent::ToolProgress(ToolProgressEvent {
        call_id: id.to_owned(),
        progress: ToolProgress { fraction: Some(fraction), message: Some(message.to_owned()) },
    })
}

pub(crate) fn llm_error(message: &str) -> ProviderError {
    ProviderError::new(ErrorKind::ServerError { status: 503, retry_after: None }, message)
}

pub(crate) fn assistant(text: &str, tool_calls: Vec<ToolCall>) -> Message {
    Message::Assistant(AssistantMessage { text: text.to_owned(), tool_calls, ..Default::default() })
}

pub(crate) fn request(messages: Vec<Message>, attempt: u32) -> LlmRequest {
    LlmRequest { messages: Arc::new(messages), max_tokens: cfg().max_tokens, attempt }
}

pub(crate) fn calling(retries: u32, messages: Vec<Message>) -> AgentState {
    AgentState::CallingLlm { retries, conversation: conv(messages) }
}

pub(crate) fn executing(executions: Executions, messages: Vec<Message>) -> AgentState {
    AgentState::ExecutingTools { executions, conversation: conv(messages) }
}

pub(crate) fn llm_failed(retries: u32, origin: ErrorOrigin, message: &str) -> AgentState {
    AgentState::Error { error: AgentError::Llm(llm_error(message)), retries, origin, conversation: conv(history()) }
}

pub(crate) fn shutdown_from(state: AgentState) {
    let mut m = Loom::with_state(state, cfg());
    // A transient state resolves in `with_state`; shutdown leaves from there.
    let from = m.state().name();
    let mut rec = Recorder::default();
    let action = m.handle_event_with(AgentEvent::ShutdownRequested, &mut rec);
    assert_eq!(action, AgentAction::Shutdown);
    assert_eq!(m.state(), &AgentState::ShuttingDown);
    assert!(m.state().is_terminal());
    assert_eq!(m.state().conversation(), None);
    assert_eq!(rec.unhandled, Vec::new());
    assert_eq!(rec.hop_names(), vec![(from, Some("ShutdownRequested"), "ShuttingDown", Some("Shutdown"))]);
}
