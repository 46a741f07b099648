//! Listing a large directory: the workspace's `listing` and the model's
//! `list_files` tool show at most the limit of names, the first in sorted
//! order whatever order the directory yields them in, and say how many
//! more there are; `list_files` on the workspace itself still returns every
//! name.
#![cfg(unix)]

use agent_fsm::llm::ToolCall;
use agent_fsm::tool::workspace_tools;
use agent_fsm::tools::{DEFAULT_MAX_LISTED, Listing, ToolError};
use serde_json::json;

mod tools_support;

use tools_support::{HANG, fixture};

/// Makes `count` empty files in `dir`, named so that the order they are
/// made in is not their sorted order.
fn make_files(dir: &std::path::Path, count: usize) -> Vec<String> {
    std::fs::create_dir_all(dir).expect("dir");
    let mut names: Vec<String> = (0..count).map(|i| format!("f{:05}", (i * 7_919) % count)).collect();
    for name in &names {
        std::fs::write(dir.join(name), "").expect("file");
    }
    names.sort();
    names
}

#[tokio::test]
async fn a_directory_over_the_limit_lists_its_first_names_and_counts_the_rest() {
    let f = fixture();
    let names = make_files(&f.inside.join("big"), 2_500);
    let listing = tokio::time::timeout(HANG, f.ws.listing("big")).await.expect("in time").expect("listing");
    assert_eq!(listing.names.len(), DEFAULT_MAX_LISTED);
    assert_eq!(listing.names, names[..DEFAULT_MAX_LISTED]);
    assert_eq!(listing.more, 2_500 - DEFAULT_MAX_LISTED);

    // Every name, still, from the workspace's own call.
    assert_eq!(f.ws.list_files("big").await.expect("list"), names);

    let small = f.ws.clone().with_max_listed(3);
    let listing = small.listing("big").await.expect("listing");
    assert_eq!(listing, Listing { names: names[..3].to_vec(), more: 2_497 });
    let text = listing.to_text();
    assert_eq!(text, "f00000\nf00001\nf00002\n(2497 more names not shown: the first 3 in sorted order are listed)");

    let none = f.ws.clone().with_max_listed(0).listing("big").await.expect("listing");
    assert_eq!(none, Listing { names: Vec::new(), more: 2_500 });
    assert_eq!(none.to_text(), "(2500 more names not shown: the first 0 in sorted order are listed)");
}

#[tokio::test]
async fn a_directory_within_the_limit_is_listed_whole() {
    let f = fixture();
    let names = make_files(&f.inside.join("few"), 5);
    let exact = f.ws.clone().with_max_listed(5).listing("few").await.expect("listing");
    assert_eq!(exact, Listing { names: names.clone(), more: 0 });
    assert_eq!(exact.to_text(), names.join("\n"));
    let root = f.ws.listing("").await.expect("listing");
    assert_eq!(root, Listing { names: vec!["few".into(), "inside.txt".into(), "sub".into()], more: 0 });
    assert_eq!(Listing { names: Vec::new(), more: 0 }.to_text(), "");
}

#[tokio::test]
async fn the_model_tool_shows_a_large_directory_cut_with_a_count() {
    let f = fixture();
    let names = make_files(&f.inside.join("big"), 1_200);
    let tools = workspace_tools(f.ws.clone().with_max_listed(2));
    let definition = tools.definitions().into_iter().find(|d| d.name == "list_files").expect("list_files");
    assert!(definition.description.contains("how many more"), "the model is told a listing can be cut");
    let call = ToolCall { id: "1".into(), name: "list_files".into(), arguments: json!({"path": "big"}) };
    let result = tokio::time::timeout(HANG, tools.call(&call)).await.expect("in time");
    assert!(!result.is_error, "{result:?}");
    assert_eq!(
        result.content,
        format!("{}\n{}\n(1198 more names not shown: the first 2 in sorted order are listed)", names[0], names[1])
    );
    let escape = ToolCall { id: "2".into(), name: "list_files".into(), arguments: json!({"path": ".."}) };
    assert!(tools.call(&escape).await.is_error, "the limit changes nothing of the confinement");
    let outside = f.ws.listing(&f.outside.display().to_string()).await;
    assert!(matches!(outside, Err(ToolError::OutsideWorkspace { .. })), "{outside:?}");
}
