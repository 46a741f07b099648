//! What the Shadow table tests share: a machine with a recorder fed
//! event by event, and short constructors for the events, messages,
//! results, states and actions the tests compare.

// Each test file including this module uses a different part of it.
#![allow(dead_code)]

use agent_fsm::Recorder;
use agent_fsm::llm::{StopReason, Usage};
use agent_fsm_examples::shadow::{
    AssistantMessage, Message, Permission, Shadow, ShadowAction, ShadowContext, ShadowEvent, ShadowState, StreamEvent,
    ToolCall, ToolResult,
};
use serde_json::json;

/// A machine with a recorder, fed event by event.
pub(crate) struct Session {
    pub(crate) m: Shadow,
    pub(crate) rec: Recorder<Shadow>,
}

impl Session {
    pub(crate) fn new(ctx: ShadowContext) -> Self {
        Session { m: Shadow::new(ctx), rec: Recorder::default() }
    }

    pub(crate) fn at(state: ShadowState, ctx: ShadowContext) -> Self {
        Session { m: Shadow::with_state(state, ctx), rec: Recorder::default() }
    }

    pub(crate) fn send(&mut self, event: ShadowEvent) -> ShadowAction {
        let action = self.m.handle_event_with(event, &mut self.rec);
        assert_eq!(self.rec.unhandled, Vec::new(), "an event was refused");
        action
    }

    pub(crate) fn state(&self) -> &ShadowState {
        self.m.state()
    }

    pub(crate) fn ctx(&self) -> &ShadowContext {
        self.m.context()
    }
}

pub(crate) fn ctx() -> ShadowContext {
    ShadowContext::new("s1")
}

pub(crate) fn call(id: &str, name: &str) -> ToolCall {
    ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: json!({ "arg": id }) }
}

pub(crate) fn input(text: &str) -> ShadowEvent {
    ShadowEvent::UserInput(text.to_owned())
}

pub(crate) fn completed(message: AssistantMessage) -> ShadowEvent {
    let stop_reason = if message.tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
    ShadowEvent::LlmEvent(StreamEvent::Completed { message, stop_reason, usage: Usage::new(3, 2) })
}

pub(crate) fn text_reply(text: &str) -> ShadowEvent {
    completed(AssistantMessage { text: text.to_owned(), tool_calls: Vec::new(), ..Default::default() })
}

pub(crate) fn tools_reply(calls: &[ToolCall]) -> ShadowEvent {
    completed(AssistantMessage { text: String::new(), tool_calls: calls.to_vec(), ..Default::default() })
}

pub(crate) fn text_delta(text: &str) -> ShadowEvent {
    ShadowEvent::LlmEvent(StreamEvent::TextDelta(text.to_owned()))
}

pub(crate) fn tool_ok(id: &str, output: &str) -> ShadowEvent {
    ShadowEvent::ToolResult { tool_use_id: id.to_owned(), result: Ok(output.to_owned()) }
}

pub(crate) fn tool_err(id: &str, error: &str) -> ShadowEvent {
    ShadowEvent::ToolResult { tool_use_id: id.to_owned(), result: Err(error.to_owned()) }
}

pub(crate) fn permission(request_id: &str, allowed: bool, remember: bool) -> ShadowEvent {
    ShadowEvent::PermissionReply { request_id: request_id.to_owned(), allowed, remember }
}

pub(crate) fn ok(id: &str, content: &str) -> ToolResult {
    ToolResult { call_id: id.to_owned(), content: content.to_owned(), is_error: false }
}

pub(crate) fn err(id: &str, content: &str) -> ToolResult {
    ToolResult { call_id: id.to_owned(), content: content.to_owned(), is_error: true }
}

/// A tool round's results as the conversation holds them: one tool
/// message per call, in call order.
pub(crate) fn results(results: Vec<ToolResult>) -> Vec<Message> {
    results.into_iter().map(Message::Tool).collect()
}

/// A model call adding a tool round's results.
pub(crate) fn call_with(r: Vec<ToolResult>) -> ShadowAction {
    ShadowAction::CallLlm(results(r))
}

pub(crate) fn user(text: &str) -> Message {
    Message::user(text)
}

/// A model call adding the user's `text`.
pub(crate) fn call_user(text: &str) -> ShadowAction {
    ShadowAction::CallLlm(vec![user(text)])
}

pub(crate) fn executing(id: &str, name: &str) -> ShadowState {
    ShadowState::ExecutingTool { tool_name: name.to_owned(), tool_use_id: id.to_owned() }
}

pub(crate) fn waiting_permission(c: &ToolCall, request_id: &str) -> ShadowState {
    ShadowState::WaitingForPermission {
        tool_name: c.name.clone(),
        tool_use_id: c.id.clone(),
        input: c.arguments.clone(),
        request_id: request_id.to_owned(),
    }
}

/// The id of permission request number `n`, about `c`.
pub(crate) fn pid(n: u64, c: &ToolCall) -> String {
    agent_fsm_examples::shadow::request_id(agent_fsm_examples::shadow::PERMISSION, n, c)
}

/// The id of question number `n`, about `c`.
pub(crate) fn qid(n: u64, c: &ToolCall) -> String {
    agent_fsm_examples::shadow::request_id(agent_fsm_examples::shadow::QUESTION, n, c)
}

pub(crate) fn request_permission(c: &ToolCall, request_id: &str) -> ShadowAction {
    ShadowAction::RequestPermission { request_id: request_id.to_owned(), call: c.clone() }
}

/// A session that is running `calls[0]` of a reply (every tool allowed).
pub(crate) fn running(calls: &[ToolCall]) -> Session {
    let mut ctx = ctx();
    ctx.default_permission = Permission::Allow;
    let mut s = Session::new(ctx);
    s.send(input("go"));
    s.send(tools_reply(calls));
    s
}
