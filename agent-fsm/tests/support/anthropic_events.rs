//! The pieces the Anthropic client tests build their streams and clients
//! from: a client of a replay server, a one-message request, one event as
//! Anthropic writes it.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use agent_fsm::llm::{Anthropic, AnthropicConfig, Message, Request};
use serde_json::Value;

use super::replay::ReplayServer;

/// A client of `server`.
pub(crate) fn client(server: &ReplayServer) -> Anthropic {
    AnthropicConfig::new("sk-ant-test").base_url(server.url()).build().expect("client")
}

/// A request of one user message.
pub(crate) fn request() -> Request {
    Request::new("claude-test").message(Message::user("hi"))
}

/// One event as Anthropic writes it: the `event:` line, then the data
/// whose `type` is the same name.
pub(crate) fn event(data: Value) -> String {
    let name = data["type"].as_str().expect("a type").to_owned();
    format!("event: {name}\ndata: {data}\n\n")
}
