//! The OpenAI client against a server on loopback that writes a tool call
//! in the legacy `function_call` shape (one call, no id, no index, ended
//! with `"finish_reason": "function_call"`), as older OpenAI-compatible
//! servers and Azure's older API versions still do: the call must reach
//! the reply whole, as a `tool_calls` one would, streamed or not.
#![cfg(all(feature = "openai", feature = "runtime"))]

#[path = "support/caller.rs"]
mod caller;
#[path = "support/openai_chunks.rs"]
mod openai_chunks;
#[path = "support/replay.rs"]
mod replay;

use agent_fsm::llm::{StopReason, StreamEvent};
use caller::run;
use openai_chunks::{chunk, openai, request};
use replay::{ReplayServer, Reply};
use serde_json::{Value, json};

#[tokio::test]
async fn a_streamed_legacy_function_call_is_the_replys_call() {
    // The name on the first piece only; the arguments in pieces, the
    // stream cut into 5-byte pieces so that `é` is split mid-character.
    let stream = [
        chunk(
            json!({"role": "assistant", "content": null, "function_call": {"name": "read", "arguments": ""}}),
            Value::Null,
        ),
        chunk(json!({"function_call": {"arguments": "{\"path\":"}}), Value::Null),
        chunk(json!({"function_call": {"arguments": "\"é.rs\"}"}}), Value::Null),
        chunk(json!({}), json!("function_call")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream).in_pieces_of(5)]).await;
    let log = run(openai(&server), request(), 1).await;
    let Some(Ok(StreamEvent::Completed { message, stop_reason, .. })) = log.last() else {
        panic!("the reply did not complete: {log:?}");
    };
    let calls: Vec<(&str, &Value)> = message.tool_calls.iter().map(|c| (c.name.as_str(), &c.arguments)).collect();
    assert_eq!(calls, [("read", &json!({"path": "é.rs"}))], "{log:?}");
    assert!(!message.tool_calls[0].id.is_empty(), "the call has an id for its result to answer");
    assert_eq!(*stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn a_whole_reply_with_a_legacy_function_call_is_the_replys_call() {
    // A server that ignored `"stream": true` and sent the whole completion.
    let body = json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "m", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": null,
                    "function_call": {"name": "now", "arguments": "{}"}},
        "finish_reason": "function_call"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2}});
    let server = ReplayServer::start(vec![Reply::status(200, &body.to_string())]).await;
    let log = run(openai(&server), request(), 1).await;
    let Some(Ok(StreamEvent::Completed { message, stop_reason, .. })) = log.last() else {
        panic!("the reply did not complete: {log:?}");
    };
    let calls: Vec<(&str, &Value)> = message.tool_calls.iter().map(|c| (c.name.as_str(), &c.arguments)).collect();
    assert_eq!(calls, [("now", &json!({}))], "{log:?}");
    assert_eq!(*stop_reason, StopReason::ToolUse);
}
