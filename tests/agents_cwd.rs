//! The reference agents' workspaces, given a relative root, keep naming
//! that directory when the process changes its current directory: the
//! coding agent's file tools (opened at the first call) and shell, and the
//! Sketch agent's `bash` and `git` check. Alone in its binary: the current
//! directory is the whole process's.
#![cfg(unix)]

use std::time::Duration;

use agent_fsm_examples::loom::ToolCall;
use serde_json::{Value, json};

/// Long enough for a `sh` or `git` run on a loaded machine; a hang fails.
const LIMIT: Duration = Duration::from_secs(20);

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall { id: format!("call-{name}"), name: name.to_owned(), arguments }
}

/// `ws` holds the workspace's marker and is a git repository with one
/// commit; `elsewhere/ws`, where a relative `ws` leads once the current
/// directory is `elsewhere`, holds a decoy's marker and no repository.
/// Both agents' workspaces are made from `ws` in `base`, then the current
/// directory moves to `elsewhere`.
#[tokio::test]
async fn a_relative_workspace_stays_put_when_the_current_directory_changes() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let base = tmp.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(base.join("ws")).expect("ws");
    std::fs::create_dir_all(base.join("elsewhere/ws")).expect("decoy");
    std::fs::write(base.join("ws/marker"), "the workspace\n").expect("marker");
    std::fs::write(base.join("elsewhere/ws/marker"), "the decoy\n").expect("decoy marker");
    agent_fsm_examples::sketch_agent::prepare_workspace(&base.join("ws")).await.expect("git repository");
    let head = agent_fsm_examples::sketch_agent::head(&base.join("ws")).await.expect("HEAD").expect("a commit");

    std::env::set_current_dir(&base).expect("cd");
    let coding = agent_fsm_examples::coding_agent::Workspace::new("ws");
    let sketch = agent_fsm_examples::sketch_agent::Workspace::new("ws");
    std::env::set_current_dir(base.join("elsewhere")).expect("cd elsewhere");

    // The coding agent's tools open the directory at their first call.
    let read = tokio::time::timeout(LIMIT, coding.run(&call("read_file", json!({ "path": "marker" }))))
        .await
        .expect("in time");
    assert_eq!(read.expect("read"), json!("the workspace\n"), "the file tools open the workspace");
    let ran = tokio::time::timeout(LIMIT, coding.run(&call("run_command", json!({ "command": "cat marker" }))))
        .await
        .expect("in time");
    assert_eq!(ran.expect("ran"), json!("the workspace\n"), "the coding agent's shell runs in the workspace");
    assert_eq!(coding.root(), base.join("ws"));

    let bash = tokio::time::timeout(LIMIT, sketch.run(&call("bash", json!({ "command": "cat marker" }))))
        .await
        .expect("in time");
    assert_eq!(bash.expect("ran"), "the workspace\n", "Sketch's bash runs in the workspace");
    let checked =
        tokio::time::timeout(LIMIT, agent_fsm_examples::sketch_agent::head(sketch.root())).await.expect("in time");
    assert_eq!(checked.expect("HEAD"), Some(head), "the git check reads the workspace's repository");
    assert_eq!(sketch.root(), base.join("ws"));
}
