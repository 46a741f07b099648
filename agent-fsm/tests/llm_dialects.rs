//! The clients against servers on loopback that speak each provider's
//! format the way other servers write it (Ollama, LocalAI, SGLang,
//! llama.cpp's server, Anthropic's server tools): what they send must
//! neither fail a good reply nor pass a failed one as complete.
#![cfg(all(feature = "openai", feature = "anthropic", feature = "runtime"))]

#[path = "support/caller.rs"]
mod caller;
#[path = "support/replay.rs"]
mod replay;

use agent_fsm::llm::{
    AssistantMessage, ErrorKind, Message, OpenAi, OpenAiConfig, Request, StopReason, StreamEvent, Usage,
};
use caller::{kinds, run};
use replay::{ReplayServer, Reply};
use serde_json::{Value, json};

fn openai(server: &ReplayServer) -> OpenAi {
    OpenAiConfig::without_key().base_url(server.url()).build().expect("client")
}

fn request() -> Request {
    Request::new("m").message(Message::user("hi"))
}

/// One `data:` chunk whose only choice has `delta` and `finish_reason`.
fn chunk(delta: Value, finish_reason: Value) -> String {
    format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}))
}

fn text(t: &str) -> StreamEvent {
    StreamEvent::TextDelta(t.to_owned())
}

fn completed(text: &str, stop_reason: StopReason) -> StreamEvent {
    let message = AssistantMessage { text: text.to_owned(), tool_calls: Vec::new() };
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
