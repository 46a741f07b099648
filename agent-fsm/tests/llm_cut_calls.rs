//! A reply that ends on its end marker (`[DONE]`, `message_stop`) with no
//! stop reason before it, in the middle of a tool call whose arguments are
//! not whole JSON, was cut short: it is a dropped connection (retried),
//! not a complete reply whose tool would run on half its arguments. With
//! a stop reason, or with the call's arguments whole, the reply completes
//! as before (servers that send no stop reason still work).
#![cfg(all(feature = "openai", feature = "anthropic"))]

use std::collections::VecDeque;

use agent_fsm::llm::{ErrorKind, ProviderError, StopReason, StreamEvent, anthropic, openai};
use serde_json::{Value, json};

type Log = VecDeque<Result<StreamEvent, ProviderError>>;

fn openai_reply(arguments: &str, finish_reason: Value) -> Log {
    let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1",
        "type": "function", "function": {"name": "read", "arguments": arguments}}]}}]});
    let end = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}]});
    let mut parser = openai::StreamParser::new();
    let mut out = VecDeque::new();
    parser.feed(format!("data: {call}\n\ndata: {end}\n\ndata: [DONE]\n\n").as_bytes(), &mut out);
    assert!(parser.is_done(), "{out:?}");
    out
}

fn anthropic_reply(partial_json: &str, stop_reason: Option<&str>) -> Log {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": []}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "input_json_delta", "partial_json": partial_json}}),
    ];
    if let Some(reason) = stop_reason {
        events.push(json!({"type": "content_block_stop", "index": 0}));
        events.push(json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 9}}));
    }
    events.push(json!({"type": "message_stop"}));
    let text: String =
        events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or(""))).collect();
    let mut parser = anthropic::StreamParser::new();
    let mut out = VecDeque::new();
    parser.feed(text.as_bytes(), &mut out);
    assert!(parser.is_done(), "{out:?}");
    out
}

fn assert_cut(log: &Log) {
    let Some(Err(error)) = log.back() else { panic!("a reply cut mid-call completed: {log:?}") };
    assert_eq!(error.kind(), &ErrorKind::ConnectionDropped, "{error}");
    assert!(error.is_retryable(), "{error}");
    assert!(error.message().contains("tool call 0 (`read`)"), "{error}");
}

/// The completed reply's one call's arguments, and its stop reason.
fn completed(log: &Log) -> (Value, StopReason) {
    let Some(Ok(StreamEvent::Completed { message, stop_reason, .. })) = log.back() else {
        panic!("the reply did not complete: {log:?}")
    };
    (message.tool_calls[0].arguments.clone(), stop_reason.clone())
}

#[test]
fn openai_a_call_cut_before_done_without_a_finish_reason_is_a_dropped_connection() {
    assert_cut(&openai_reply("{\"pa", Value::Null));
    // Whole, with no finish reason: a lenient server's reply.
    assert_eq!(
        completed(&openai_reply("{\"path\":\"a.rs\"}", Value::Null)),
        (json!({"path": "a.rs"}), StopReason::ToolUse)
    );
    // With its finish reason, the model's own broken JSON is kept for the
    // tool to refuse.
    assert_eq!(completed(&openai_reply("{\"pa", json!("tool_calls"))), (json!("{\"pa"), StopReason::ToolUse));
}

#[test]
fn anthropic_a_call_cut_before_message_stop_without_a_stop_reason_is_a_dropped_connection() {
    assert_cut(&anthropic_reply("{\"pa", None));
    assert_eq!(
        completed(&anthropic_reply("{\"path\":\"a.rs\"}", None)),
        (json!({"path": "a.rs"}), StopReason::ToolUse)
    );
    assert_eq!(completed(&anthropic_reply("{\"pa", Some("tool_use"))), (json!("{\"pa"), StopReason::ToolUse));
}
