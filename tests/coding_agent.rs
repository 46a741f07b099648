//! The demo agent's session, end to end: real files, a real shell command,
//! the Loom machine under the executor. Asserts what the example shows.

#[path = "support/coding_agent.rs"]
mod demo_session;

use agent_fsm_examples::coding_agent::{LoomEffects, ScriptedLlm, Workspace, prepare_workspace, run_session};
use demo_session::{STATES, TASK};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_session_fixes_the_file_for_real() {
    let dir = tempfile::tempdir().expect("temp dir");
    prepare_workspace(dir.path()).expect("workspace");
    let effects =
        LoomEffects::new(Arc::new(ScriptedLlm { delay: Duration::ZERO }), "scripted", Workspace::new(dir.path()))
            .expect("effects");
    let summary = run_session(effects, &[TASK], |_| {}).await.expect("session");

    let fixed = std::fs::read_to_string(dir.path().join("greeting.sh")).expect("file");
    assert_eq!(fixed, "#!/bin/sh\necho \"Hello, world\"\n");
    assert_eq!(summary.states, STATES);
    assert_eq!(summary.tool_calls, 4);
    assert_eq!(summary.final_state, "ShuttingDown");
}

#[tokio::test]
async fn tools_stay_inside_the_workspace() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ws = Workspace::new(dir.path());
    let call = |name: &str, args: serde_json::Value| agent_fsm_examples::loom::ToolCall {
        id: "1".into(),
        name: name.into(),
        arguments: args,
    };
    let escape = ws.run(&call("read_file", serde_json::json!({ "path": "../etc/passwd" }))).await;
    assert!(escape.expect_err("escape refused").message.contains("is not a path inside the workspace"));
    let absolute = ws.run(&call("write_file", serde_json::json!({ "path": "/tmp/x", "content": "" }))).await;
    assert!(absolute.is_err());
    let unknown = ws.run(&call("rm_rf", serde_json::json!({}))).await;
    assert!(unknown.expect_err("unknown tool").message.contains("unknown tool"));
    let failing = ws.run(&call("run_command", serde_json::json!({ "command": "exit 3" }))).await;
    assert!(failing.expect_err("non-zero exit").message.starts_with("exit 3"));
}

#[tokio::test]
async fn a_symlink_out_of_the_workspace_is_refused_and_edits_match_once() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (inside, outside) = (tmp.path().join("ws"), tmp.path().join("outside"));
    std::fs::create_dir(&inside).expect("ws");
    std::fs::create_dir(&outside).expect("outside");
    std::fs::write(outside.join("secret"), "secret").expect("secret");
    std::os::unix::fs::symlink(outside.join("secret"), inside.join("link")).expect("symlink");
    std::fs::write(inside.join("twice.txt"), "a a").expect("file");
    let ws = Workspace::new(&inside);
    let call = |name: &str, args: serde_json::Value| agent_fsm_examples::loom::ToolCall {
        id: "1".into(),
        name: name.into(),
        arguments: args,
    };
    for (tool, args) in [
        ("read_file", serde_json::json!({ "path": "link" })),
        ("write_file", serde_json::json!({ "path": "link", "content": "pwned" })),
        ("edit_file", serde_json::json!({ "path": "link", "old": "secret", "new": "pwned" })),
    ] {
        let refused = ws.run(&call(tool, args)).await.expect_err("refused");
        assert!(refused.message.contains("is not a path inside the workspace"), "{tool}: {}", refused.message);
    }
    assert_eq!(std::fs::read_to_string(outside.join("secret")).expect("secret"), "secret");
    let twice = ws.run(&call("edit_file", serde_json::json!({ "path": "twice.txt", "old": "a", "new": "b" }))).await;
    assert!(twice.expect_err("ambiguous").message.contains("occurs 2 times"));
    let listed = ws.run(&call("list_files", serde_json::json!({}))).await.expect("list");
    assert_eq!(listed, serde_json::json!("link\ntwice.txt"));
}

/// Output the demo writes, kept for the assertions.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_demo_run_reports_what_it_did_and_a_continued_one_that_it_did_nothing() {
    use agent_fsm_examples::coding_agent::demo::run_demo;
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("session.db");
    let args = || ["--store".to_owned(), store.display().to_string()];
    let first = tokio::time::timeout(Duration::from_secs(60), run_demo(args(), |_| None, Captured::default()))
        .await
        .expect("the demo ends")
        .expect("demo");
    assert!(first.fixed && !first.paused, "{}", first.greeting);
    // Every state but the shutdown's: a durable session's stop is a pause.
    assert_eq!(first.summary.states, STATES[..STATES.len() - 1]);
    assert_eq!(first.summary.tool_calls, 4);
    assert_eq!((first.summary.turns, first.summary.final_state), (1, "WaitingForUserInput"));

    let out = Captured::default();
    let again = tokio::time::timeout(Duration::from_secs(60), run_demo(args(), |_| None, out.clone()))
        .await
        .expect("the demo ends")
        .expect("demo");
    // Nothing is performed again: the hops it shows are the log's steps
    // after the store's newest snapshot, replayed without their actions.
    assert_eq!((again.summary.turns, again.summary.tool_calls), (0, 0), "{:?}", again.summary);
    assert!(again.summary.transitions < first.summary.transitions, "{:?}", again.summary);
    assert_eq!(again.summary.states.last(), Some(&"WaitingForUserInput"));
    let printed = String::from_utf8(out.0.lock().expect("output").clone()).expect("utf-8");
    let line =
        format!("this run: {} transitions, 0 tool calls, ended in WaitingForUserInput", again.summary.transitions);
    assert!(printed.contains("a session continued after its step") && printed.contains(&line), "{printed}");
}

/// The programs the agents run themselves (`git` for the sketch agent's
/// commits, a formatter) do not get the variables that tie `git` to another
/// repository, however they reached the command: inherited from a git hook
/// that started the agent, or set on it.
#[tokio::test]
async fn the_agents_own_programs_run_without_git_s_repository_variables() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", "env"]);
    for name in agent_fsm::tools::GIT_REPOSITORY_VARIABLES {
        command.env(name, "/elsewhere");
    }
    command.env("GIT_AUTHOR_NAME", "kept");
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        agent_fsm_examples::coding_agent::output_of(&mut command, dir.path()),
    )
    .await
    .expect("env ends")
    .expect("env runs");
    let env = String::from_utf8_lossy(&output.stdout);
    let left: Vec<&str> = env.lines().filter(|line| line.contains("/elsewhere")).collect();
    assert!(left.is_empty(), "left in the command's environment: {left:?}");
    assert!(env.lines().any(|line| line == "GIT_AUTHOR_NAME=kept"), "other variables stay: {env}");
    assert!(env.lines().any(|line| line == "GIT_TERMINAL_PROMPT=0"), "{env}");
}
