//! The clients against servers on loopback whose streams break the
//! protocol: a tool call the stream never names ends the reply with a
//! `MalformedStream` error (never a call named `""`, which matches no tool
//! and which the providers refuse when it is sent back), while one named
//! by a later piece completes.
#![cfg(all(feature = "openai", feature = "anthropic", feature = "runtime"))]

#[path = "support/anthropic_events.rs"]
mod anthropic_events;
#[path = "support/caller.rs"]
mod caller;
#[path = "support/openai_chunks.rs"]
mod openai_chunks;
#[path = "support/replay.rs"]
mod replay;

use agent_fsm::llm::{ErrorKind, StopReason, StreamEvent, ToolCall};
use caller::{Item, run};
use openai_chunks::{chunk, openai, request};
use replay::{ReplayServer, Reply};
use serde_json::{Value, json};

/// A tool-call piece at `index`, with what it is given of `id` and `name`.
fn piece(index: usize, id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
    let mut function = json!({"arguments": arguments});
    if let Some(name) = name {
        function["name"] = json!(name);
    }
    let mut call = json!({"index": index, "type": "function", "function": function});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    json!({"tool_calls": [call]})
}

fn call_delta(index: usize, id: Option<&str>, name: Option<&str>, fragment: &str) -> StreamEvent {
    StreamEvent::ToolCallDelta {
        index,
        id: id.map(str::to_owned),
        name: name.map(str::to_owned),
        arguments_fragment: fragment.to_owned(),
    }
}

/// The error `log` ends with, which must be its only one, after no
/// completed reply.
fn the_error(log: &[Item]) -> &agent_fsm::llm::ProviderError {
    assert!(!log.iter().any(|item| matches!(item, Ok(StreamEvent::Completed { .. }))), "{log:?}");
    let errors: Vec<_> = log.iter().filter_map(|item| item.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{log:?}");
    errors[0]
}

#[tokio::test]
async fn a_call_at_a_new_index_the_stream_never_names_fails_the_reply() {
    // The second call's pieces carry neither id nor name, at an index no
    // call had: a call with no tool to run.
    let stream = [
        chunk(piece(0, Some("call_1"), Some("read"), "{}"), Value::Null),
        chunk(piece(1, None, None, r#"{"p":"#), Value::Null),
        chunk(piece(1, None, None, "1}"), Value::Null),
        chunk(json!({}), json!("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let log = run(openai(&server), request(), 1).await;
    assert_eq!(
        log[..3].iter().map(|item| item.clone().ok()).collect::<Vec<_>>(),
        [
            Some(call_delta(0, Some("call_1"), Some("read"), "{}")),
            Some(call_delta(1, None, None, r#"{"p":"#)),
            Some(call_delta(1, None, None, "1}")),
        ]
    );
    let error = the_error(&log);
    assert_eq!(error.kind(), &ErrorKind::MalformedStream);
    assert_eq!(error.message(), "the reply's tool call 1 (at index 1) was never given a name");
    // The same reply with no `[DONE]`, completed by its finish reason.
    let cut = stream.replace("data: [DONE]\n\n", "");
    let server = ReplayServer::start(vec![Reply::events(&cut)]).await;
    assert_eq!(the_error(&run(openai(&server), request(), 1).await).kind(), &ErrorKind::MalformedStream);
}

#[tokio::test]
async fn a_call_named_by_a_later_piece_completes() {
    // A server that sends a call's id first and its name after.
    let stream = [
        chunk(piece(0, Some("call_1"), None, ""), Value::Null),
        chunk(piece(0, None, Some("read"), r#"{"p":1}"#), Value::Null),
        chunk(json!({}), json!("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let log = run(openai(&server), request(), 1).await;
    let Some(Ok(StreamEvent::Completed { message, stop_reason, .. })) = log.last() else { panic!("{log:?}") };
    assert_eq!(*stop_reason, StopReason::ToolUse);
    assert_eq!(message.tool_calls, [ToolCall { id: "call_1".into(), name: "read".into(), arguments: json!({"p": 1}) }]);
}

#[tokio::test]
async fn an_anthropic_tool_use_block_without_a_name_fails_the_reply() {
    use anthropic_events::{client, event, request};
    let stream = [
        event(json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "content": [], "model": "claude-test", "stop_reason": null, "usage": {"input_tokens": 5, "output_tokens": 1}}})),
        event(json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "input": {}}})),
        event(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{}"}})),
        event(json!({"type": "content_block_stop", "index": 0})),
        event(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}})),
        event(json!({"type": "message_stop"})),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let log = run(client(&server), request(), 1).await;
    let error = the_error(&log);
    assert_eq!(error.kind(), &ErrorKind::MalformedStream);
    assert_eq!(error.message(), "the reply's tool call 0 (at index 0) was never given a name");
}
