//! The clients against servers on loopback that speak each provider's
//! format the way other servers write it (Ollama, LocalAI, SGLang,
//! llama.cpp's server, Anthropic's server tools): what they send must
//! neither fail a good reply nor pass a failed one as complete.
#![cfg(all(feature = "openai", feature = "anthropic", feature = "runtime"))]

#[path = "support/caller.rs"]
mod caller;
#[path = "support/openai_chunks.rs"]
mod openai_chunks;
#[path = "support/replay.rs"]
mod replay;

use agent_fsm::llm::{AnthropicConfig, AssistantMessage, ErrorKind, StopReason, StreamEvent, ToolCall, Usage};
use caller::{kinds, run};
use openai_chunks::{chunk, openai, request, text};
use replay::{ReplayServer, Reply};
use serde_json::{Value, json};

fn completed(text: &str, stop_reason: StopReason) -> StreamEvent {
    let message = AssistantMessage { text: text.to_owned(), tool_calls: Vec::new(), ..Default::default() };
    StreamEvent::Completed { message, stop_reason, usage: Usage::default() }
}

#[tokio::test]
async fn an_empty_finish_reason_is_no_reason_and_a_cut_reply_is_not_complete() {
    // Ollama's, LocalAI's and SGLang's `"finish_reason": ""` on every chunk.
    let stream = [
        chunk(json!({"role": "assistant", "content": "Hel"}), json!("")),
        chunk(json!({"content": "lo"}), json!("")),
        chunk(json!({}), json!("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream).dropped_after(2), Reply::events(&stream)]).await;
    let log = kinds(run(openai(&server), request(), 2).await);
    assert_eq!(
        log,
        vec![
            Ok(text("Hel")),
            Ok(text("lo")),
            Err(ErrorKind::ConnectionDropped),
            Ok(text("Hel")),
            Ok(text("lo")),
            Ok(completed("Hello", StopReason::EndTurn)),
        ]
    );
}

#[tokio::test]
async fn an_error_line_then_done_fails_the_reply() {
    // llama.cpp's server through its 2025 builds: a failure mid-stream is
    // an `error:` line (no SSE field), then `[DONE]` all the same.
    let error = r#"{"code":500,"message":"failed to decode the batch","type":"server_error"}"#;
    let stream = chunk(json!({"content": "a"}), Value::Null) + &format!("error: {error}\n\ndata: [DONE]\n\n");
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let log = run(openai(&server), request(), 1).await;
    assert_eq!(kinds(log.clone()), vec![Ok(text("a")), Err(ErrorKind::ServerError { status: 500, retry_after: None })]);
    let error = log[1].as_ref().expect_err("an error");
    assert_eq!((error.status(), error.message()), (Some(500), "failed to decode the batch"));
}

/// One Anthropic event: the `event:` line, then the data, whose `type` is
/// the same name.
fn event(data: Value) -> String {
    let name = data["type"].as_str().expect("a type").to_owned();
    format!("event: {name}\ndata: {data}\n\n")
}

fn block_delta(index: usize, delta: Value) -> String {
    event(json!({"type": "content_block_delta", "index": index, "delta": delta}))
}

#[tokio::test]
async fn a_server_tools_input_and_result_are_skipped() {
    // Web search, run by Anthropic's server: its `server_tool_use` input
    // streams as `input_json_delta`, like a client tool's; the answer's
    // text cites the results in `citations_delta`s between its pieces.
    let stream = [
        event(json!({"type": "message_start", "message": {"usage": {"input_tokens": 7, "output_tokens": 1}}})),
        event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}})),
        block_delta(0, json!({"type": "input_json_delta", "partial_json": ""})),
        block_delta(0, json!({"type": "input_json_delta", "partial_json": "{\"query\": \"rust\"}"})),
        event(json!({"type": "content_block_stop", "index": 0})),
        event(json!({"type": "content_block_start", "index": 1, "content_block": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}})),
        event(json!({"type": "content_block_stop", "index": 1})),
        event(json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": "", "citations": []}})),
        block_delta(2, json!({"type": "citations_delta", "citation": {"type": "web_search_result_location", "cited_text": "Rust", "url": "https://rust-lang.org", "title": "Rust", "encrypted_index": "ZW5j"}})),
        block_delta(2, json!({"type": "text_delta", "text": "Found it."})),
        event(json!({"type": "content_block_stop", "index": 2})),
        event(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9, "server_tool_use": {"web_search_requests": 1}}})),
        event(json!({"type": "message_stop"})),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let client = AnthropicConfig::new("k").base_url(server.url()).build().expect("client");
    let message = AssistantMessage { text: "Found it.".into(), tool_calls: Vec::new(), ..Default::default() };
    let done = StreamEvent::Completed { message, stop_reason: StopReason::EndTurn, usage: Usage::new(7, 9) };
    assert_eq!(kinds(run(client, request(), 1).await), vec![Ok(text("Found it.")), Ok(done)]);
}

#[tokio::test]
async fn an_html_page_in_place_of_the_stream_is_malformed() {
    // A captive portal, or a base URL that leads to a web app's page.
    let page = "<!DOCTYPE html>\n<html><body>Sign in to continue</body></html>\n";
    let server =
        ReplayServer::start(vec![Reply::status(200, page).header("content-type", "text/HTML; charset=utf-8")]).await;
    let log = run(openai(&server), request(), 1).await;
    assert_eq!(kinds(log.clone()), vec![Err(ErrorKind::MalformedStream)]);
    let message = log[0].as_ref().expect_err("an error").message().to_owned();
    assert!(
        message.starts_with(
            "the server answered with `text/HTML; charset=utf-8` instead of an event stream: <!DOCTYPE html>"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn a_whole_anthropic_message_in_place_of_the_stream_is_malformed() {
    // Anthropic's API streams when asked: a whole message is not read as
    // the reply (the OpenAI-compatible client reads a whole completion).
    let body = json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Hi"}],
                      "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}});
    let server = ReplayServer::start(vec![Reply::status(200, &body.to_string())]).await;
    let client = AnthropicConfig::new("k").base_url(server.url()).build().expect("client");
    let log = run(client, request(), 1).await;
    assert_eq!(kinds(log.clone()), vec![Err(ErrorKind::MalformedStream)]);
    let message = log[0].as_ref().expect_err("an error").message().to_owned();
    assert!(message.starts_with("the server answered with `application/json` instead of an event stream"), "{message}");
}

#[tokio::test]
async fn arguments_sent_as_a_json_object_are_read_as_their_text() {
    let call =
        json!({"index": 0, "id": "c", "type": "function", "function": {"name": "read", "arguments": {"path": "a.rs"}}});
    let stream = chunk(json!({"tool_calls": [call]}), Value::Null) + &chunk(json!({}), json!("tool_calls"));
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let delta = StreamEvent::ToolCallDelta {
        index: 0,
        id: Some("c".into()),
        name: Some("read".into()),
        arguments_fragment: r#"{"path":"a.rs"}"#.into(),
    };
    let call = ToolCall { id: "c".into(), name: "read".into(), arguments: json!({"path": "a.rs"}) };
    let message = AssistantMessage { text: String::new(), tool_calls: vec![call], ..Default::default() };
    let done = StreamEvent::Completed { message, stop_reason: StopReason::ToolUse, usage: Usage::default() };
    assert_eq!(kinds(run(openai(&server), request(), 1).await), vec![Ok(delta), Ok(done)]);
}

#[tokio::test]
async fn a_refusal_is_the_replys_text_and_its_stop_reason() {
    // OpenAI: the refusal streams in `delta.refusal`, the content stays
    // null, and the reply ends with `stop`.
    let stream = [
        chunk(json!({"role": "assistant", "content": null, "refusal": null}), Value::Null),
        chunk(json!({"refusal": "I'm sorry, "}), Value::Null),
        chunk(json!({"refusal": "I can't help with that."}), Value::Null),
        chunk(json!({}), json!("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let expected = vec![
        Ok(text("I'm sorry, ")),
        Ok(text("I can't help with that.")),
        Ok(completed("I'm sorry, I can't help with that.", StopReason::ContentFilter)),
    ];
    assert_eq!(kinds(run(openai(&server), request(), 1).await), expected);
}

#[tokio::test]
async fn partial_null_or_empty_usage_on_other_chunks_keeps_the_counts() {
    // LiteLLM: the prompt's count on every chunk, the reply's only at the
    // end; a count may be `null`, and an empty `usage` may follow.
    let with_usage = |delta: Value, finish: Value, usage: Value| {
        let body = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": usage});
        format!("data: {body}\n\n")
    };
    let stream = [
        with_usage(json!({"content": "a"}), Value::Null, json!({"prompt_tokens": 9, "completion_tokens": null})),
        with_usage(json!({}), json!("stop"), json!({"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11})),
        format!("data: {}\n\n", json!({"choices": [], "usage": {}})),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let message = AssistantMessage { text: "a".into(), tool_calls: Vec::new(), ..Default::default() };
    let done = StreamEvent::Completed { message, stop_reason: StopReason::EndTurn, usage: Usage::new(9, 2) };
    assert_eq!(kinds(run(openai(&server), request(), 1).await), vec![Ok(text("a")), Ok(done)]);
}

#[tokio::test]
async fn a_reply_the_server_gave_up_on_fails_and_is_retried() {
    // vLLM's and SGLang's `abort` (the engine dropped the request part
    // way), OpenRouter's `error` (the upstream failed mid-stream): the text
    // so far is no whole reply.
    for reason in ["abort", "error"] {
        let cut = [
            chunk(json!({"role": "assistant", "content": "Hel"}), json!("")),
            chunk(json!({}), json!(reason)),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let whole = [chunk(json!({"content": "Hello"}), Value::Null), chunk(json!({}), json!("stop"))].concat();
        let server = ReplayServer::start(vec![Reply::events(&cut), Reply::events(&whole)]).await;
        let log = run(openai(&server), request(), 2).await;
        let error = log[1].as_ref().expect_err("the cut reply fails");
        assert!(error.message().contains(reason), "{error}");
        assert_eq!(
            kinds(log),
            vec![
                Ok(text("Hel")),
                Err(ErrorKind::ServerError { status: 500, retry_after: None }),
                Ok(text("Hello")),
                Ok(completed("Hello", StopReason::EndTurn)),
            ],
            "{reason}"
        );
    }
}

#[tokio::test]
async fn an_event_stream_that_holds_a_bare_error_object_is_classified_by_it() {
    // A proxy that fails after announcing an event stream, and writes the
    // provider's error object without the `data:` framing (pretty-printed
    // here): the error it names, with its message, not a dropped connection.
    let body = "{\n  \"error\": {\n    \"type\": \"rate_limit_error\",\n    \"message\": \"slow down\"\n  }\n}\n";
    let server = ReplayServer::start(vec![
        Reply::events(body),
        Reply::status(200, body).header("content-type", "text/event-stream"),
        Reply::events("this is no event stream\n"),
        Reply::events(": keep-alive\n\n"),
    ])
    .await;
    let log = run(openai(&server), request(), 1).await;
    assert_eq!(kinds(log.clone()), vec![Err(ErrorKind::RateLimited { retry_after: None })]);
    assert_eq!(log[0].as_ref().expect_err("an error").message(), "slow down");
    let anthropic = AnthropicConfig::new("k").base_url(server.url()).build().expect("client");
    assert_eq!(kinds(run(anthropic, request(), 1).await), vec![Err(ErrorKind::RateLimited { retry_after: None })]);
    // Not JSON: a broken stream, quoted.
    let log = run(openai(&server), request(), 1).await;
    let error = log[0].as_ref().expect_err("an error");
    assert_eq!(error.kind(), &ErrorKind::MalformedStream);
    assert_eq!(error.message(), "the event stream held no event, only: this is no event stream");
    // Comments alone say nothing: the stream was cut short.
    assert_eq!(kinds(run(openai(&server), request(), 1).await), vec![Err(ErrorKind::ConnectionDropped)]);
}

#[tokio::test]
async fn an_id_repeated_at_two_indexes_is_made_unique_so_each_result_answers_one_call() {
    // A server that numbers its ids per reply and gives two parallel
    // calls the same one: each call's result must still answer it alone.
    let call = |index: usize, path: &str| {
        let arguments = json!({"path": path}).to_string();
        json!({"index": index, "id": "call_0", "type": "function", "function": {"name": "read", "arguments": arguments}})
    };
    let stream = chunk(json!({"tool_calls": [call(0, "a.rs")]}), Value::Null)
        + &chunk(json!({"tool_calls": [call(1, "b.rs")]}), Value::Null)
        + &chunk(json!({}), json!("tool_calls"))
        + "data: [DONE]\n\n";
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let log = run(openai(&server), request(), 1).await;
    let Some(Ok(StreamEvent::Completed { message, stop_reason: StopReason::ToolUse, .. })) = log.last() else {
        panic!("{log:?}");
    };
    let arguments: Vec<&Value> = message.tool_calls.iter().map(|c| &c.arguments).collect();
    assert_eq!(arguments, [&json!({"path": "a.rs"}), &json!({"path": "b.rs"})], "two calls, in order");
    assert_eq!(message.tool_calls[0].id, "call_0", "the first keeps the server's id");
    assert_ne!(message.tool_calls[1].id, "call_0", "the second gets one of its own");
    assert!(message.tool_calls[1].id.starts_with("call_"), "{}", message.tool_calls[1].id);
}

#[tokio::test]
async fn an_anthropic_stream_error_without_the_documented_wrapper_is_classified_by_what_it_says() {
    let start = event(json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}));
    let text_start =
        event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
    let hello = block_delta(0, json!({"type": "text_delta", "text": "Hel"}));
    let opening = [start, text_start, hello].concat();
    let cases = [
        // LiteLLM's: an OpenAI-shaped error with the status as a string code.
        (
            "data: {\"error\": {\"message\": \"Rate limit reached\", \"type\": \"None\", \"code\": \"429\"}}\n\n",
            ErrorKind::RateLimited { retry_after: None },
        ),
        // An `error` event whose data is the error object itself.
        (
            "event: error\ndata: {\"type\": \"authentication_error\", \"message\": \"invalid x-api-key\"}\n\n",
            ErrorKind::Auth,
        ),
        // The same with no message: the object reads as an event of an
        // unknown type, yet it is the error its `event:` line says.
        ("event: error\ndata: {\"type\": \"overloaded_error\"}\n\n", ErrorKind::Overloaded { retry_after: None }),
        // An `error` event whose data is not JSON: its text is the message.
        (
            "event: error\ndata: upstream overloaded, try later\n\n",
            ErrorKind::ServerError { status: 500, retry_after: None },
        ),
    ];
    for (failure, kind) in cases {
        let server = ReplayServer::start(vec![Reply::events(&(opening.clone() + failure))]).await;
        let client = AnthropicConfig::new("k").base_url(server.url()).build().expect("client");
        let log = run(client, request(), 1).await;
        assert_eq!(log.len(), 2, "{log:?}");
        assert_eq!(log[0], Ok(text("Hel")));
        let error = log[1].as_ref().expect_err("the reply fails");
        assert_eq!(error.kind(), &kind, "{failure}: {error}");
    }
}
