//! The workspace tools called as a model calls them: tool calls through
//! the typed set (`workspace_tools`) on a real directory, each answered
//! with the result the model reads, none reaching outside the workspace.

#![cfg(all(feature = "tool", feature = "tools", unix))]

use agent_fsm::llm::{ToolCall, ToolResult};
use agent_fsm::tool::workspace_tools_with;
use agent_fsm::tools::{ShellOptions, Workspace};
use serde_json::{Value, json};
use std::time::Duration;

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments }
}

fn result(id: &str, content: &str, is_error: bool) -> ToolResult {
    ToolResult { call_id: id.into(), content: content.into(), is_error }
}

#[tokio::test]
async fn model_calls_go_through_the_set_to_the_confined_workspace() {
    let outside = tempfile::tempdir().expect("tempdir");
    let root = outside.path().join("workspace");
    std::fs::create_dir(&root).expect("workspace dir");
    std::fs::write(outside.path().join("secret"), "outside").expect("secret");
    let shell = ShellOptions::default().with_timeout(Duration::from_secs(30));
    let defaults = agent_fsm::tool::workspace_tools(Workspace::open(&root).expect("workspace"));
    assert!(defaults.definitions()[4].description.contains("It is killed after 60s"));
    let tools = workspace_tools_with(Workspace::open(&root).expect("workspace"), shell);
    assert_eq!(
        tools.names().collect::<Vec<_>>(),
        ["read_file", "write_file", "edit_file", "list_files", "run_command"]
    );
    assert_eq!(
        tools.definitions()[2].parameters,
        json!({"type": "object", "description": "The arguments of `edit_file`.", "properties": {
            "path": {"type": "string", "description": "The file's path, relative to the workspace."},
            "old_text": {"type": "string", "description": "The text to replace, copied exactly from the file; it must occur\nonce."},
            "new_text": {"type": "string", "description": "The text to put in its place."},
        }, "required": ["path", "old_text", "new_text"], "additionalProperties": false})
    );

    // One call after another, as a model works.
    let steps = [
        (
            call("1", "write_file", json!({"path": "src/greet.sh", "content": "echo Hello, wrold\n"})),
            result("1", "wrote 18 bytes to `src/greet.sh`", false),
        ),
        (
            call("2", "edit_file", json!({"path": "src/greet.sh", "old_text": "wrold", "new_text": "world"})),
            result("2", "edited `src/greet.sh`", false),
        ),
        (call("3", "read_file", json!({"path": "src/greet.sh"})), result("3", "echo Hello, world\n", false)),
        (call("4", "list_files", json!({})), result("4", "src", false)),
        (call("5", "list_files", json!({"path": "src"})), result("5", "greet.sh", false)),
        (call("6", "run_command", json!({"command": "sh src/greet.sh"})), result("6", "Hello, world\n", false)),
        (
            call("7", "edit_file", json!({"path": "src/greet.sh", "old_text": "planet", "new_text": "x"})),
            result(
                "7",
                "`edit_file` failed: the text to replace is not in `src/greet.sh`; read the file and copy the text exactly",
                true,
            ),
        ),
        (
            call("8", "read_file", json!({"path": "../secret"})),
            result(
                "8",
                "`read_file` failed: `../secret` is not a path inside the workspace: paths are relative to it and may not lead out of it, by `..` or through a symlink",
                true,
            ),
        ),
        (
            call("9", "write_file", json!({"path": "/tmp/x"})),
            result("9", "invalid arguments for `write_file`: missing field `content`", true),
        ),
        (
            call("10", "run_command", json!({"command": "echo oops; exit 3"})),
            result("10", "`run_command` failed: exit 3: oops\n", true),
        ),
        // A key the tool does not take is named, not ignored: a misspelled
        // `path` would otherwise list the workspace, a `timeout` would
        // seem set.
        (
            call("11", "list_files", json!({"directory": "src"})),
            result(
                "11",
                "invalid arguments for `list_files`: at `directory`: unknown field `directory`, expected `path`",
                true,
            ),
        ),
        (
            call("12", "run_command", json!({"command": "touch ran", "timeout": 600})),
            result(
                "12",
                "invalid arguments for `run_command`: at `timeout`: unknown field `timeout`, expected `command`",
                true,
            ),
        ),
    ];
    for (call, expected) in steps {
        let got = tokio::time::timeout(Duration::from_secs(60), tools.call(&call)).await.expect("the call ends");
        assert_eq!(got, expected, "for {call:?}");
    }
    assert_eq!(std::fs::read_to_string(root.join("src/greet.sh")).expect("the file"), "echo Hello, world\n");
    assert_eq!(std::fs::read_to_string(outside.path().join("secret")).expect("the secret"), "outside");
    assert!(!root.join("ran").exists(), "a call with an unknown key runs nothing");
}
