//! The Anthropic client against loopback servers that answer as
//! Anthropic's API does where it is strict: what the client sends must be
//! a request the API accepts, and what the API answers (its error bodies,
//! its newer stop reasons) must reach the machine as what it means.
#![cfg(all(feature = "anthropic", feature = "runtime"))]

#[path = "support/anthropic_events.rs"]
mod anthropic_events;
#[path = "support/caller.rs"]
mod caller;
#[path = "support/replay.rs"]
mod replay;

use std::time::Duration;

use agent_fsm::llm::{
    AnthropicConfig, AssistantMessage, ErrorKind, Message, ReasoningBlock, StopReason, StreamEvent, ToolCall, Usage,
};
use anthropic_events::{client, event, request};
use caller::{kinds, run};
use replay::{ReplayServer, Reply};
use serde_json::json;
use tokio::time::Instant;

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

/// An error body as Anthropic writes it.
fn error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_1"}).to_string()
}

#[tokio::test]
async fn a_result_with_no_text_is_sent_as_the_api_takes_one() {
    // The API refuses an error `tool_result` whose content is empty
    // ("content cannot be empty if `is_error` is true"), and empty text
    // anywhere; sent as it is, the refused result would fail every later
    // request of the conversation.
    let server = ReplayServer::start(vec![Reply::events(&reply("end_turn"))]).await;
    let call = |id: &str| ToolCall { id: id.into(), name: "run".into(), arguments: json!({}) };
    let request = request()
        .message(AssistantMessage {
            tool_calls: vec![call("toolu_1"), call("toolu_2"), call("toolu_3")],
            ..Default::default()
        })
        .message(Message::tool_error("toolu_1", ""))
        .message(Message::tool_error("toolu_2", " \n"))
        .message(Message::tool_result("toolu_3", "\n"));
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
    // A result that is no error goes without content, as the API's own
    // example of an empty result does: empty text is refused.
    assert_eq!(results[2], json!({"type": "tool_result", "tool_use_id": "toolu_3"}));
}

#[tokio::test]
async fn a_request_that_ends_with_the_assistants_words_ends_without_trailing_whitespace() {
    // A prefill, or a reply cut off and continued: the API refuses "final
    // assistant content" that ends with whitespace. Text elsewhere, and a
    // final message that ends with a tool call, go as they are.
    let server = ReplayServer::start(vec![Reply::events(&reply("end_turn")), Reply::events(&reply("end_turn"))]).await;
    let prefill = request()
        .message(Message::assistant("Earlier words \n"))
        .message(Message::user("Name it."))
        .message(Message::assistant("The title is: \n"));
    let log = kinds(run(client(&server), prefill, 1).await);
    assert!(matches!(log.last(), Some(Ok(StreamEvent::Completed { .. }))), "{log:?}");
    let calls = AssistantMessage {
        text: "Reading. ".into(),
        tool_calls: vec![ToolCall { id: "toolu_1".into(), name: "read".into(), arguments: json!({}) }],
        ..Default::default()
    };
    run(client(&server), request().message(calls), 1).await;

    let sent = server.requests();
    let messages = sent[0].json()["messages"].clone();
    assert_eq!(messages[1]["content"][0]["text"], "Earlier words \n");
    assert_eq!(messages[3], json!({"role": "assistant", "content": [{"type": "text", "text": "The title is:"}]}));
    let last = sent[1].json()["messages"][1].clone();
    assert_eq!(last["content"][0]["text"], "Reading. ", "{last}");
    assert_eq!(last["content"][1]["type"], "tool_use", "{last}");
}

#[tokio::test]
async fn the_400s_that_say_the_window_is_full_or_the_credit_spent_are_classified_so() {
    // Both are `invalid_request_error`s at 400, as the API sends them: a
    // machine that compacts its conversation, or stops until credit is
    // bought, must know them from a malformed request. Neither is retried.
    let window = "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, \
                  decrease input length or `max_tokens` and try again";
    let credit = "Your credit balance is too low to access the Anthropic API. \
                  Please go to Plans & Billing to upgrade or purchase credits.";
    let server = ReplayServer::start(vec![
        Reply::status(400, &error_body("invalid_request_error", window)),
        Reply::status(400, &error_body("invalid_request_error", credit)),
        Reply::status(400, &error_body("billing_error", "billing")),
        Reply::status(400, &error_body("invalid_request_error", "messages: field required")),
    ])
    .await;
    for (expected, message) in [
        (ErrorKind::ContextTooLong, window),
        (ErrorKind::QuotaExceeded, credit),
        (ErrorKind::QuotaExceeded, "billing"),
        (ErrorKind::BadRequest, "messages: field required"),
    ] {
        let log = run(client(&server), request(), 3).await;
        let [Err(error)] = log.as_slice() else { panic!("one error, not retried: {log:?}") };
        assert_eq!((error.kind(), error.status(), error.message()), (&expected, Some(400), message));
    }
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn each_stop_reason_the_api_documents_is_read_as_what_it_means() {
    // `model_context_window_exceeded`: newer models stop where the window
    // ends, the reply cut off as at `max_tokens`; a machine that checks
    // for a cut-off reply must see it as one.
    let reasons = [
        ("end_turn", StopReason::EndTurn),
        ("max_tokens", StopReason::MaxTokens),
        ("model_context_window_exceeded", StopReason::MaxTokens),
        ("stop_sequence", StopReason::StopSequence),
        ("refusal", StopReason::ContentFilter),
        ("pause_turn", StopReason::Other("pause_turn".into())),
    ];
    let server = ReplayServer::start(reasons.iter().map(|(wire, _)| Reply::events(&reply(wire))).collect()).await;
    for (wire, expected) in reasons {
        let log = run(client(&server), request(), 1).await;
        let Some(Ok(StreamEvent::Completed { message, stop_reason, .. })) = log.last() else { panic!("{log:?}") };
        assert_eq!((message.text.as_str(), stop_reason), ("ok", &expected), "{wire}");
    }
}

#[tokio::test]
async fn an_error_object_sent_whole_with_200_is_the_error_it_reports() {
    // A proxy that answers `200`, as JSON, with the error it got: an auth
    // failure must not be retried as a broken stream, nor an overload
    // lose its kind. A whole message sent so stays a broken stream.
    let message = json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Hi"}],
                         "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}});
    let server = ReplayServer::start(vec![
        Reply::status(200, &error_body("authentication_error", "invalid x-api-key")),
        Reply::status(200, &error_body("overloaded_error", "Overloaded")),
        Reply::status(200, &json!({"error": {"message": "quota", "code": "insufficient_quota"}}).to_string()),
        Reply::status(200, &message.to_string()),
    ])
    .await;
    for (expected, text) in [
        (ErrorKind::Auth, "invalid x-api-key"),
        (ErrorKind::Overloaded { retry_after: None }, "Overloaded"),
        (ErrorKind::QuotaExceeded, "quota"),
    ] {
        let log = run(client(&server), request(), 1).await;
        let [Err(error)] = log.as_slice() else { panic!("one error: {log:?}") };
        assert_eq!((error.kind(), error.message()), (&expected, text));
    }
    assert_eq!(kinds(run(client(&server), request(), 1).await), vec![Err(ErrorKind::MalformedStream)]);
}

#[tokio::test(start_paused = true)]
async fn a_reply_with_its_stop_reason_and_then_only_pings_ends_without_message_stop() {
    // Seen of Anthropic's API: the whole reply, its stop reason, then
    // `ping`s and no `message_stop`. Each ping restarts the read timeout,
    // so the call must not wait for the end marker for good.
    let whole = reply("end_turn");
    let without_stop = whole.strip_suffix(&event(json!({"type": "message_stop"}))).expect("the stop comes last");
    let url = replay::keeping_alive(without_stop.to_owned(), event(json!({"type": "ping"}))).await;
    let client = AnthropicConfig::new("k").base_url(url).build().expect("client");
    let start = Instant::now();
    let log = kinds(run(client, request(), 1).await);
    let Some(Ok(StreamEvent::Completed { message, stop_reason: StopReason::EndTurn, usage })) = log.last() else {
        panic!("{log:?}")
    };
    assert_eq!((message.text.as_str(), usage.output_tokens), ("ok", 2));
    assert_eq!(log.len(), 2, "{log:?}");
    // About 10 s after the stop reason, far within the read timeout.
    assert!(start.elapsed() <= Duration::from_secs(15), "{:?}", start.elapsed());
}

#[tokio::test]
async fn a_reply_framed_every_way_the_format_allows_and_split_at_every_byte_is_read_whole() {
    // CRLF line ends, `data:` with no space, a `ping` after every event,
    // an `event:` name that is not the data's type, blocks the client
    // does not keep between those it does, a call whose input comes with
    // its start, one with an empty first piece, one with none, and usage
    // that a later `message_delta` restates whole; sent a byte at a time.
    let blocks = [
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "cache_creation_input_tokens": 2, "cache_read_input_tokens": 3, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "SIG"}}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"query\": \"x\"}"}}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}}),
        json!({"type": "content_block_start", "index": 3, "content_block": {"type": "redacted_thinking", "data": "RED"}}),
        json!({"type": "content_block_start", "index": 4, "content_block": {"type": "text", "text": "", "citations": []}}),
        json!({"type": "content_block_delta", "index": 4, "delta": {"type": "citations_delta", "citation": {"type": "web_search_result_location", "url": "u"}}}),
        json!({"type": "content_block_delta", "index": 4, "delta": {"type": "text_delta", "text": "Found é."}}),
        json!({"type": "content_block_start", "index": 5, "content_block": {"type": "tool_use", "id": "toolu_a", "name": "a", "input": {}}}),
        json!({"type": "content_block_delta", "index": 5, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_start", "index": 6, "content_block": {"type": "tool_use", "id": "toolu_b", "name": "b", "input": {"k": "v"}}}),
        json!({"type": "content_block_start", "index": 7, "content_block": {"type": "tool_use", "id": "toolu_c", "name": "c", "input": {}}}),
        json!({"type": "content_block_delta", "index": 7, "delta": {"type": "input_json_delta", "partial_json": "{\"p\": \"é\\\""}}),
        json!({"type": "content_block_delta", "index": 7, "delta": {"type": "input_json_delta", "partial_json": "\"}"}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 50}}),
        json!({"type": "message_delta", "delta": {"stop_reason": null}, "usage": {"input_tokens": 10, "cache_creation_input_tokens": 2, "cache_read_input_tokens": 3, "output_tokens": 55}}),
        json!({"type": "message_stop"}),
    ];
    let mut stream = String::new();
    for (i, data) in blocks.iter().enumerate() {
        // Every third event names another type: the data's type decides.
        let name = if i % 3 == 2 { "ping" } else { data["type"].as_str().expect("a type") };
        stream += &format!("event: {name}\r\ndata:{data}\r\n\r\nevent: ping\r\ndata: {{\"type\": \"ping\"}}\r\n\r\n");
    }
    let server = ReplayServer::start(vec![Reply::events(&stream).in_pieces_of(1)]).await;
    let log = run(client(&server), request(), 1).await;
    let Some(Ok(StreamEvent::Completed { message, stop_reason: StopReason::ToolUse, usage })) = log.last() else {
        panic!("{log:?}")
    };
    let call = |id: &str, name: &str, arguments| ToolCall { id: id.into(), name: name.into(), arguments };
    let expected = AssistantMessage {
        text: "Found é.".into(),
        tool_calls: vec![
            call("toolu_a", "a", json!({})),
            call("toolu_b", "b", json!({"k": "v"})),
            call("toolu_c", "c", json!({"p": "é\""})),
        ],
        reasoning: vec![
            ReasoningBlock::Thinking { thinking: "hmm".into(), signature: "SIG".into() },
            ReasoningBlock::RedactedThinking { data: "RED".into() },
        ]
        .into(),
    };
    assert_eq!(message, &expected);
    let mut counted = Usage::new(15, 55);
    counted.cache_read_tokens = 3;
    counted.cache_write_tokens = 2;
    assert_eq!(usage, &counted);
    // The calls are numbered among themselves, whatever blocks lie between.
    let indexes: Vec<usize> = log
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::ToolCallDelta { index, .. }) => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(indexes, [0, 0, 1, 2, 2, 2]);
}

#[tokio::test]
async fn events_the_client_does_not_read_are_skipped_whatever_their_data() {
    // The API asks clients to skip event types they do not know; a
    // gateway's keep-alive may name itself `ping` with data of its own.
    // Neither may fail the reply. A frame of a type the client reads
    // that is not the JSON expected still does.
    let odd = [
        "event: ping\ndata: {}\n\n",
        "event: ping\ndata:\n\n",
        "event: keepalive\ndata: not json\n\n",
        "event: message_progress\ndata: {\"type\": \"message_progress\", \"message\": \"working\", \"index\": \"a\"}\n\n",
        "data: {\"type\": \"content_block_hint\", \"delta\": 7}\n\n",
    ]
    .concat();
    let whole = reply("end_turn");
    let (head, tail) = whole.split_at(whole.find("event: content_block_delta").expect("a delta"));
    let broken =
        format!("{head}event: content_block_delta\ndata: {{\"type\": \"content_block_delta\", \"index\": \"a\"}}\n\n");
    let server =
        ReplayServer::start(vec![Reply::events(&format!("{odd}{head}{odd}{tail}")), Reply::events(&broken)]).await;
    let log = kinds(run(client(&server), request(), 1).await);
    let Some(Ok(StreamEvent::Completed { message, stop_reason: StopReason::EndTurn, .. })) = log.last() else {
        panic!("{log:?}")
    };
    assert_eq!(message.text, "ok");
    assert_eq!(kinds(run(client(&server), request(), 1).await), vec![Err(ErrorKind::MalformedStream)]);
}
