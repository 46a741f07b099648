//! A workspace opened by a relative path keeps naming that directory when
//! the process changes its current directory: the shell runs there and
//! `host_path` points there, as the file tools, which hold the directory
//! itself, still do. Alone in its binary: the current directory is the
//! whole process's.
#![cfg(unix)]

use agent_fsm::tools::{ShellOptions, Workspace};
use std::time::Duration;

/// After a change of the current directory to one that holds a directory
/// of the same relative name (a decoy), the shell still runs in the
/// workspace, and `host_path` still names the workspace's file, not the
/// decoy's.
#[tokio::test]
async fn a_relative_workspace_stays_put_when_the_current_directory_changes() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let base = tmp.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(base.join("ws")).expect("ws");
    std::fs::create_dir_all(base.join("elsewhere/ws")).expect("decoy");
    std::fs::write(base.join("ws/marker"), "the workspace\n").expect("marker");
    std::fs::write(base.join("elsewhere/ws/marker"), "the decoy\n").expect("decoy marker");

    std::env::set_current_dir(&base).expect("cd");
    let ws = Workspace::open("ws").expect("open");
    std::env::set_current_dir(base.join("elsewhere")).expect("cd elsewhere");

    assert_eq!(ws.read_file("marker").await.expect("read"), "the workspace\n");
    let options = ShellOptions::default().with_timeout(Duration::from_secs(10));
    let run = ws.run_command("cat marker", &options).await.expect("ran");
    assert_eq!(run.into_result().expect("succeeded"), "the workspace\n", "the shell runs in the workspace");
    let host = ws.host_path("marker").expect("inside");
    assert_eq!(std::fs::read_to_string(&host).expect("host path"), "the workspace\n", "{}", host.display());
    assert_eq!(ws.root(), base.join("ws"));
}
