//! The clients against servers on loopback that write a well-formed reply
//! with some field in a shape the format does not promise (token counts as
//! fractions or below zero, GLM's and OpenAI's own; parallel tool calls that
//! share one index and carry no id, as Gemini's OpenAI-compatible endpoint
//! sends them; usage in the choice, as Moonshot's Kimi API gives it; an
//! Anthropic delta that writes the pieces of the other delta types beside
//! its own as `null`, as a gateway with one delta type for all does): the
//! reply must come out whole, every call apart, with the usage the server
//! gave, and nothing the server wrote oddly may fail it.
#![cfg(all(feature = "openai", feature = "anthropic", feature = "runtime"))]

#[path = "support/anthropic_events.rs"]
mod anthropic_events;
#[path = "support/caller.rs"]
mod caller;
#[path = "support/openai_chunks.rs"]
mod openai_chunks;
#[path = "support/replay.rs"]
mod replay;

use agent_fsm::llm::{AssistantMessage, ReasoningBlock, StopReason, StreamEvent, ToolCall, Usage};
use caller::{kinds, run};
use openai_chunks::{chunk, openai, request, text};
use replay::{ReplayServer, Reply};
use serde_json::{Value, json};

/// The reply `text`, ended for `stop_reason`, with `usage`.
fn completed(text: &str, stop_reason: StopReason, usage: Usage) -> StreamEvent {
    let message = AssistantMessage { text: text.to_owned(), ..AssistantMessage::default() };
    StreamEvent::Completed { message, stop_reason, usage }
}

#[tokio::test]
async fn token_counts_written_as_fractions_or_below_zero_do_not_fail_the_reply() {
    // An OpenAI-compatible server's usage chunk with a fraction, a negative
    // (OpenAI's o3 has sent `"completion_tokens": -35`) and a count as text.
    let usage = json!({"prompt_tokens": 12.6, "completion_tokens": -35, "total_tokens": -22.4,
                       "prompt_tokens_details": {"cached_tokens": "3"}});
    let stream = [
        chunk(json!({"role": "assistant", "content": "Hi"}), Value::Null),
        chunk(json!({}), json!("stop")),
        format!("data: {}\n\n", json!({"choices": [], "usage": usage})),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    // A second attempt would find the server out of replies: the first
    // must succeed.
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let log = kinds(run(openai(&server), request(), 2).await);
    assert_eq!(log, vec![Ok(text("Hi")), Ok(completed("Hi", StopReason::EndTurn, Usage::new(13, 0)))]);

    // GLM's Anthropic-compatible API: counts as fractions once its cache
    // is hit.
    let events = [
        anthropic_events::event(json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "content": [], "model": "glm", "stop_reason": null,
            "usage": {"input_tokens": 1234.4, "output_tokens": 1.0, "cache_read_input_tokens": 512.0}}})),
        anthropic_events::event(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        anthropic_events::event(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
        ),
        anthropic_events::event(json!({"type": "content_block_stop", "index": 0})),
        anthropic_events::event(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 7.0, "cache_creation_input_tokens": -1}})),
        anthropic_events::event(json!({"type": "message_stop"})),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&events)]).await;
    let log = kinds(run(anthropic_events::client(&server), anthropic_events::request(), 2).await);
    // Anthropic counts cached input apart; the reply's input counts it in.
    let mut usage = Usage::new(1234 + 512, 7);
    usage.cache_read_tokens = 512;
    assert_eq!(log, vec![Ok(text("Hi")), Ok(completed("Hi", StopReason::EndTurn, usage))]);
}

#[tokio::test]
async fn parallel_calls_at_one_index_without_ids_are_each_a_call() {
    // Gemini's OpenAI-compatible endpoint: each parallel call whole, all at
    // index 0 and without an id, two of them of the same tool; the last
    // one's arguments in two pieces (the second without the name); then
    // `"finish_reason": "stop"`.
    let call = |name: &str, arguments: &str| json!({"tool_calls": [{"index": 0, "type": "function", "function": {"name": name, "arguments": arguments}}]});
    let stream = [
        chunk(call("read", r#"{"path":"a.rs"}"#), Value::Null),
        chunk(call("read", r#"{"path":"b.rs"}"#), Value::Null),
        chunk(call("now", ""), Value::Null),
        chunk(call("grep", r#"{"pattern":"}{"#), Value::Null),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": r#"","path":"."}"#}}]}), Value::Null),
        chunk(json!({}), json!("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream).in_pieces_of(7)]).await;
    let log = run(openai(&server), request(), 1).await;
    // Each call's first delta names its tool, at a position of its own.
    let starts: Vec<(usize, Option<&str>)> = log
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::ToolCallDelta { index, name, .. }) => Some((*index, name.as_deref())),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [(0, Some("read")), (1, Some("read")), (2, Some("now")), (3, Some("grep")), (3, None)]);
    let Some(Ok(StreamEvent::Completed { message, stop_reason, .. })) = log.last() else {
        panic!("the reply did not complete: {log:?}");
    };
    let calls: Vec<(&str, &Value)> = message.tool_calls.iter().map(|c| (c.name.as_str(), &c.arguments)).collect();
    let (a, b, none, grep) =
        (json!({"path": "a.rs"}), json!({"path": "b.rs"}), json!({}), json!({"pattern": "}{", "path": "."}));
    assert_eq!(calls, [("read", &a), ("read", &b), ("now", &none), ("grep", &grep)]);
    assert_eq!(*stop_reason, StopReason::ToolUse);
    // Each with an id of its own, for its result to answer it alone.
    let mut ids: Vec<&str> = message.tool_calls.iter().map(|c| c.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 4, "{:?}", message.tool_calls);
}

#[tokio::test]
async fn usage_given_in_the_choice_is_the_replys() {
    // Moonshot's Kimi API: the usage in the last chunk's choice, not in
    // the chunk; `prompt_tokens_details` as OpenAI writes it.
    let usage = json!({"prompt_tokens": 19, "completion_tokens": 13, "total_tokens": 32,
                       "cached_tokens": 8, "prompt_tokens_details": {"cached_tokens": 8}});
    let last = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "kimi-k2",
                      "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "usage": usage}]});
    let stream = [
        chunk(json!({"role": "assistant", "content": "Hi"}), Value::Null),
        format!("data: {last}\n\n"),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let log = kinds(run(openai(&server), request(), 1).await);
    let mut usage = Usage::new(19, 13);
    usage.cache_read_tokens = 8;
    assert_eq!(log, vec![Ok(text("Hi")), Ok(completed("Hi", StopReason::EndTurn, usage))]);
}

#[tokio::test]
async fn an_anthropic_delta_with_the_other_types_pieces_as_null_is_read() {
    // A gateway that writes Anthropic's format from one delta type with a
    // field for every piece: the ones a delta does not carry are `null`.
    let delta = |index: usize, kind: &str, field: &str, piece: &str| {
        let mut delta = json!({"type": kind, "text": null, "partial_json": null, "thinking": null, "signature": null});
        delta[field] = json!(piece);
        anthropic_events::event(json!({"type": "content_block_delta", "index": index, "delta": delta}))
    };
    let start = |index: usize, block: Value| {
        anthropic_events::event(json!({"type": "content_block_start", "index": index, "content_block": block}))
    };
    let events = [
        anthropic_events::event(json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "content": [], "model": "m", "usage": {"input_tokens": 3, "output_tokens": 1}}})),
        start(0, json!({"type": "thinking", "thinking": ""})),
        delta(0, "thinking_delta", "thinking", "Look first."),
        delta(0, "signature_delta", "signature", "c2ln"),
        start(1, json!({"type": "text", "text": ""})),
        delta(1, "text_delta", "text", "Reading."),
        start(2, json!({"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}})),
        delta(2, "input_json_delta", "partial_json", r#"{"path":"#),
        delta(2, "input_json_delta", "partial_json", r#""a.rs"}"#),
        anthropic_events::event(
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
            "usage": {"output_tokens": 9}}),
        ),
        anthropic_events::event(json!({"type": "message_stop"})),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&events)]).await;
    let log = run(anthropic_events::client(&server), anthropic_events::request(), 1).await;
    let Some(Ok(StreamEvent::Completed { message, stop_reason, usage })) = log.last() else {
        panic!("the reply did not complete: {log:?}");
    };
    let expected = AssistantMessage {
        text: "Reading.".into(),
        tool_calls: vec![ToolCall { id: "toolu_1".into(), name: "read".into(), arguments: json!({"path": "a.rs"}) }],
        reasoning: vec![ReasoningBlock::Thinking { thinking: "Look first.".into(), signature: "c2ln".into() }].into(),
    };
    assert_eq!((message, stop_reason, usage), (&expected, &StopReason::ToolUse, &Usage::new(3, 9)));
}
