//! A model reply with more tool calls than the notification log holds
//! (600, the log keeps 256, or twice that for a waiting reader): the coding agent's summary still counts every
//! call it ran, and the demo's printout says that it missed some rather
//! than pass a short list off as all of them. A loopback server streams
//! the reply in OpenAI's wire format; the tools run for real in a
//! temporary workspace. On a current-thread runtime, so that the reader
//! runs only when the worker yields, after the whole round: the overflow
//! then happens every time.

#[path = "../agent-fsm/tests/support/replay.rs"]
mod replay;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_fsm::llm::OpenAiConfig;
use agent_fsm_examples::coding_agent::demo::run_demo;
use agent_fsm_examples::coding_agent::{LoomEffects, Workspace, prepare_workspace, run_session};
use replay::{ReplayServer, Reply};
use serde_json::{Value, json};

/// More calls than the executor's default notification log holds even
/// while a subscriber waits (twice its 256), so that the round overflows it
/// whatever the timing.
const CALLS: usize = 600;

fn chunk(delta: Value, finish_reason: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    });
    format!("data: {body}\n\n")
}

/// The first turn: `CALLS` `list_files` calls in one reply; the second:
/// the answer.
fn replies() -> Vec<Reply> {
    let mut calls = chunk(json!({"role": "assistant", "content": ""}), None);
    for index in 0..CALLS {
        let call = json!({"index": index, "id": format!("call_{index}"), "type": "function",
            "function": {"name": "list_files", "arguments": "{}"}});
        calls += &chunk(json!({ "tool_calls": [call] }), None);
    }
    calls += &chunk(json!({}), Some("tool_calls"));
    calls += "data: [DONE]\n\n";
    let answer = chunk(json!({"role": "assistant", "content": "Listed."}), None)
        + &chunk(json!({}), Some("stop"))
        + "data: [DONE]\n\n";
    vec![Reply::events(&calls), Reply::events(&answer)]
}

#[tokio::test]
async fn every_call_of_a_huge_round_is_counted() {
    let server = ReplayServer::start(replies()).await;
    let llm = OpenAiConfig::new("sk-test").base_url(format!("{}/v1", server.url())).build().expect("client");
    let dir = tempfile::tempdir().expect("temp dir");
    prepare_workspace(dir.path()).expect("workspace");
    let effects = LoomEffects::new(Arc::new(llm), "gpt-test", Workspace::new(dir.path())).expect("effects");
    let seen = Arc::new(Mutex::new(0usize));
    let counter = Arc::clone(&seen);
    let session = run_session(effects, &["list the files"], move |n| {
        if let agent_fsm::runtime::Notification::Lagged(_) = n
            && let Ok(mut lagged) = counter.lock()
        {
            *lagged += 1;
        }
    });
    let summary =
        tokio::time::timeout(Duration::from_secs(60), session).await.expect("the session ends").expect("session");
    assert_eq!(summary.tool_calls, CALLS, "every call the agent ran");
    assert_eq!(server.requests().len(), 2);
    assert!(*seen.lock().expect("lagged") > 0, "the round overflowed the log, as this test needs");
}

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_demo_says_it_missed_calls_it_did_not_print() {
    let server = ReplayServer::start(replies()).await;
    let args =
        ["--provider", "openai", "--base-url", &format!("{}/v1", server.url()), "--model", "m"].map(str::to_owned);
    let out = Captured::default();
    let report = tokio::time::timeout(Duration::from_secs(60), run_demo(args, |_| None, out.clone()))
        .await
        .expect("the demo ends")
        .expect("demo");
    let printed = String::from_utf8(out.0.lock().expect("output").clone()).expect("utf-8");
    assert_eq!(report.summary.tool_calls, CALLS);
    assert!(printed.contains(&format!(", {CALLS} tool calls, ended in")), "{printed}");
    let listed = printed.lines().filter(|l| l.trim_start().starts_with("tool: list_files")).count();
    assert!(listed < CALLS, "the round overflowed the log, as this test needs");
    assert!(printed.contains("notifications missed"), "{printed}");
}
