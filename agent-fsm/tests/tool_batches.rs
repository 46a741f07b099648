//! A model's reply whose tool calls change one file of the workspace,
//! run at once as the set runs a reply's calls: every edit that reports
//! success is in the file afterwards, none undone by another edit that
//! read the file before it was written.

#![cfg(all(feature = "tool", feature = "tools", unix))]

use agent_fsm::llm::ToolCall;
use agent_fsm::tool::workspace_tools;
use agent_fsm::tools::Workspace;
use serde_json::json;
use std::time::Duration;

fn edit(id: usize, old: &str, new: &str) -> ToolCall {
    ToolCall {
        id: format!("call_{id}"),
        name: "edit_file".into(),
        arguments: json!({"path": "src/lib.rs", "old_text": old, "new_text": new}),
    }
}

/// Sixteen edits of one file in one reply, each of its own line, run
/// together: each is reported done, and each is in the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_of_one_file_in_one_reply_all_land() {
    let root = tempfile::tempdir().expect("a temp dir");
    std::fs::create_dir(root.path().join("src")).expect("src");
    let lines: Vec<String> = (0..16).map(|n| format!("let value_{n} = {n};")).collect();
    std::fs::write(root.path().join("src/lib.rs"), lines.join("\n")).expect("the file");
    let tools = workspace_tools(Workspace::open(root.path()).expect("the workspace"));

    let calls: Vec<ToolCall> =
        (0..16).map(|n| edit(n, &format!("value_{n} = {n};"), &format!("value_{n} = {};", n * 100))).collect();
    let results = tokio::time::timeout(Duration::from_secs(20), tools.call_all(&calls)).await.expect("in time");
    for (call, result) in calls.iter().zip(&results) {
        assert!(!result.is_error, "{}: {}", call.id, result.content);
    }
    let text = std::fs::read_to_string(root.path().join("src/lib.rs")).expect("read");
    let expected: Vec<String> = (0..16).map(|n| format!("let value_{n} = {};", n * 100)).collect();
    assert_eq!(text, expected.join("\n"), "an edit reported done is missing");
}

/// A write of a file and edits of it in one reply: the edits do not write
/// back the file as it was before the write. Whichever order they run
/// in, the file ends as one of the orders would leave it, never with the
/// write undone after an edit of the new contents succeeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_beside_a_write_does_not_undo_it() {
    let root = tempfile::tempdir().expect("a temp dir");
    std::fs::create_dir(root.path().join("src")).expect("src");
    std::fs::write(root.path().join("src/lib.rs"), "old a\nold b\n").expect("the file");
    let tools = workspace_tools(Workspace::open(root.path()).expect("the workspace"));
    for round in 0..20 {
        std::fs::write(root.path().join("src/lib.rs"), "old a\nold b\n").expect("the file");
        let write = ToolCall {
            id: "w".into(),
            name: "write_file".into(),
            arguments: json!({"path": "src/lib.rs", "content": "new a\nnew b\n"}),
        };
        // Matches the old contents and the new alike.
        let calls = [edit(0, "a\n", "A\n"), write, edit(1, "b\n", "B\n")];
        let results = tokio::time::timeout(Duration::from_secs(20), tools.call_all(&calls)).await.expect("in time");
        assert!(results.iter().all(|r| !r.is_error), "round {round}: {results:?}");
        let text = std::fs::read_to_string(root.path().join("src/lib.rs")).expect("read");
        assert!(text.starts_with("new "), "round {round}: the write was undone: {text:?}");
    }
}
