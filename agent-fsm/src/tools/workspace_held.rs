//! Unit tests of where the workspace's shell starts: in the directory the
//! file tools hold, entered by its handle, even when the workspace's path
//! leads elsewhere by the time the shell starts (a child of `workspace`,
//! to start the shell past the check of that path).

use super::super::ShellOptions;
use super::Workspace;
use std::os::unix::fs::symlink;

/// The workspace opened through a symlink that then points elsewhere: the
/// shell started as the workspace starts it, after its check, runs in the
/// directory the workspace was opened at, not where the path leads now.
#[cfg(target_os = "linux")]
#[test]
fn the_shell_enters_the_held_directory_not_the_path() {
    let root = tempfile::tempdir().expect("a temp dir");
    for (name, marker) in [("a", "held"), ("b", "elsewhere")] {
        std::fs::create_dir(root.path().join(name)).expect("a directory");
        std::fs::write(root.path().join(name).join("marker"), marker).expect("a marker");
    }
    let link = root.path().join("ws");
    symlink(root.path().join("a"), &link).expect("the link");
    let workspace = Workspace::open(&link).expect("the workspace");
    // Repointed, as between the check and the start.
    std::fs::remove_file(&link).expect("unlinked");
    symlink(root.path().join("b"), &link).expect("repointed");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let ran = runtime.block_on(super::super::shell::run_in(
        &workspace.held_cwd(),
        workspace.root(),
        "cat marker; echo x > written",
        &ShellOptions::default(),
    ));
    let ran = ran.expect("the shell ran");
    assert_eq!(ran.output, "held", "{ran:?}");
    assert!(root.path().join("a/written").exists(), "the command wrote in the held directory");
    assert!(!root.path().join("b/written").exists(), "and nothing where the path leads now");
    // Through the workspace's own call, the check answers first.
    let refused = runtime.block_on(workspace.run_command("true", &ShellOptions::default()));
    assert!(matches!(refused, Err(super::ToolError::Moved { .. })), "{refused:?}");
}
