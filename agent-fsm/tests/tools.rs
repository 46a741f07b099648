//! The workspace tools against real directories and real `sh` processes:
//! no path (symlinks to files and directories, relative ones, ones the
//! shell made, `..`, absolute paths) leads out of the workspace, a
//! command's background children die with it (timeout, cancel, exit), one
//! that left its group does not hold the call, and output over the cap is
//! cut and says so.
#![cfg(unix)]

use agent_fsm::tools::{ShellOptions, ToolError};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

mod tools_support;

use tools_support::{Fixture, HANG, fixture};

fn is_outside<T: std::fmt::Debug>(result: Result<T, ToolError>) -> bool {
    match result {
        Err(ToolError::OutsideWorkspace { path }) => !path.is_empty(),
        other => {
            eprintln!("not refused as outside: {other:?}");
            false
        }
    }
}

impl Fixture {
    /// Every file tool through `path` is refused, and nothing outside
    /// changed.
    async fn assert_all_refused(&self, path: &str) {
        let ws = &self.ws;
        assert!(is_outside(ws.read_file(path).await), "read_file {path}");
        assert!(is_outside(ws.write_file(path, "pwned").await), "write_file {path}");
        assert!(is_outside(ws.edit_file(path, "top", "pwned").await), "edit_file {path}");
        assert!(is_outside(ws.host_path(path)), "host_path {path}");
        self.assert_outside_untouched();
    }
}

#[tokio::test]
async fn a_symlink_to_a_file_outside_is_refused() {
    let f = fixture();
    symlink(f.outside.join("secret"), f.inside.join("link")).expect("symlink");
    f.assert_all_refused("link").await;
    f.assert_all_refused("./sub/../link").await;
}

#[tokio::test]
async fn a_symlink_to_a_directory_outside_is_refused() {
    let f = fixture();
    symlink(&f.outside, f.inside.join("door")).expect("symlink");
    f.assert_all_refused("door/secret").await;
    assert!(is_outside(f.ws.list_files("door").await));
    // Creating the parent directories must not go through it either.
    assert!(is_outside(f.ws.write_file("door/new/file", "pwned").await));
    assert!(is_outside(f.ws.write_file("door/new", "pwned").await));
    f.assert_outside_untouched();
}

#[tokio::test]
async fn a_relative_symlink_that_climbs_out_is_refused() {
    let f = fixture();
    symlink("../outside/secret", f.inside.join("rel")).expect("symlink");
    symlink("../../outside", f.inside.join("sub/up")).expect("symlink");
    f.assert_all_refused("rel").await;
    f.assert_all_refused("sub/up/secret").await;
    assert!(is_outside(f.ws.list_files("sub/up").await));
}

#[tokio::test]
async fn a_dangling_symlink_out_is_not_created_through() {
    let f = fixture();
    symlink(f.outside.join("planted"), f.inside.join("dangling")).expect("symlink");
    assert!(is_outside(f.ws.write_file("dangling", "pwned").await));
    f.assert_outside_untouched();
}

#[tokio::test]
async fn symlinks_that_stay_inside_are_followed() {
    let f = fixture();
    symlink("inside.txt", f.inside.join("alias")).expect("symlink");
    symlink("..", f.inside.join("sub/parent")).expect("symlink");
    assert_eq!(f.ws.read_file("alias").await.expect("read"), "inside\n");
    assert_eq!(f.ws.read_file("sub/parent/inside.txt").await.expect("read"), "inside\n");
    f.ws.edit_file("alias", "inside", "edited").await.expect("edit");
    assert_eq!(std::fs::read_to_string(f.inside.join("inside.txt")).expect("read"), "edited\n");
    // The edit replaced the link's target, not the link.
    assert!(std::fs::symlink_metadata(f.inside.join("alias")).expect("alias").is_symlink());
    // A link whose target is not there yet is written through, creating it.
    symlink("later.txt", f.inside.join("pending")).expect("symlink");
    f.ws.write_file("pending", "later").await.expect("write through a dangling inside link");
    assert_eq!(std::fs::read_to_string(f.inside.join("later.txt")).expect("created"), "later");
    assert!(std::fs::symlink_metadata(f.inside.join("pending")).expect("pending").is_symlink());
    assert!(f.ws.list_files("sub/parent").await.expect("list").contains(&"inside.txt".to_owned()));
    // Writing through a symlinked directory that stays inside, existing or
    // new below it.
    f.ws.write_file("sub/parent/new.txt", "new").await.expect("write through an inside link");
    f.ws.write_file("sub/parent/deeper/new.txt", "new").await.expect("write below an inside link");
    assert_eq!(std::fs::read_to_string(f.inside.join("deeper/new.txt")).expect("written"), "new");
}

/// A write replaces the file's contents and keeps its permissions (an
/// executable script stays executable), and leaves no other name behind.
#[tokio::test]
async fn a_write_keeps_the_file_mode_and_leaves_nothing_beside() {
    use std::os::unix::fs::PermissionsExt as _;
    let f = fixture();
    let script = f.inside.join("run.sh");
    std::fs::write(&script, "#!/bin/sh\n").expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).expect("chmod");
    let before = f.ws.list_files("").await.expect("list");
    f.ws.write_file("run.sh", "#!/bin/sh\necho hi\n").await.expect("write");
    f.ws.edit_file("run.sh", "hi", "there").await.expect("edit");
    assert_eq!(std::fs::read_to_string(&script).expect("read"), "#!/bin/sh\necho there\n");
    let mode = std::fs::metadata(&script).expect("meta").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o750, "the mode is kept: {mode:o}");
    assert_eq!(f.ws.list_files("").await.expect("list"), before, "no other name is left");
    // Run as root, a write keeps the file's owner too (elsewhere the
    // process cannot give a file away, and the new file is its own).
    if rustix::process::geteuid().is_root() {
        use std::os::unix::fs::MetadataExt as _;
        std::os::unix::fs::chown(&script, Some(12_345), Some(23_456)).expect("chown");
        f.ws.write_file("run.sh", "#!/bin/sh\n").await.expect("write");
        let meta = std::fs::metadata(&script).expect("meta");
        assert_eq!((meta.uid(), meta.gid()), (12_345, 23_456), "the owner is kept");
        assert_eq!(meta.permissions().mode() & 0o7777, 0o750, "and the mode");
    }
}

/// A write whose path climbs out after directories that do not exist yet
/// is refused before any of them is made: nothing is left inside either.
#[tokio::test]
async fn a_write_that_climbs_out_makes_no_directory_first() {
    let f = fixture();
    let before = f.ws.list_files("").await.expect("list");
    for path in ["new/../../outside/x", "new/deeper/../../../outside/x", "a/b/../../../x"] {
        assert!(is_outside(f.ws.write_file(path, "pwned").await), "{path}");
    }
    assert_eq!(f.ws.list_files("").await.expect("list"), before, "no directory was made inside");
    f.assert_outside_untouched();
    // One that climbs back without leaving is still written, through a
    // directory that exists or one that is made on the way.
    f.ws.write_file("sub/../made/x", "made").await.expect("through an existing directory");
    assert_eq!(std::fs::read_to_string(f.inside.join("made/x")).expect("made"), "made");
    f.ws.write_file("new/../kept/x", "kept").await.expect("through a new directory");
    assert_eq!(std::fs::read_to_string(f.inside.join("kept/x")).expect("kept"), "kept");
}

/// The new file a write left behind when its process was killed before
/// the rename is not listed: a run killed and resumed lists what a run
/// never killed lists. A name only like it is listed.
#[tokio::test]
async fn a_write_left_behind_by_a_killed_process_is_not_listed() {
    let f = fixture();
    let before = f.ws.list_files("").await.expect("list");
    std::fs::write(f.inside.join(".agent-fsm-write-4242-7"), "half").expect("left behind");
    std::fs::write(f.inside.join("sub/.agent-fsm-write-1-0"), "half").expect("left behind");
    assert_eq!(f.ws.list_files("").await.expect("list"), before);
    assert!(!f.ws.list_files("sub").await.expect("list").iter().any(|n| n.starts_with(".agent-fsm")));
    assert!(!f.ws.listing("").await.expect("listing").to_text().contains(".agent-fsm"));
    for similar in [".agent-fsm-write-notes", ".agent-fsm-write-1-", ".agent-fsm-write--1"] {
        std::fs::write(f.inside.join(similar), "mine").expect("a file of the user's");
        assert!(f.ws.list_files("").await.expect("list").contains(&similar.to_owned()), "{similar}");
    }
}

/// A hard link inside to a file outside reads as that file, but a write
/// replaces the name inside: the file outside keeps its contents.
#[tokio::test]
async fn a_write_to_a_hard_link_leaves_the_file_outside_as_it_was() {
    let f = fixture();
    std::fs::hard_link(f.outside.join("secret"), f.inside.join("linked")).expect("hard link");
    let secret = std::fs::read_to_string(f.outside.join("secret")).expect("secret");
    assert_eq!(f.ws.read_file("linked").await.expect("read"), secret);
    f.ws.write_file("linked", "mine").await.expect("write");
    assert_eq!(std::fs::read_to_string(f.inside.join("linked")).expect("read"), "mine");
    f.assert_outside_untouched();
}

#[tokio::test]
async fn a_symlink_made_by_the_shell_tool_is_refused() {
    let f = fixture();
    let options = ShellOptions::default().with_timeout(HANG);
    let outside = f.outside.display();
    let made =
        f.ws.run_command(
            &format!("ln -s '{outside}/secret' made && ln -s '{outside}' madedir && ln -s ../outside rel"),
            &options,
        )
        .await
        .expect("ran");
    assert!(made.success(), "{made:?}");
    f.assert_all_refused("made").await;
    f.assert_all_refused("madedir/secret").await;
    f.assert_all_refused("rel/secret").await;
    assert!(is_outside(f.ws.list_files("madedir").await));
}

#[tokio::test]
async fn dot_dot_above_the_workspace_is_refused() {
    let f = fixture();
    f.assert_all_refused("../outside/secret").await;
    f.assert_all_refused("sub/../../outside/secret").await;
    f.assert_all_refused("..").await;
    assert!(is_outside(f.ws.list_files("..").await));
    assert!(is_outside(f.ws.write_file("../outside/new", "pwned").await));
    f.assert_outside_untouched();
    // A `..` that stays inside is an ordinary path.
    assert_eq!(f.ws.read_file("sub/../inside.txt").await.expect("read"), "inside\n");
}

#[tokio::test]
async fn absolute_paths_are_refused_even_inside() {
    let f = fixture();
    f.assert_all_refused(&f.outside.join("secret").display().to_string()).await;
    assert!(is_outside(f.ws.read_file(&f.inside.join("inside.txt").display().to_string()).await));
    assert!(is_outside(f.ws.list_files("/").await));
    assert!(is_outside(f.ws.write_file(&f.outside.join("new").display().to_string(), "pwned").await));
    f.assert_outside_untouched();
}

#[tokio::test]
async fn the_file_tools_work_and_fail_plainly_inside() {
    let f = fixture();
    let ws = &f.ws;
    ws.write_file("a/b/c.txt", "one two two\n").await.expect("write creates parents");
    assert_eq!(std::fs::read_to_string(f.inside.join("a/b/c.txt")).expect("on disk"), "one two two\n");
    assert_eq!(ws.list_files("").await.expect("list"), ["a", "inside.txt", "sub"]);
    assert_eq!(ws.list_files("a/b").await.expect("list"), ["c.txt"]);

    assert!(matches!(ws.edit_file("a/b/c.txt", "two", "2").await, Err(ToolError::EditAmbiguous { count: 2, .. })));
    let empty = ws.edit_file("a/b/c.txt", "", "2").await;
    assert!(matches!(empty, Err(ToolError::EditEmpty { .. })), "{empty:?}");
    ws.write_file("empty", "").await.expect("write");
    // An empty file holds the empty text once; still refused.
    assert!(matches!(ws.edit_file("empty", "", "2").await, Err(ToolError::EditEmpty { .. })));
    assert_eq!(ws.read_file("empty").await.expect("read"), "", "a refused edit changes nothing");
    assert_eq!(ws.root(), f.inside);
    assert!(matches!(ws.edit_file("a/b/c.txt", "three", "3").await, Err(ToolError::EditNotFound { .. })));
    assert_eq!(ws.read_file("a/b/c.txt").await.expect("read"), "one two two\n", "a refused edit changes nothing");
    ws.edit_file("a/b/c.txt", "one", "1").await.expect("edit");
    assert_eq!(ws.read_file("a/b/c.txt").await.expect("read"), "1 two two\n");

    assert!(matches!(ws.read_file("missing").await, Err(ToolError::NotFound { .. })));
    std::fs::write(f.inside.join("bin"), [0xff, 0xfe, 0]).expect("binary");
    assert!(matches!(ws.read_file("bin").await, Err(ToolError::NotUtf8 { .. })));
    assert!(matches!(ws.read_file("sub").await, Err(ToolError::NotAFile { .. })));
    assert!(matches!(ws.write_file("sub", "x").await, Err(ToolError::NotAFile { .. })));
    assert!(matches!(ws.write_file("inside.txt/x", "").await, Err(ToolError::Io { .. })), "a parent that is a file");
    assert_eq!(ws.host_path("sub/new.rs").expect("inside"), f.inside.join("sub/new.rs"));
    assert!(is_outside(ws.host_path("missing/../../outside/secret")));
    let message = ws.read_file("../outside/secret").await.expect_err("outside").to_string();
    assert_eq!(
        message,
        "`../outside/secret` is not a path inside the workspace: paths are relative to it and may not lead out of it, by `..` or through a symlink"
    );
}

/// A path that names a directory by its text (`new/`, `new/.`) is not
/// written as the file `new`, a name the model did not give and cannot
/// read back by its own path: it is refused, and nothing is made, not
/// even the directories before a last `..`.
#[tokio::test]
async fn a_write_to_a_path_naming_a_directory_makes_nothing() {
    let f = fixture();
    for path in ["new/", "new/.", "new//", "sub/new/", "made/..", "./"] {
        let written = f.ws.write_file(path, "x").await;
        assert!(matches!(written, Err(ToolError::NotAFile { .. })), "{path}: {written:?}");
    }
    assert_eq!(f.ws.list_files("").await.expect("list"), ["inside.txt", "sub"], "nothing was made");
    assert_eq!(f.ws.list_files("sub").await.expect("list"), Vec::<String>::new());
    f.ws.write_file("sub/new", "x").await.expect("the same name without the slash is a file");
    symlink(&f.outside, f.inside.join("door")).expect("symlink");
    assert!(is_outside(f.ws.write_file("door/", "pwned").await));
    assert!(is_outside(f.ws.write_file("sub/../../", "pwned").await));
    f.assert_outside_untouched();
}

/// The state letter of a process, `None` once it is gone.
fn state_of(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parens.
    let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let pgrp = rest.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

/// Whether `pid` still runs: a zombie waiting for its reaper does not.
fn running(pid: i32) -> bool {
    state_of(pid).is_some_and(|(state, _)| !matches!(state, 'Z' | 'X'))
}

/// Live processes whose process group is `pgid`.
fn live_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| state_of(pid).is_some_and(|(state, pgrp)| pgrp == pgid && !matches!(state, 'Z' | 'X')))
        .collect()
}

/// Waits (bounded) for `pid` to stop running and its group to be empty:
/// the kernel delivers `SIGKILL` soon, not at once.
async fn assert_dies(pid: i32, pgid: i32) {
    for _ in 0..500 {
        if !running(pid) && live_members(pgid).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("process {pid} still runs, or its group {pgid} still has {:?}", live_members(pgid));
}

/// The pid a command wrote to `name` in the workspace, once it is there
/// (failing after [`HANG`]: a command killed before it wrote it never will).
async fn pid_in(dir: &Path, name: &str) -> i32 {
    let written = tokio::time::timeout(HANG, async {
        loop {
            if let Ok(text) = std::fs::read_to_string(dir.join(name))
                && let Ok(pid) = text.trim().parse()
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    written.await.unwrap_or_else(|_| panic!("no pid in `{name}` after {HANG:?}"))
}

#[tokio::test]
async fn a_timeout_kills_the_whole_group() {
    let f = fixture();
    let options = ShellOptions::default().with_timeout(Duration::from_millis(500));
    let run = tokio::time::timeout(
        HANG,
        f.ws.run_command("echo $$ > shell; sleep 1000 & echo $! > child; echo started; wait", &options),
    )
    .await
    .expect("returns after its own timeout")
    .expect("ran");
    assert!(run.timed_out && !run.success());
    assert!(run.output.contains("started"), "output before the kill is kept: {run:?}");
    let message = run.clone().into_result().expect_err("timed out");
    assert!(matches!(message, ToolError::TimedOut { .. }));
    assert!(message.to_string().starts_with("the command timed out after 500ms"), "{message}");
    let (shell, child) = (pid_in(&f.inside, "shell").await, pid_in(&f.inside, "child").await);
    assert_dies(child, shell).await;
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_group() {
    let f = fixture();
    let options = ShellOptions::default().with_timeout(Duration::from_secs(1000));
    let call = f.ws.run_command("echo $$ > shell; sleep 1000 & echo $! > child; wait", &options);
    let (shell, child) = tokio::time::timeout(HANG, async {
        tokio::pin!(call);
        tokio::select! {
            done = &mut call => panic!("the command ended: {done:?}"),
            pids = async { (pid_in(&f.inside, "shell").await, pid_in(&f.inside, "child").await) } => pids,
        }
        // `call` is dropped here, mid-run.
    })
    .await
    .expect("the command started");
    assert_dies(child, shell).await;
    assert_dies(shell, shell).await;
}

#[tokio::test]
async fn a_background_child_does_not_outlive_the_shell() {
    let f = fixture();
    let options = ShellOptions::default().with_timeout(Duration::from_secs(1000));
    // One child keeps the output pipe open, which would hold the call
    // until the timeout; one let go of it.
    let command = "sleep 1000 & echo $! > held; sleep 1000 > /dev/null 2>&1 & echo $! > freed; echo $$";
    let run = tokio::time::timeout(HANG, f.ws.run_command(command, &options))
        .await
        .expect("returns once the shell exits")
        .expect("ran");
    assert!(run.success() && !run.timed_out, "{run:?}");
    let shell: i32 = run.output.trim().parse().expect("the shell's pid");
    for name in ["held", "freed"] {
        assert_dies(pid_in(&f.inside, name).await, shell).await;
    }
}

/// A process that leaves the group (`setsid`) is not killed, but holding
/// the output pipe it does not keep the call past the shell's exit either:
/// the shell's output is returned, the command not timed out.
#[tokio::test]
async fn a_process_that_left_the_group_does_not_hold_the_call() {
    let f = fixture();
    let options = ShellOptions::default().with_timeout(HANG);
    let command = "setsid sh -c 'echo $$ > escaped; while :; do echo tick; sleep 0.1; done' & \
                   while [ ! -s escaped ]; do sleep 0.01; done; echo done";
    let run = tokio::time::timeout(2 * HANG, f.ws.run_command(command, &options)).await.expect("returns").expect("ran");
    let escaped = pid_in(&f.inside, "escaped").await;
    let _ = std::process::Command::new("kill").args(["-KILL", &escaped.to_string()]).status();
    assert!(run.success() && !run.timed_out, "{run:?}");
    assert!(run.output.contains("done\n"), "{run:?}");
}

/// What a command writes just before it exits is all returned, however
/// its exit and its last output reach the runtime: the call may see the
/// exit first, and then reads what the pipe holds.
#[tokio::test]
async fn the_whole_output_of_a_command_that_exits_at_once_is_returned() {
    let f = fixture();
    let options = ShellOptions::default().with_timeout(HANG);
    for round in 0..100 {
        // 24 KiB: under the cap and the pipe's size, so the shell writes
        // it all and exits without waiting for the reader.
        let run =
            tokio::time::timeout(HANG, f.ws.run_command("head -c 24576 /dev/zero | tr '\\0' y; echo END", &options))
                .await
                .expect("in time")
                .expect("ran");
        assert_eq!(run.output.len(), 24576 + 4, "round {round}: {} bytes", run.output.len());
        assert!(run.output.ends_with("yEND\n"), "round {round}");
    }
}

#[tokio::test]
async fn output_over_the_cap_keeps_head_and_tail_and_says_the_cut() {
    let f = fixture();
    let cap = 64 * 1024;
    let options = ShellOptions::default().with_timeout(HANG).with_output_cap(cap);
    let size: u64 = 50 * 1024 * 1024;
    let command = format!("echo START; echo to-stderr >&2; head -c {size} /dev/zero | tr '\\0' x; echo; echo END");
    let before = peak_rss_kib();
    let run = tokio::time::timeout(HANG, f.ws.run_command(&command, &options)).await.expect("in time").expect("ran");
    let grown = peak_rss_kib().saturating_sub(before);
    assert!(run.success(), "{:?}", run.status);
    let total = size + "START\nto-stderr\n\nEND\n".len() as u64;
    assert_eq!(run.total_bytes, total);
    assert_eq!(run.cut_bytes, total - cap as u64);
    assert!(run.output.starts_with("START\nto-stderr\nxxx"), "head kept, stdout and stderr in order");
    assert!(run.output.ends_with("xxx\nEND\n"), "tail kept");
    let said = format!("\n[... {} bytes cut ...]\n", total - cap as u64);
    assert!(run.output.contains(&said), "the cut is said");
    assert_eq!(run.output.len(), cap + said.len());
    // The whole output would be 50 MiB; what stays is the cap plus a read
    // buffer. The peak is the whole test process's, so allow slack.
    assert!(grown < 16 * 1024, "peak memory grew by {grown} KiB");
}

/// The process's peak resident set, in KiB (0 where unknown).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_failing_command_says_its_exit_code_and_output() {
    let f = fixture();
    let options = ShellOptions::default().with_timeout(HANG);
    let run = f.ws.run_command("pwd -P; echo oops >&2; exit 3", &options).await.expect("ran");
    assert_eq!((run.status.code(), run.timed_out, run.cut_bytes, run.success()), (Some(3), false, 0, false));
    let expected_dir = std::fs::canonicalize(&f.inside).expect("canonical");
    assert_eq!(run.output, format!("{}\noops\n", expected_dir.display()), "runs in the workspace");
    let error = run.into_result().expect_err("failed");
    assert_eq!(error.to_string(), format!("exit 3: {}\noops\n", expected_dir.display()));
    let ok = f.ws.run_command("echo fine", &options).await.expect("ran");
    assert_eq!(ok.into_result().expect("succeeded"), "fine\n");
}

/// A FIFO a shell command made in the workspace is neither read nor
/// written: opening it would block a thread until something wrote or read
/// the other end, which nothing ever does.
#[tokio::test]
async fn a_fifo_made_by_the_shell_is_refused_without_blocking() {
    let f = fixture();
    let made = f.ws.run_command("mkfifo pipe", &ShellOptions::default()).await.expect("mkfifo");
    assert!(made.status.success(), "mkfifo: {}", made.output);
    let read = tokio::time::timeout(HANG, f.ws.read_file("pipe")).await.expect("read_file blocked on a FIFO");
    assert!(matches!(read, Err(ToolError::NotAFile { .. })), "{read:?}");
    let write = tokio::time::timeout(HANG, f.ws.write_file("pipe", "x")).await.expect("write_file blocked on a FIFO");
    assert!(matches!(write, Err(ToolError::NotAFile { .. })), "{write:?}");
    let edit = tokio::time::timeout(HANG, f.ws.edit_file("pipe", "a", "b")).await.expect("edit_file blocked on a FIFO");
    assert!(matches!(edit, Err(ToolError::NotAFile { .. })), "{edit:?}");
}

/// A file over the workspace's limit is refused with its size, not read
/// whole into memory; one at the limit is read.
#[tokio::test]
async fn a_file_over_the_size_limit_is_refused() {
    let f = fixture();
    let ws = f.ws.clone().with_max_file_bytes(8);
    std::fs::write(f.inside.join("eight"), "12345678").expect("eight");
    std::fs::write(f.inside.join("nine"), "123456789").expect("nine");
    assert_eq!(ws.read_file("eight").await.expect("at the limit"), "12345678");
    let refused = ws.read_file("nine").await;
    assert!(matches!(refused, Err(ToolError::TooLarge { size: 9, max: 8, .. })), "{refused:?}");
    assert!(refused.expect_err("too large").to_string().contains("9 bytes, over the 8-byte limit"));
    assert_eq!(agent_fsm::tools::DEFAULT_MAX_FILE_BYTES, 1 << 20);
    assert_eq!(f.ws.read_file("nine").await.expect("default limit"), "123456789");
}
