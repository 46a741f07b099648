//! An agent that is a subreaper (PID 1 of a container is one) becomes the
//! parent of a command's background processes once the shell exits: the
//! shell tool kills them with the group, and must reap them too, or each
//! command leaves them as zombies for the life of the agent, whether it
//! exits, times out or is dropped. Alone in its binary: being a subreaper
//! is the whole process's.
#![cfg(target_os = "linux")]

use agent_fsm::tools::{ShellOptions, Workspace};
use rustix::process::{getpid, set_child_subreaper};
use std::time::Duration;

/// Bounds the wait for the kernel to deliver the kills and for the reaps.
const HANG: Duration = Duration::from_secs(10);

/// The children of this process, dead or alive, whose process group is
/// `pgid`.
fn children_in(pgid: i32) -> Vec<(i32, char)> {
    let me = getpid().as_raw_nonzero().get();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // After the command's name, in parentheses: state, parent, group.
        let Some((_, rest)) = stat.rsplit_once(") ") else { continue };
        let fields: Vec<&str> = rest.split(' ').collect();
        let (Some(state), Some(ppid), Some(pgrp)) = (fields.first(), fields.get(1), fields.get(2)) else { continue };
        if ppid.parse() == Ok(me) && pgrp.parse() == Ok(pgid) {
            found.push((pid, state.chars().next().unwrap_or('?')));
        }
    }
    found
}

/// Waits (bounded) until this process has no child left in `pgid`, not
/// even a zombie.
async fn assert_all_reaped(pgid: i32) {
    let reaped = tokio::time::timeout(HANG, async {
        while !children_in(pgid).is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    if reaped.await.is_err() {
        panic!("children of the command's group {pgid} left: {:?}", children_in(pgid));
    }
}

/// The background processes of a command that exits, of one that times
/// out and of one whose call is dropped end up this process's children:
/// they are killed and reaped, none left as a zombie.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subreaper_is_left_no_zombie_by_a_command() {
    set_child_subreaper(Some(getpid())).expect("a subreaper");
    let tmp = tempfile::tempdir().expect("temp dir");
    let ws = Workspace::open(tmp.path()).expect("open");
    let options = ShellOptions::default().with_timeout(HANG);
    // `$$` is the shell's pid, the group's id; the subshell of the
    // pipeline has children of its own.
    let exited = ws.run_command("echo $$; sleep 1000 & (sleep 1000 | cat) & exit 0", &options).await.expect("ran");
    assert!(exited.success(), "{exited:?}");
    let pgid: i32 = exited.output.trim().parse().expect("the shell's pid");
    assert_all_reaped(pgid).await;

    let options = ShellOptions::default().with_timeout(Duration::from_secs(3));
    let timed_out =
        ws.run_command("echo $$; sleep 1000 & (sleep 1000 | cat) & touch started; wait", &options).await.expect("ran");
    assert!(timed_out.timed_out, "{timed_out:?}");
    assert!(tmp.path().join("started").exists(), "the background processes were started before the timeout");
    let pgid: i32 = timed_out.output.trim().parse().expect("the shell's pid");
    assert_all_reaped(pgid).await;

    let options = ShellOptions::default().with_timeout(HANG);
    let call =
        ws.run_command("sleep 1000 & (sleep 1000 | cat) & echo $$ > pgid.tmp && mv pgid.tmp pgid; wait", &options);
    let started = async {
        loop {
            if let Ok(pgid) = std::fs::read_to_string(tmp.path().join("pgid")) {
                return pgid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    // The call is dropped once its background processes run.
    let pgid = tokio::select! {
        ended = call => panic!("the command ended: {ended:?}"),
        pgid = tokio::time::timeout(HANG, started) => pgid.expect("the command started"),
    };
    assert_all_reaped(pgid.trim().parse().expect("the shell's pid")).await;
}
