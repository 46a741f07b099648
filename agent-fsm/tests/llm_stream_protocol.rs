//! The clients against servers on loopback whose streams break the
//! protocol or fail mid-reply: a tool call the stream never names ends
//! the reply with a `MalformedStream` error (never a call named `""`,
//! which matches no tool and which the providers refuse when it is sent
//! back), while one named by a later piece completes; and an error inside
//! the stream is classified by its `code` when the client knows it, else
//! by its `type`, and one that names no kind the client knows is not
//! retried.
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
use caller::{Item, kinds, run};
use openai_chunks::{chunk, openai, request, text};
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

/// A reply that errs mid-stream with `error`, then a good one; called with
/// up to 3 attempts: what the machine saw, and how many requests it made.
async fn openai_error(error: Value) -> (Vec<Result<StreamEvent, ErrorKind>>, usize) {
    let failing = chunk(json!({"content": "a"}), Value::Null) + &format!("data: {}\n\n", json!({"error": error}));
    let good = [chunk(json!({"content": "ok"}), json!("stop")), "data: [DONE]\n\n".to_owned()].concat();
    let server = ReplayServer::start(vec![Reply::events(&failing), Reply::events(&good)]).await;
    let log = kinds(run(openai(&server), request(), 3).await);
    (log, server.requests().len())
}

#[tokio::test]
async fn an_unknown_code_mid_stream_is_classified_by_its_type() {
    // OpenAI's `type` is the broad kind, `code` a precise one that may be
    // any string: one the client does not know says nothing of the kind.
    let error = json!({"message": "Invalid value for 'tools'", "type": "invalid_request_error",
        "param": "tools", "code": "invalid_value"});
    let (log, requests) = openai_error(error).await;
    assert_eq!(log, [Ok(text("a")), Err(ErrorKind::BadRequest)]);
    assert_eq!(requests, 1, "a refused request is not sent again");

    let error = json!({"message": "The server had an error", "type": "server_error", "code": "some_new_code"});
    let (log, requests) = openai_error(error).await;
    assert_eq!(log[..2], [Ok(text("a")), Err(ErrorKind::ServerError { status: 500, retry_after: None })]);
    assert_eq!(requests, 2, "a server error is retried");

    // A known code still wins over the type.
    let error = json!({"message": "Incorrect API key", "type": "invalid_request_error", "code": "invalid_api_key"});
    assert_eq!(openai_error(error).await, (vec![Ok(text("a")), Err(ErrorKind::Auth)], 1));
}

#[tokio::test]
async fn an_error_of_no_known_kind_mid_stream_is_not_retried() {
    for error in [
        json!({"message": "?", "type": "mystery_error", "code": "something_new"}),
        json!({"message": "?", "code": "something_new"}),
        json!({"message": "no kind at all"}),
    ] {
        let (log, requests) = openai_error(error.clone()).await;
        assert_eq!(log, [Ok(text("a")), Err(ErrorKind::Unrecognized)], "{error}");
        assert_eq!(requests, 1, "{error}");
    }
    // Anthropic's documented `api_error` is retried; a type it does not
    // document is not.
    use anthropic_events::{client, event, request};
    for (kind, expected, requests) in [
        ("api_error", ErrorKind::ServerError { status: 500, retry_after: None }, 2),
        ("brand_new_error", ErrorKind::Unrecognized, 1),
    ] {
        let failing = event(json!({"type": "error", "error": {"type": kind, "message": "?"}}));
        let server = ReplayServer::start(vec![Reply::events(&failing), Reply::events(&failing)]).await;
        let log = kinds(run(client(&server), request(), 2).await);
        assert_eq!(log[0], Err(expected), "{kind}");
        assert_eq!(server.requests().len(), requests, "{kind}");
    }
}
