//! What the Sketch table tests share: one event from a given state with
//! every hop the observer saw, an edge check, and short constructors for
//! the calls, budgets, contexts, replies and messages the tests compare.

// Each test file including this module uses a different part of it.
#![allow(dead_code)]

use agent_fsm::llm::{ErrorKind, ProviderError};
use agent_fsm::{HopNames, Recorder};
use agent_fsm_examples::sketch::{
    AssistantMessage, Budget, LlmReply, Message, Sketch, SketchAction, SketchContext, SketchEvent, SketchState, Spend,
    ToolCall, ToolRound, Usage, round_note, tool_ok,
};
use serde_json::json;

/// One event from `state`: the machine after it, every hop, the action.
pub(crate) fn run(state: SketchState, ctx: SketchContext, event: SketchEvent) -> (Sketch, Vec<HopNames>, SketchAction) {
    let mut m = Sketch::with_state(state, ctx);
    let mut rec = Recorder::default();
    let action = m.handle_event_with(event, &mut rec);
    assert_eq!(rec.unhandled, Vec::new(), "the event was refused");
    (m, rec.hop_names(), action)
}

/// The edge `from -> to` is one of the hops, exactly once.
pub(crate) fn assert_edge(hops: &[HopNames], from: &str, to: &str) {
    let n = hops.iter().filter(|h| h.0 == from && h.2 == to).count();
    assert_eq!(n, 1, "edge {from} -> {to} taken {n} times in {hops:?}");
}

pub(crate) fn call(id: &str) -> ToolCall {
    ToolCall { id: id.to_owned(), name: "bash".to_owned(), arguments: json!({ "command": format!("echo {id}") }) }
}

/// `tokens` spent, a third of them written, at a cent per hundred.
pub(crate) fn spend(tokens: u64) -> Spend {
    Spend::new(Usage::new(tokens - tokens / 3, tokens / 3), tokens / 100)
}

pub(crate) fn budget() -> Budget {
    Budget { max_tokens: Some(10_000), max_cost_cents: Some(500) }
}

pub(crate) fn ctx() -> SketchContext {
    SketchContext::new(budget())
}

/// A context that has spent its whole token budget.
pub(crate) fn spent_ctx() -> SketchContext {
    SketchContext { spent: spend(10_000), ..ctx() }
}

pub(crate) fn text_reply(text: &str) -> SketchEvent {
    SketchEvent::LlmResponse(LlmReply::text(text, spend(100)))
}

pub(crate) fn tools_reply(ids: &[&str]) -> SketchEvent {
    SketchEvent::LlmResponse(LlmReply::tools(ids.iter().map(|id| call(id)).collect(), spend(100)))
}

pub(crate) fn assistant_tools(ids: &[&str]) -> Message {
    Message::Assistant(AssistantMessage {
        text: String::new(),
        tool_calls: ids.iter().map(|id| call(id)).collect(),
        ..Default::default()
    })
}

/// A round of `ids` where every call answered `ok <id>`.
pub(crate) fn answered(ids: &[&str]) -> ToolRound {
    let mut round = ToolRound::new(ids.iter().map(|id| call(id)).collect());
    for id in ids {
        round.record(tool_ok(*id, format!("ok {id}")));
    }
    round
}

/// A round's messages where every call of `ids` answered `ok <id>`: one
/// tool message each, then the note, if any.
pub(crate) fn results_message(ids: &[&str], notes: &[&str], user_messages: &[&str]) -> Vec<Message> {
    let mut messages: Vec<Message> = ids.iter().map(|id| Message::tool_result(*id, format!("ok {id}"))).collect();
    messages.extend(round_note(&strings(notes), &strings(user_messages)).map(Message::user));
    messages
}

pub(crate) fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// An LLM error while waiting in `from`: through `Error` back to waiting,
/// with the message shown.
pub(crate) fn assert_llm_error_path(from: SketchState, message: &str) {
    let name = from.name();
    let (m, hops, action) = run(from, ctx(), SketchEvent::LlmError(ProviderError::new(ErrorKind::Auth, message)));
    assert_edge(&hops, name, "Error");
    assert_eq!(
        hops,
        vec![(name, Some("LlmError"), "Error", None), ("Error", None, "WaitingForUserInput", Some("ShowError"))]
    );
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::ShowError(format!("LLM call failed: not authorized: {message}")));
}
