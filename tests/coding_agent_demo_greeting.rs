//! The demo reads `greeting.sh` at its end as the agent's file tools read
//! it, confined to the workspace: whatever the model's commands left under
//! that name (a FIFO, a symlink to a file outside), the demo neither waits
//! on it for ever nor prints what lies outside the workspace. Run against a
//! loopback server speaking OpenAI's streaming format, with the model's
//! shell command run for real in the demo's temporary workspace.

#[path = "../agent-fsm/tests/support/replay.rs"]
mod replay;

use std::sync::mpsc;
use std::time::Duration;

use agent_fsm_examples::coding_agent::demo::{DemoReport, run_demo};
use replay::{ReplayServer, Reply};
use serde_json::{Value, json};

/// How long the demo may take before the test fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(60);

fn chunk(delta: &Value, finish_reason: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    });
    format!("data: {body}\n\n")
}

/// A reply with one `run_command` call of `command`.
fn run_command_reply(command: &str) -> Reply {
    let arguments = json!({ "command": command }).to_string();
    let mut sse = chunk(
        &json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "run_command", "arguments": arguments}}]}),
        None,
    );
    sse += &chunk(&json!({}), Some("tool_calls"));
    sse += "data: [DONE]\n\n";
    Reply::events(&sse)
}

/// A reply with text only, ending the turn.
fn text_reply(text: &str) -> Reply {
    let mut sse = chunk(&json!({"role": "assistant", "content": text}), None);
    sse += &chunk(&json!({}), Some("stop"));
    sse += "data: [DONE]\n\n";
    Reply::events(&sse)
}

/// Runs the demo against a model that runs `command` and then says it is
/// done; its result and what it printed. The demo runs on a thread of its
/// own, so that a demo stuck in a blocking read fails the test after
/// [`LIMIT`] instead of hanging it.
fn demo_after(command: &str) -> (Result<DemoReport, String>, String) {
    let (sent, received) = mpsc::channel();
    let command = command.to_owned();
    std::thread::spawn(move || {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
        runtime.block_on(async move {
            let server = ReplayServer::start(vec![run_command_reply(&command), text_reply("Done.")]).await;
            let args = ["--provider", "openai", "--base-url", &format!("{}/v1", server.url()), "--model", "m"]
                .map(str::to_owned);
            let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-test".to_owned());
            let out = Captured::default();
            let report = run_demo(args, env, out.clone()).await.map_err(|e| e.to_string());
            let printed = String::from_utf8_lossy(&out.0.lock().expect("output")).into_owned();
            let _ = sent.send((report, printed));
        });
    });
    received.recv_timeout(LIMIT).expect("the demo ends instead of waiting for ever on greeting.sh")
}

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_fifo_left_as_greeting_sh_ends_the_demo_with_an_error_instead_of_a_hang() {
    let (report, printed) = demo_after("rm greeting.sh && mkfifo greeting.sh");
    assert!(printed.contains("tool: run_command"), "{printed}");
    let error = report.expect_err("greeting.sh is no longer a file");
    assert!(error.contains("greeting.sh") && error.contains("not a regular file"), "{error}");
}

#[test]
fn a_symlink_out_of_the_workspace_as_greeting_sh_is_not_read() {
    let outside = tempfile::tempdir().expect("a directory outside the workspace");
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "the secret outside the workspace\n").expect("secret");
    let (report, printed) = demo_after(&format!("ln -sf '{}' greeting.sh", secret.display()));
    assert!(printed.contains("tool: run_command"), "{printed}");
    let error = report.expect_err("greeting.sh leads out of the workspace");
    assert!(error.contains("not a path inside the workspace"), "{error}");
    assert!(!printed.contains("the secret") && !error.contains("the secret"), "{printed}\n{error}");
}
