//! The Anthropic client against a replay server on loopback: the real
//! reqwest client, recorded-format Messages streams, and a machine under
//! the executor whose received events are asserted exactly.
#![cfg(all(feature = "anthropic", feature = "runtime"))]

#[path = "support/anthropic_events.rs"]
mod anthropic_events;
#[path = "support/caller.rs"]
mod caller;
#[path = "support/replay.rs"]
mod replay;

use std::time::Duration;

use agent_fsm::llm::{
    AnthropicConfig, AssistantMessage, ErrorKind, Message, ReasoningBlock, Request, StopReason, StreamEvent, ToolCall,
    ToolDefinition, Usage,
};
use anthropic_events::{client, event, request};
use caller::{kinds, run};
use replay::{ReplayServer, Reply};
use serde_json::json;

fn message_start(input_tokens: u64, cache_read: u64) -> String {
    event(json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test",
        "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": cache_read, "output_tokens": 1},
    }}))
}

fn text_start(index: usize) -> String {
    event(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
}

fn text_delta(index: usize, text: &str) -> String {
    event(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}))
}

fn tool_start(index: usize, id: &str, name: &str) -> String {
    event(
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
    )
}

fn json_delta(index: usize, partial: &str) -> String {
    event(
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": partial}}),
    )
}

fn block_stop(index: usize) -> String {
    event(json!({"type": "content_block_stop", "index": index}))
}

fn message_delta(stop_reason: &str, output_tokens: u64) -> String {
    event(
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
    )
}

fn ping() -> String {
    event(json!({"type": "ping"}))
}

fn message_stop() -> String {
    event(json!({"type": "message_stop"}))
}

fn text(t: &str) -> StreamEvent {
    StreamEvent::TextDelta(t.to_owned())
}

fn call_delta(index: usize, id: Option<&str>, name: Option<&str>, fragment: &str) -> StreamEvent {
    StreamEvent::ToolCallDelta {
        index,
        id: id.map(str::to_owned),
        name: name.map(str::to_owned),
        arguments_fragment: fragment.to_owned(),
    }
}

fn completed(text: &str, tool_calls: Vec<ToolCall>, stop_reason: StopReason, usage: Usage) -> StreamEvent {
    StreamEvent::Completed {
        message: AssistantMessage { text: text.to_owned(), tool_calls, ..Default::default() },
        stop_reason,
        usage,
    }
}

fn hello_stream() -> String {
    [
        message_start(10, 0),
        text_start(0),
        ping(),
        text_delta(0, "Hello"),
        text_delta(0, ", wörld"),
        block_stop(0),
        message_delta("end_turn", 6),
        message_stop(),
    ]
    .concat()
}

fn hello_events() -> Vec<Result<StreamEvent, ErrorKind>> {
    vec![
        Ok(text("Hello")),
        Ok(text(", wörld")),
        Ok(completed("Hello, wörld", vec![], StopReason::EndTurn, Usage::new(10, 6))),
    ]
}

#[tokio::test]
async fn text_only_and_what_is_sent() {
    let server = ReplayServer::start(vec![Reply::events(&hello_stream()).in_pieces_of(7)]).await;
    let request = request()
        .system("Be brief.")
        .tool(ToolDefinition::new("read", "Reads a file", json!({"type": "object"})))
        .temperature(0.5);
    assert_eq!(kinds(run(client(&server), request, 1).await), hello_events());

    let sent = &server.requests()[0];
    assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", "/v1/messages"));
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.json(),
        json!({
            "model": "claude-test",
            "max_tokens": 4096,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "tools": [{"name": "read", "description": "Reads a file", "input_schema": {"type": "object"}}],
            "temperature": 0.5,
            "stream": true,
        })
    );
}

#[tokio::test]
async fn a_tool_round_is_sent_back_as_anthropic_reads_it() {
    let server = ReplayServer::start(vec![Reply::events(&hello_stream())]).await;
    let config = AnthropicConfig::new("k").base_url(server.url()).version("2099-01-01").header("anthropic-beta", "x");
    let request = request()
        .message(Message::system("Use tools."))
        .message(AssistantMessage {
            text: "Reading both.".into(),
            tool_calls: vec![
                ToolCall { id: "toolu_1".into(), name: "read".into(), arguments: json!({"path": "a"}) },
                ToolCall { id: "toolu_2".into(), name: "read".into(), arguments: json!({"path": "b"}) },
            ],
            ..Default::default()
        })
        .message(Message::tool_result("toolu_1", "A"))
        .message(Message::tool_error("toolu_2", "no such file"))
        .message(Message::user("and then?"))
        .max_tokens(64);
    run(config.build().expect("client"), request, 1).await;
    let sent = &server.requests()[0];
    assert_eq!((sent.header("anthropic-version"), sent.header("anthropic-beta")), (Some("2099-01-01"), Some("x")));
    assert_eq!(
        sent.json(),
        json!({
            "model": "claude-test",
            "max_tokens": 64,
            "system": "Use tools.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading both."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b"}},
                ]},
                // Every result, and the user's text after them, in one message.
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "A"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file", "is_error": true},
                    {"type": "text", "text": "and then?"},
                ]},
            ],
            "stream": true,
        })
    );
}

#[tokio::test]
async fn one_tool_call_in_many_fragments() {
    let fragments = ["", "{\"pa", "th\":\"a \\", "\"b\\", "\".rs\",", "\"n\"", ":4}"];
    let mut stream = message_start(5, 0) + &tool_start(0, "toolu_A", "read");
    for fragment in fragments {
        stream += &json_delta(0, fragment);
    }
    stream += &(block_stop(0) + &message_delta("tool_use", 9) + &message_stop());
    let server = ReplayServer::start(vec![Reply::events(&stream).in_pieces_of(5)]).await;

    let mut expected: Vec<Result<StreamEvent, ErrorKind>> = vec![Ok(call_delta(0, Some("toolu_A"), Some("read"), ""))];
    expected.extend(fragments.iter().map(|f| Ok(call_delta(0, None, None, f))));
    let call = ToolCall { id: "toolu_A".into(), name: "read".into(), arguments: json!({"path": "a \"b\".rs", "n": 4}) };
    expected.push(Ok(completed("", vec![call], StopReason::ToolUse, Usage::new(5, 9))));
    assert_eq!(kinds(run(client(&server), request(), 1).await), expected);
}

#[tokio::test]
async fn three_parallel_tool_calls_interleaved() {
    // Anthropic sends blocks one after another; these interleave to show
    // that pieces are assembled by block index, not by arrival order. The
    // calls are numbered 0, 1, 2 after the text block 0.
    let stream = [
        message_start(20, 0),
        text_start(0),
        text_delta(0, "Three at once."),
        block_stop(0),
        tool_start(1, "toolu_0", "read"),
        tool_start(2, "toolu_1", "list"),
        json_delta(2, "{\"dir\":"),
        json_delta(1, "{\"path\":\"x\"}"),
        tool_start(3, "toolu_2", "shell"),
        json_delta(3, "{\"cmd\":\"ls\"}"),
        json_delta(2, "\".\"}"),
        block_stop(1),
        block_stop(2),
        block_stop(3),
        message_delta("tool_use", 40),
        message_stop(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let calls = vec![
        ToolCall { id: "toolu_0".into(), name: "read".into(), arguments: json!({"path": "x"}) },
        ToolCall { id: "toolu_1".into(), name: "list".into(), arguments: json!({"dir": "."}) },
        ToolCall { id: "toolu_2".into(), name: "shell".into(), arguments: json!({"cmd": "ls"}) },
    ];
    let expected = vec![
        Ok(text("Three at once.")),
        Ok(call_delta(0, Some("toolu_0"), Some("read"), "")),
        Ok(call_delta(1, Some("toolu_1"), Some("list"), "")),
        Ok(call_delta(1, None, None, "{\"dir\":")),
        Ok(call_delta(0, None, None, "{\"path\":\"x\"}")),
        Ok(call_delta(2, Some("toolu_2"), Some("shell"), "")),
        Ok(call_delta(2, None, None, "{\"cmd\":\"ls\"}")),
        Ok(call_delta(1, None, None, "\".\"}")),
        Ok(completed("Three at once.", calls, StopReason::ToolUse, Usage::new(20, 40))),
    ];
    assert_eq!(kinds(run(client(&server), request(), 1).await), expected);
}

#[tokio::test]
async fn a_tool_call_with_no_input_gets_an_empty_object() {
    let stream = message_start(1, 0)
        + &tool_start(0, "toolu_X", "now")
        + &block_stop(0)
        + &message_delta("tool_use", 2)
        + &message_stop();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let call = ToolCall { id: "toolu_X".into(), name: "now".into(), arguments: json!({}) };
    let expected = vec![
        Ok(call_delta(0, Some("toolu_X"), Some("now"), "")),
        Ok(completed("", vec![call], StopReason::ToolUse, Usage::new(1, 2))),
    ];
    assert_eq!(kinds(run(client(&server), request(), 1).await), expected);
}

#[tokio::test]
async fn usage_and_stop_reason() {
    // Cached input counts as input; output is the last cumulative count;
    // a thinking block streams apart from the text and is kept whole.
    let stream = [
        message_start(25, 5),
        event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})),
        event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}})),
        event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}})),
        block_stop(0),
        text_start(1),
        text_delta(1, "cut"),
        block_stop(1),
        message_delta("max_tokens", 3),
        message_delta("max_tokens", 17),
        message_stop(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let mut usage = Usage::new(30, 17);
    usage.cache_read_tokens = 5;
    let message = AssistantMessage {
        text: "cut".into(),
        reasoning: vec![ReasoningBlock::Thinking { thinking: "hmm".into(), signature: "sig".into() }].into(),
        ..Default::default()
    };
    let expected = vec![
        Ok(StreamEvent::ReasoningDelta("hmm".into())),
        Ok(text("cut")),
        Ok(StreamEvent::Completed { message, stop_reason: StopReason::MaxTokens, usage }),
    ];
    assert_eq!(kinds(run(client(&server), request(), 1).await), expected);
}

#[tokio::test]
async fn message_stop_ends_the_reply_whatever_follows() {
    let stream = hello_stream() + "event: content_block_delta\ndata: {broken\n\n";
    let server = ReplayServer::start(vec![Reply::events(&stream).dropped_after(9)]).await;
    assert_eq!(kinds(run(client(&server), request(), 1).await), hello_events());
}

#[tokio::test(start_paused = true)]
async fn the_stream_ends_at_message_stop_though_the_server_keeps_the_connection_open() {
    let pieces = match Reply::events(&hello_stream()) {
        Reply::Events { pieces, .. } => pieces.len(),
        Reply::Status { .. } => unreachable!(),
    };
    let server = ReplayServer::start(vec![Reply::events(&hello_stream()).stalled_after(pieces)]).await;
    let start = tokio::time::Instant::now();
    assert_eq!(kinds(run(client(&server), request(), 1).await), hello_events());
    // Not after the read timeout: nothing more was read.
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test]
async fn a_connection_dropped_mid_stream_is_retried() {
    // Cut after the first text delta: no `message_stop`.
    let cut = Reply::events(&hello_stream()).dropped_after(4);
    let server = ReplayServer::start(vec![cut, Reply::events(&hello_stream())]).await;
    let mut expected = vec![Ok(text("Hello")), Err(ErrorKind::ConnectionDropped)];
    expected.extend(hello_events());
    assert_eq!(kinds(run(client(&server), request(), 2).await), expected);
}

#[tokio::test]
async fn a_malformed_frame_fails_the_stream() {
    let stream = message_start(1, 0)
        + &text_start(0)
        + &text_delta(0, "ok")
        + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\n\n";
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let log = run(client(&server), request(), 1).await;
    assert_eq!(kinds(log.clone()), vec![Ok(text("ok")), Err(ErrorKind::MalformedStream)]);
    let error = log[1].as_ref().unwrap_err();
    assert!(error.message().starts_with("a `content_block_delta` event is not the JSON expected"), "{error}");
}

#[tokio::test]
async fn a_json_delta_for_a_text_block_is_malformed() {
    let stream = message_start(1, 0) + &text_start(0) + &json_delta(0, "{}");
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    assert_eq!(kinds(run(client(&server), request(), 1).await), vec![Err(ErrorKind::MalformedStream)]);
}

#[tokio::test]
async fn an_overloaded_error_event_mid_stream_is_retried() {
    let overloaded = message_start(1, 0)
        + &text_start(0)
        + &text_delta(0, "Hi")
        + &event(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    let server = ReplayServer::start(vec![Reply::events(&overloaded), Reply::events(&hello_stream())]).await;
    let log = run(client(&server), request(), 2).await;
    let mut expected = vec![Ok(text("Hi")), Err(ErrorKind::Overloaded { retry_after: None })];
    expected.extend(hello_events());
    assert_eq!(kinds(log.clone()), expected);
    assert_eq!(log[1].as_ref().unwrap_err().to_string(), "server overloaded: Overloaded");
}

#[tokio::test(start_paused = true)]
async fn http_529_and_500_are_retried_after_the_policy_backoff() {
    let overloaded =
        Reply::status(529, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
    let failed =
        Reply::status(500, r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#);
    let server = ReplayServer::start(vec![overloaded, failed, Reply::events(&hello_stream())]).await;
    let log = run(client(&server), request(), 3).await;
    let mut expected = vec![
        Err(ErrorKind::Overloaded { retry_after: None }),
        Err(ErrorKind::ServerError { status: 500, retry_after: None }),
    ];
    expected.extend(hello_events());
    assert_eq!(kinds(log.clone()), expected);
    assert_eq!(log[1].as_ref().unwrap_err().message(), "Internal server error");
    let at: Vec<_> = server.requests().iter().map(|r| r.at).collect();
    // 200 ms, then 400 ms: the policy's own backoff.
    assert_eq!((at[1] - at[0], at[2] - at[1]), (Duration::from_millis(200), Duration::from_millis(400)));
}

#[tokio::test(start_paused = true)]
async fn http_429_waits_exactly_retry_after() {
    let limited = Reply::status(429, r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}"#)
        .header("retry-after", "3");
    let server = ReplayServer::start(vec![limited, Reply::events(&hello_stream())]).await;
    let mut expected = vec![Err(ErrorKind::RateLimited { retry_after: Some(Duration::from_secs(3)) })];
    expected.extend(hello_events());
    assert_eq!(kinds(run(client(&server), request(), 3).await), expected);
    let requests = server.requests();
    assert_eq!(requests[1].at - requests[0].at, Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn retry_after_ms_comes_before_retry_after() {
    let limited = Reply::status(429, r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#)
        .header("retry-after-ms", "1250")
        .header("retry-after", "2");
    let server = ReplayServer::start(vec![limited, Reply::events(&hello_stream())]).await;
    run(client(&server), request(), 3).await;
    let requests = server.requests();
    assert_eq!(requests[1].at - requests[0].at, Duration::from_millis(1250));
}

#[tokio::test]
async fn http_401_is_not_retried() {
    let denied =
        Reply::status(401, r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#);
    let server = ReplayServer::start(vec![denied, Reply::events(&hello_stream())]).await;
    let log = run(client(&server), request(), 3).await;
    assert_eq!(kinds(log.clone()), vec![Err(ErrorKind::Auth)]);
    assert_eq!(log[0].as_ref().unwrap_err().to_string(), "not authorized: invalid x-api-key");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_prompt_too_long_is_not_retried() {
    let refused = Reply::status(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
    );
    let server = ReplayServer::start(vec![refused]).await;
    assert_eq!(kinds(run(client(&server), request(), 3).await), vec![Err(ErrorKind::ContextTooLong)]);
}

#[test]
fn the_parser_alone_completes_at_the_end_only_after_a_stop_reason() {
    use agent_fsm::llm::anthropic::StreamParser;
    use std::collections::VecDeque;

    let mut parser = StreamParser::new();
    let mut out = VecDeque::new();
    parser.feed(
        (message_start(1, 0) + &text_start(0) + &text_delta(0, "a") + &message_delta("end_turn", 2)).as_bytes(),
        &mut out,
    );
    assert!(!parser.is_done());
    parser.finish(&mut out);
    assert!(parser.is_done());
    let expected = vec![Ok(text("a")), Ok(completed("a", vec![], StopReason::EndTurn, Usage::new(1, 2)))];
    assert_eq!(kinds(out.into_iter().collect()), expected);

    let mut parser = StreamParser::new();
    let mut out = VecDeque::new();
    parser.feed((text_start(0) + &text_delta(0, "a")).as_bytes(), &mut out);
    parser.finish(&mut out);
    assert_eq!(kinds(out.into_iter().collect()), vec![Ok(text("a")), Err(ErrorKind::ConnectionDropped)]);
    let mut out = VecDeque::new();
    parser.feed(hello_stream().as_bytes(), &mut out);
    assert!(out.is_empty());
}

#[test]
fn text_given_with_a_block_start_is_delivered() {
    use agent_fsm::llm::anthropic::StreamParser;
    use std::collections::VecDeque;

    let start =
        event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hi"}}));
    let mut parser = StreamParser::new();
    let mut out = VecDeque::new();
    parser.feed((start + &text_delta(0, "!") + &message_stop()).as_bytes(), &mut out);
    let expected =
        vec![Ok(text("Hi")), Ok(text("!")), Ok(completed("Hi!", vec![], StopReason::EndTurn, Usage::default()))];
    assert_eq!(kinds(out.into_iter().collect()), expected);
}

#[test]
fn the_default_url() {
    assert_eq!(AnthropicConfig::new("k").build().expect("client").url(), "https://api.anthropic.com/v1/messages");
}

#[test]
fn a_whitespace_text_block_and_arguments_that_are_not_an_object_are_not_sent_as_the_api_refuses_them() {
    let client = AnthropicConfig::new("sk-ant-test").build().expect("client");
    let cut_off = ToolCall { id: "toolu_1".into(), name: "read".into(), arguments: json!("{\"path\": ") };
    let listed = ToolCall { id: "toolu_2".into(), name: "read".into(), arguments: json!(["greeting.sh"]) };
    let request = Request::new("claude-test")
        .message(Message::user("fix it"))
        .message(AssistantMessage { text: "\n\n".into(), tool_calls: vec![cut_off, listed], ..Default::default() })
        .message(Message::tool_error("toolu_1", "not valid JSON"))
        .message(Message::tool_error("toolu_2", "not an object"))
        .message(Message::assistant(" \t\n"))
        .message(Message::user("again"));
    let body = client.body(&request);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}},
                {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "not valid JSON", "is_error": true},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "not an object", "is_error": true},
                {"type": "text", "text": "again"},
            ]},
        ])
    );
}

#[test]
fn a_base_url_that_is_no_http_url_is_a_configuration_error() {
    for url in ["localhost:8080", "ftp://127.0.0.1", "127.0.0.1:8080", "http://"] {
        let error = AnthropicConfig::new("k").base_url(url).build().expect_err(url);
        assert_eq!(error.kind(), &ErrorKind::InvalidConfig, "{url}");
        assert!(error.to_string().contains(&format!("the base URL `{url}`")), "{url}: {error}");
    }
    assert!(AnthropicConfig::new("k").base_url("http://127.0.0.1:9").build().is_ok());
}
