//! The OpenAI-compatible client against a replay server on loopback: the
//! real reqwest client, recorded-format Chat Completions streams, and a
//! machine under the executor whose received events are asserted exactly.
#![cfg(all(feature = "openai", feature = "runtime"))]

#[path = "support/caller.rs"]
mod caller;
#[path = "support/replay.rs"]
mod replay;

use std::time::Duration;

use agent_fsm::llm::{
    AssistantMessage, ErrorKind, Message, OpenAi, OpenAiConfig, ReasoningBlock, Request, StopReason, StreamEvent,
    ToolCall, ToolDefinition, Usage,
};
use caller::{kinds, run};
use replay::{ReplayServer, Reply};
use serde_json::{Value, json};

/// A client for `server`, as a user configures one for a gateway.
fn client(server: &ReplayServer) -> OpenAi {
    OpenAiConfig::new("sk-test").base_url(format!("{}/v1", server.url())).build().expect("client")
}

fn request() -> Request {
    Request::new("gpt-test").message(Message::user("hi"))
}

/// One `data:` chunk as OpenAI writes it, with this choice.
fn chunk(delta: Value, finish_reason: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
        "system_fingerprint": "fp", "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        "usage": null,
    });
    format!("data: {body}\n\n")
}

/// The usage chunk `stream_options.include_usage` asks for.
fn usage_chunk(prompt: u64, completion: u64, cached: u64) -> String {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": cached}},
    });
    format!("data: {body}\n\n")
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
        chunk(json!({"role": "assistant", "content": "", "refusal": null}), None),
        chunk(json!({"content": "Hello"}), None),
        chunk(json!({"content": ", wörld"}), None),
        chunk(json!({}), Some("stop")),
        usage_chunk(12, 3, 4),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

fn hello_events() -> Vec<Result<StreamEvent, ErrorKind>> {
    let mut usage = Usage::new(12, 3);
    usage.cache_read_tokens = 4;
    vec![Ok(text("Hello")), Ok(text(", wörld")), Ok(completed("Hello, wörld", vec![], StopReason::EndTurn, usage))]
}

#[tokio::test]
async fn text_only_and_what_is_sent() {
    // Written 7 bytes at a time: lines and the `ö` split across reads.
    let server = ReplayServer::start(vec![Reply::events(&hello_stream()).in_pieces_of(7)]).await;
    let request = request()
        .system("Be brief.")
        .tool(ToolDefinition::new("read", "Reads a file", json!({"type": "object"})))
        .max_tokens(100)
        .temperature(0.5)
        .extra("seed", json!(7));
    assert_eq!(kinds(run(client(&server), request, 1).await), hello_events());

    let sent = &server.requests()[0];
    assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "gpt-test",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {"name": "read", "description": "Reads a file", "parameters": {"type": "object"}}}],
            "max_tokens": 100,
            "temperature": 0.5,
            "seed": 7,
        })
    );
}

#[tokio::test]
async fn a_tool_round_is_sent_back_as_openai_reads_it() {
    let server = ReplayServer::start(vec![Reply::events(&hello_stream())]).await;
    let config = OpenAiConfig::without_key()
        .base_url(server.url())
        .header("api-key", "azure-key")
        .query("api-version", "2024-10-21")
        .include_usage(false)
        .max_completion_tokens(true);
    let request = request()
        .message(AssistantMessage {
            text: String::new(),
            tool_calls: vec![ToolCall { id: "call_1".into(), name: "read".into(), arguments: json!({"path": "a"}) }],
            // Anthropic's thinking, from a conversation that changed
            // provider: never sent to an OpenAI-compatible server.
            reasoning: vec![ReasoningBlock::Thinking { thinking: "hm".into(), signature: "c2ln".into() }].into(),
        })
        .message(Message::tool_error("call_1", "no such file"))
        .max_tokens(5);
    run(config.build().expect("client"), request, 1).await;
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/chat/completions?api-version=2024-10-21");
    assert_eq!((sent.header("authorization"), sent.header("api-key")), (None, Some("azure-key")));
    assert_eq!(
        sent.json(),
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "no such file"},
            ],
            "stream": true,
            "max_completion_tokens": 5,
        })
    );
}

#[tokio::test]
async fn one_tool_call_in_many_fragments() {
    // The arguments `{"path":"a \"b\".rs","n":4}`, cut inside a key, a
    // string and an escape.
    let fragments = ["", "{\"pa", "th\":\"a \\", "\"b\\", "\".rs\",", "\"n\"", ":4}"];
    let mut stream = chunk(json!({"role": "assistant", "content": null}), None);
    stream += &chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_A", "type": "function", "function": {"name": "read", "arguments": fragments[0]}}]}),
        None,
    );
    for fragment in &fragments[1..] {
        stream += &chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}), None);
    }
    stream += &chunk(json!({}), Some("tool_calls"));
    stream += "data: [DONE]\n\n";
    let server = ReplayServer::start(vec![Reply::events(&stream).in_pieces_of(5)]).await;

    let mut expected: Vec<Result<StreamEvent, ErrorKind>> = vec![Ok(call_delta(0, Some("call_A"), Some("read"), ""))];
    expected.extend(fragments[1..].iter().map(|f| Ok(call_delta(0, None, None, f))));
    let call = ToolCall { id: "call_A".into(), name: "read".into(), arguments: json!({"path": "a \"b\".rs", "n": 4}) };
    expected.push(Ok(completed("", vec![call], StopReason::ToolUse, Usage::default())));
    assert_eq!(kinds(run(client(&server), request(), 1).await), expected);
}

#[tokio::test]
async fn three_parallel_tool_calls_interleaved() {
    let start = |index: usize, id: &str, name: &str| {
        chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            None,
        )
    };
    let piece = |index: usize, fragment: &str| {
        chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}), None)
    };
    let stream = [
        chunk(json!({"content": "Three at once."}), None),
        start(0, "call_0", "read"),
        start(1, "call_1", "list"),
        piece(1, "{\"dir\":"),
        piece(0, "{\"path\":\"x\"}"),
        start(2, "call_2", "shell"),
        piece(2, "{\"cmd\":\"ls\"}"),
        piece(1, "\".\"}"),
        // Two pieces in one chunk, as some servers send.
        chunk(json!({"tool_calls": [{"index": 2, "function": {"arguments": " "}}, {"index": 0, "function": {"arguments": ""}}]}), None),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(30, 20, 0),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let calls = vec![
        ToolCall { id: "call_0".into(), name: "read".into(), arguments: json!({"path": "x"}) },
        ToolCall { id: "call_1".into(), name: "list".into(), arguments: json!({"dir": "."}) },
        ToolCall { id: "call_2".into(), name: "shell".into(), arguments: json!({"cmd": "ls"}) },
    ];
    let expected = vec![
        Ok(text("Three at once.")),
        Ok(call_delta(0, Some("call_0"), Some("read"), "")),
        Ok(call_delta(1, Some("call_1"), Some("list"), "")),
        Ok(call_delta(1, None, None, "{\"dir\":")),
        Ok(call_delta(0, None, None, "{\"path\":\"x\"}")),
        Ok(call_delta(2, Some("call_2"), Some("shell"), "")),
        Ok(call_delta(2, None, None, "{\"cmd\":\"ls\"}")),
        Ok(call_delta(1, None, None, "\".\"}")),
        Ok(call_delta(2, None, None, " ")),
        Ok(call_delta(0, None, None, "")),
        Ok(completed("Three at once.", calls, StopReason::ToolUse, Usage::new(30, 20))),
    ];
    assert_eq!(kinds(run(client(&server), request(), 1).await), expected);
}

#[tokio::test]
async fn parallel_calls_all_at_index_zero_are_told_apart_by_id() {
    let stream = [
        chunk(json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "read", "arguments": "{}"}}]}), None),
        chunk(json!({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "list", "arguments": "{}"}}]}), None),
        chunk(json!({}), Some("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let calls = vec![
        ToolCall { id: "a".into(), name: "read".into(), arguments: json!({}) },
        ToolCall { id: "b".into(), name: "list".into(), arguments: json!({}) },
    ];
    let expected = vec![
        Ok(call_delta(0, Some("a"), Some("read"), "{}")),
        Ok(call_delta(1, Some("b"), Some("list"), "{}")),
        Ok(completed("", calls, StopReason::ToolUse, Usage::default())),
    ];
    assert_eq!(kinds(run(client(&server), request(), 1).await), expected);
}

#[tokio::test]
async fn usage_and_stop_reason_from_a_terse_server_that_never_sends_done() {
    // llama.cpp-style: `data:` without a space, keep-alive comments,
    // fields left out, usage in the finish chunk, and the connection
    // closed after it with no `[DONE]`.
    let stream = ": keep-alive\n\n\
                  data:{\"choices\":[{\"delta\":{\"content\":\"cut\"}}]}\n\n\
                  : ping\n\n\
                  data:{\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1}}\n\n";
    let server = ReplayServer::start(vec![Reply::events(stream)]).await;
    let expected = vec![Ok(text("cut")), Ok(completed("cut", vec![], StopReason::MaxTokens, Usage::new(9, 1)))];
    assert_eq!(kinds(run(client(&server), request(), 1).await), expected);
}

#[tokio::test]
async fn done_ends_the_reply_whatever_follows() {
    // After `[DONE]` the client reads no further: a broken frame and a
    // dropped connection after it change nothing.
    let stream = hello_stream() + "data: {broken\n\n";
    let server = ReplayServer::start(vec![Reply::events(&stream).dropped_after(7)]).await;
    assert_eq!(kinds(run(client(&server), request(), 1).await), hello_events());
}

#[tokio::test(start_paused = true)]
async fn the_stream_ends_at_done_though_the_server_keeps_the_connection_open() {
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
    let cut = Reply::events(&hello_stream()).dropped_after(2);
    let server = ReplayServer::start(vec![cut, Reply::events(&hello_stream())]).await;
    let mut expected = vec![Ok(text("Hello")), Err(ErrorKind::ConnectionDropped)];
    expected.extend(hello_events());
    assert_eq!(kinds(run(client(&server), request(), 2).await), expected);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_malformed_frame_fails_the_stream() {
    let stream = chunk(json!({"content": "ok"}), None) + "data: {\"choices\": [{\"delta\": \n\n" + &hello_stream();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let log = run(client(&server), request(), 1).await;
    assert_eq!(kinds(log.clone()), vec![Ok(text("ok")), Err(ErrorKind::MalformedStream)]);
    let error = log[1].as_ref().unwrap_err();
    assert!(error.message().starts_with("a chunk is not the JSON expected"), "{error}");
    assert!(error.is_retryable());
}

#[tokio::test]
async fn tool_arguments_that_are_not_json_are_kept_as_text_and_sent_back_as_an_object() {
    let stream = [
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "read", "arguments": "{\"path\": "}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let log = run(client(&server), request(), 1).await;
    let call = ToolCall { id: "c".into(), name: "read".into(), arguments: json!("{\"path\": ") };
    assert_eq!(
        kinds(log.clone()),
        vec![
            Ok(call_delta(0, Some("c"), Some("read"), "{\"path\": ")),
            Ok(completed("", vec![call.clone()], StopReason::ToolUse, Usage::default())),
        ]
    );
    // Sent back, the call's arguments are an object, as the API requires.
    let mut next = request();
    next.messages = std::sync::Arc::new(vec![
        Message::user("go"),
        Message::Assistant(AssistantMessage { text: String::new(), tool_calls: vec![call], ..Default::default() }),
        Message::tool_error("c", "invalid arguments for `read`: the arguments are not valid JSON"),
    ]);
    let body = client(&server).body(&next);
    assert_eq!(body["messages"][1]["tool_calls"][0]["function"]["arguments"], json!("{}"));
}

#[tokio::test]
async fn an_error_chunk_mid_stream_is_classified() {
    let stream = chunk(json!({"content": "a"}), None)
        + "data: {\"error\":{\"message\":\"Internal error\",\"type\":\"server_error\"}}\n\n";
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let log = run(client(&server), request(), 1).await;
    assert_eq!(kinds(log.clone()), vec![Ok(text("a")), Err(ErrorKind::ServerError { status: 500, retry_after: None })]);
    assert_eq!(log[1].as_ref().unwrap_err().message(), "Internal error");
}

#[tokio::test]
async fn a_numeric_error_code_mid_stream_is_read_as_the_upstreams_status() {
    let cases = [
        (502, ErrorKind::ServerError { status: 502, retry_after: None }),
        (429, ErrorKind::RateLimited { retry_after: None }),
        (401, ErrorKind::Auth),
    ];
    for (code, expected) in cases {
        let stream = chunk(json!({"content": "a"}), None)
            + &format!("data: {{\"error\":{{\"message\":\"upstream said no\",\"code\":{code}}}}}\n\n");
        let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
        let log = run(client(&server), request(), 1).await;
        assert_eq!(kinds(log.clone()), vec![Ok(text("a")), Err(expected)], "code {code}");
        let error = log[1].as_ref().unwrap_err();
        assert_eq!((error.status(), error.message()), (Some(code), "upstream said no"));
    }
}

#[tokio::test(start_paused = true)]
async fn http_429_waits_exactly_retry_after() {
    let limited = Reply::status(
        429,
        r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
    )
    .header("retry-after", "2");
    let server = ReplayServer::start(vec![limited, Reply::events(&hello_stream())]).await;
    let log = run(client(&server), request(), 3).await;
    let mut expected = vec![Err(ErrorKind::RateLimited { retry_after: Some(Duration::from_secs(2)) })];
    expected.extend(hello_events());
    assert_eq!(kinds(log.clone()), expected);
    let error = log[0].as_ref().unwrap_err();
    assert_eq!((error.status(), error.message()), (Some(429), "Rate limit reached"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The server's wait, not the policy's 200 ms.
    assert_eq!(requests[1].at - requests[0].at, Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn http_500_is_retried_after_the_policy_backoff() {
    let failed = Reply::status(500, r#"{"error":{"message":"The server had an error","type":"server_error"}}"#);
    let server = ReplayServer::start(vec![failed, Reply::events(&hello_stream())]).await;
    let mut expected = vec![Err(ErrorKind::ServerError { status: 500, retry_after: None })];
    expected.extend(hello_events());
    assert_eq!(kinds(run(client(&server), request(), 3).await), expected);
    let requests = server.requests();
    assert_eq!(requests[1].at - requests[0].at, Duration::from_millis(200));
}

#[tokio::test]
async fn http_401_is_not_retried() {
    let denied = Reply::status(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    );
    let server = ReplayServer::start(vec![denied, Reply::events(&hello_stream())]).await;
    let log = run(client(&server), request(), 3).await;
    assert_eq!(kinds(log.clone()), vec![Err(ErrorKind::Auth)]);
    assert_eq!(log[0].as_ref().unwrap_err().to_string(), "not authorized: Incorrect API key provided");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_context_too_long_400_is_not_retried() {
    let refused = Reply::status(
        400,
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    );
    let server = ReplayServer::start(vec![refused]).await;
    assert_eq!(kinds(run(client(&server), request(), 3).await), vec![Err(ErrorKind::ContextTooLong)]);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_stream_times_out_after_the_read_timeout() {
    let server = ReplayServer::start(vec![Reply::events(&hello_stream()).stalled_after(2)]).await;
    let client =
        OpenAiConfig::new("k").base_url(server.url()).read_timeout(Duration::from_secs(7)).build().expect("client");
    let start = tokio::time::Instant::now();
    assert_eq!(kinds(run(client, request(), 1).await), vec![Ok(text("Hello")), Err(ErrorKind::Timeout)]);
    assert_eq!(start.elapsed(), Duration::from_secs(7));
}

#[tokio::test]
async fn a_json_reply_that_is_no_completion_is_malformed() {
    // JSON, but neither a completion nor an error object.
    let server = ReplayServer::start(vec![Reply::status(200, r#"{"result":"whole"}"#)]).await;
    let log = run(client(&server), request(), 1).await;
    assert_eq!(kinds(log.clone()), vec![Err(ErrorKind::MalformedStream)]);
    assert_eq!(
        log[0].as_ref().unwrap_err().message(),
        r#"the server answered with `application/json` instead of an event stream: {"result":"whole"}"#
    );
}

#[tokio::test]
async fn a_server_that_is_not_there_is_a_dropped_connection() {
    let server = ReplayServer::start(vec![]).await;
    let url = server.url();
    drop(server);
    // Let the aborted accept loop release the port.
    tokio::task::yield_now().await;
    let client = OpenAiConfig::new("k").base_url(url).build().expect("client");
    assert_eq!(kinds(run(client, request(), 1).await), vec![Err(ErrorKind::ConnectionDropped)]);
}

#[test]
fn the_parser_alone_completes_at_the_end_only_after_a_finish_reason() {
    use agent_fsm::llm::openai::StreamParser;
    use std::collections::VecDeque;

    let stream = chunk(json!({"content": "a"}), None) + &chunk(json!({}), Some("stop"));
    let mut parser = StreamParser::new();
    let mut out = VecDeque::new();
    parser.feed(stream.as_bytes(), &mut out);
    assert!(!parser.is_done());
    parser.finish(&mut out);
    assert!(parser.is_done());
    let events: Vec<_> = kinds(out.into_iter().collect());
    assert_eq!(events, vec![Ok(text("a")), Ok(completed("a", vec![], StopReason::EndTurn, Usage::default()))]);

    let mut parser = StreamParser::new();
    let mut out = VecDeque::new();
    parser.feed(chunk(json!({"content": "a"}), None).as_bytes(), &mut out);
    parser.finish(&mut out);
    assert_eq!(kinds(out.into_iter().collect()), vec![Ok(text("a")), Err(ErrorKind::ConnectionDropped)]);
    // Done: nothing more is read.
    let mut out = VecDeque::new();
    parser.feed(hello_stream().as_bytes(), &mut out);
    assert!(out.is_empty());
}

#[test]
fn an_invalid_header_is_a_configuration_error() {
    let error = OpenAiConfig::new("k").header("bad header", "v").build().unwrap_err();
    assert_eq!(error.kind(), &ErrorKind::InvalidConfig);
    assert_eq!(OpenAiConfig::new("k").build().expect("client").url(), "https://api.openai.com/v1/chat/completions");
}

#[test]
fn a_base_url_that_is_no_http_url_is_a_configuration_error() {
    for (url, says) in [
        ("localhost:11434/v1", "is not http or https (its scheme is `localhost`)"),
        ("ftp://127.0.0.1/v1", "is not http or https (its scheme is `ftp`)"),
        ("127.0.0.1:8080/v1", "is not a URL"),
        ("http://", "is not a URL"),
    ] {
        let error = OpenAiConfig::new("k").base_url(url).build().expect_err(url);
        assert_eq!(error.kind(), &ErrorKind::InvalidConfig, "{url}");
        assert!(error.to_string().contains(&format!("the base URL `{url}` {says}")), "{url}: {error}");
    }
    for url in ["http://127.0.0.1:9/v1", "https://gateway.example/openai/v1/"] {
        assert!(OpenAiConfig::new("k").base_url(url).build().is_ok(), "{url}");
    }
}
