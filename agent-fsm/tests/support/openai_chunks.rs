//! The pieces the OpenAI-compatible server tests build their streams and
//! clients from: a keyless client of a replay server, a one-message
//! request, a chunk of one choice, a text delta.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use agent_fsm::llm::{Message, OpenAi, OpenAiConfig, Request, StreamEvent};
use serde_json::{Value, json};

use super::replay::ReplayServer;

/// A client of `server`, without a key.
pub(crate) fn openai(server: &ReplayServer) -> OpenAi {
    OpenAiConfig::without_key().base_url(server.url()).build().expect("client")
}

/// A request of one user message.
pub(crate) fn request() -> Request {
    Request::new("m").message(Message::user("hi"))
}

/// One `data:` chunk whose only choice has `delta` and `finish_reason`.
pub(crate) fn chunk(delta: Value, finish_reason: Value) -> String {
    format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}))
}

/// A piece of the reply's text.
pub(crate) fn text(t: &str) -> StreamEvent {
    StreamEvent::TextDelta(t.to_owned())
}
