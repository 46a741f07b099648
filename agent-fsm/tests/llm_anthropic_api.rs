//! The Anthropic client against loopback servers that answer as
//! Anthropic's API does where it is strict: what the client sends must be
//! a request the API accepts, and what the API answers (its error bodies,
//! its newer stop reasons) must reach the machine as what it means.
#![cfg(all(feature = "anthropic", feature = "runtime"))]

#[path = "support/caller.rs"]
mod caller;
#[path = "support/replay.rs"]
mod replay;

use agent_fsm::llm::{Anthropic, AnthropicConfig, AssistantMessage, Message, Request, StreamEvent, ToolCall};
use caller::{kinds, run};
use replay::{ReplayServer, Reply};
use serde_json::{Value, json};

fn client(server: &ReplayServer) -> Anthropic {
    AnthropicConfig::new("sk-ant-test").base_url(server.url()).build().expect("client")
}

fn request() -> Request {
    Request::new("claude-test").message(Message::user("hi"))
}

/// One event as Anthropic writes it: the `event:` line, then the data
/// whose `type` is the same name.
fn event(data: Value) -> String {
    let name = data["type"].as_str().expect("a type").to_owned();
    format!("event: {name}\ndata: {data}\n\n")
}

/// A short text reply that stops for `stop_reason`.
fn reply(stop_reason: &str) -> String {
    [
        event(json!({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 1}}})),
        event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
        event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}})),
        event(json!({"type": "content_block_stop", "index": 0})),
        event(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 2}})),
        event(json!({"type": "message_stop"})),
    ]
    .concat()
}

#[tokio::test]
async fn an_error_result_with_no_text_is_sent_with_some() {
    // The API refuses an error `tool_result` whose content is empty
    // ("content cannot be empty if `is_error` is true"); sent as it is, the
    // refused result would fail every later request of the conversation.
    let server = ReplayServer::start(vec![Reply::events(&reply("end_turn"))]).await;
    let call = |id: &str| ToolCall { id: id.into(), name: "run".into(), arguments: json!({}) };
    let request = request()
        .message(AssistantMessage {
            tool_calls: vec![call("toolu_1"), call("toolu_2"), call("toolu_3")],
            ..Default::default()
        })
        .message(Message::tool_error("toolu_1", ""))
        .message(Message::tool_error("toolu_2", " \n"))
        .message(Message::tool_result("toolu_3", ""));
    let log = kinds(run(client(&server), request, 1).await);
    assert!(matches!(log.last(), Some(Ok(StreamEvent::Completed { .. }))), "{log:?}");

    let sent = server.requests()[0].json();
    let results = sent["messages"][2]["content"].as_array().expect("the results").clone();
    assert_eq!(results.len(), 3, "{results:?}");
    for (result, id) in results[..2].iter().zip(["toolu_1", "toolu_2"]) {
        assert_eq!((result["tool_use_id"].as_str(), &result["is_error"]), (Some(id), &json!(true)), "{result}");
        let content = result["content"].as_str().expect("text content");
        assert!(!content.trim().is_empty(), "an error result is sent with text: {result}");
    }
    // A result that is no error may be empty: it goes as it is.
    assert_eq!(results[2], json!({"type": "tool_result", "tool_use_id": "toolu_3", "content": ""}));
}
