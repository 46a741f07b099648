//! The workspace tools against a hostile model and a hostile command: the
//! arguments a model may write (NUL bytes, names too long, symlink loops,
//! FIFOs, sockets and devices where a file or a directory is expected) each
//! end at once in an error result, with nothing outside touched; an edit
//! whose text occurs twice, overlapping, is refused rather than made at the
//! first; a name with a line break in it is listed as one name, written
//! so the model can name it back; and a command whose shell leaves its
//! process group still ends at its timeout; output that is not text is
//! returned within the cap like any other; and `git` in the workspace is not
//! pointed at the agent's repository by the variables a git hook sets.
#![cfg(unix)]

use agent_fsm::llm::ToolCall;
use agent_fsm::tool::workspace_tools_with;
use agent_fsm::tools::{ShellOptions, ToolError};
use serde_json::{Value, json};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

mod tools_support;

use tools_support::{HANG, fixture};

/// Whether `pid` still runs: a zombie waiting for its reaper does not.
fn running(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, None | Some("Z" | "X"))
}

/// `SIGKILL` to `pid` when dropped: a process that escaped the call is
/// not left behind by a failing test.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let mut kill = std::process::Command::new("kill");
        let _ = kill.args(["-KILL", &self.0.to_string()]).stderr(std::process::Stdio::null()).status();
    }
}

/// A shell that `exec`s a program which moves itself into another process
/// group of the session (here the test's own) is out of reach of the kill
/// sent to its group. The call must still end at its timeout, with the
/// shell killed, rather than wait for the program to exit.
#[tokio::test]
async fn a_shell_that_moves_to_another_group_still_ends_at_its_timeout() {
    let f = fixture();
    let options = ShellOptions::default().with_timeout(Duration::from_millis(500));
    let command = r#"exec perl -e '$| = 1; open(my $f, ">", "pid") or die; print $f $$; close $f;
        setpgrp(0, getpgrp(getppid())) or die "setpgrp: $!"; print "moved\n"; sleep 1000'"#;
    let call = tokio::time::timeout(HANG, f.ws.run_command(command, &options)).await;
    let pid: i32 = std::fs::read_to_string(f.inside.join("pid")).expect("the pid").trim().parse().expect("a pid");
    let _reaper = KillOnDrop(pid);
    let run = call.expect("the call ended at its timeout").expect("ran");
    assert!(run.timed_out && !run.success(), "{run:?}");
    assert_eq!(run.output, "moved\n", "the program left its group before the timeout");
    assert!(!running(pid), "the shell was killed");
}

/// A [`ToolCall`] of `name` with `arguments`, as a provider delivers it.
fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall { id: "1".into(), name: name.into(), arguments }
}

/// Arguments no file can answer: each call ends in an error result, at once
/// (no FIFO's other end waited for, no loop followed), and nothing outside
/// the workspace is created or changed.
#[tokio::test]
async fn hostile_paths_end_in_error_results() {
    let f = fixture();
    symlink("loop", f.inside.join("loop")).expect("loop");
    symlink("l2", f.inside.join("l1")).expect("l1");
    symlink("l1", f.inside.join("l2")).expect("l2");
    symlink("../outside/absent", f.inside.join("dangling_out")).expect("dangling");
    let made = std::process::Command::new("mkfifo").arg(f.inside.join("fifo")).status().expect("mkfifo");
    assert!(made.success());
    let _socket = std::os::unix::net::UnixListener::bind(f.inside.join("socket")).expect("socket");
    let tools = workspace_tools_with(f.ws.clone(), ShellOptions::default().with_timeout(HANG));
    let long_name = "a".repeat(300);
    let long_path = ["b"; 3000].join("/");
    let mut calls = Vec::new();
    for path in ["a\0b", "", ".", "..", "sub/", "inside.txt/", &long_name, &long_path, "loop", "l1", "loop/x"] {
        calls.push(call("read_file", json!({"path": path})));
        calls.push(call("write_file", json!({"path": path, "content": "pwned"})));
        calls.push(call("edit_file", json!({"path": path, "old_text": "inside", "new_text": "pwned"})));
    }
    for path in ["fifo", "socket", "fifo/x", "dangling_out", "dangling_out/x"] {
        calls.push(call("read_file", json!({"path": path})));
        calls.push(call("write_file", json!({"path": path, "content": "pwned"})));
    }
    for path in ["a\0b", "..", &long_name, &long_path, "loop", "l1", "fifo", "socket", "inside.txt", "dangling_out"] {
        calls.push(call("list_files", json!({"path": path})));
    }
    for arguments in [json!({"path": 3}), json!({}), json!("{not json"), json!(null), json!(["inside.txt"])] {
        calls.push(call("read_file", arguments));
    }
    calls.push(call("run_command", json!({"command": "echo a\0b"})));
    for c in &calls {
        let result = tokio::time::timeout(HANG, tools.call(c)).await.expect("the call ended");
        assert!(result.is_error, "{} {}: {result:?}", c.name, c.arguments);
        assert!(!result.content.is_empty(), "the model is told why");
    }
    assert_eq!(std::fs::read_to_string(f.inside.join("inside.txt")).expect("inside"), "inside\n");
    f.assert_outside_untouched();
}

/// An edit's text that occurs twice, the second starting inside the first
/// (two line ends of three in a row), could mean either: it is refused as
/// ambiguous, and the file left as it was, rather than edited at the first.
#[tokio::test]
async fn an_edit_whose_text_occurs_twice_overlapping_is_ambiguous() {
    let f = fixture();
    // Three line ends in a row hold two line ends twice, overlapping.
    let code = "fn a() {}\n\n\nfn b() {}\n";
    for (text, old) in [(code, "\n\n"), ("aaa", "aa"), ("ééé", "éé"), ("ababab", "abab")] {
        f.ws.write_file("f.rs", text).await.expect("write");
        let edit = f.ws.edit_file("f.rs", old, "X").await;
        assert!(matches!(edit, Err(ToolError::EditAmbiguous { count: 2, .. })), "{old:?} in {text:?}: {edit:?}");
        assert_eq!(f.ws.read_file("f.rs").await.expect("read"), text, "a refused edit changes nothing");
    }
    // Text that occurs once is still edited, beside a partial match too.
    for (text, old, edited) in [("aab", "aa", "Xb"), ("ab-ba", "ab", "X-ba"), ("éa", "é", "Xa")] {
        f.ws.write_file("f.rs", text).await.expect("write");
        f.ws.edit_file("f.rs", old, "X").await.expect("one occurrence");
        assert_eq!(f.ws.read_file("f.rs").await.expect("read"), edited);
    }
}

/// A name holding a line break (which a cloned repository or a command can
/// make) is one name: listed as a JSON string, not as two lines that could
/// pass for two names or for the line saying how many were left out, and
/// read back by the path the model decodes from that line. So is a name
/// that would read as that line by itself.
#[tokio::test]
async fn a_name_with_a_line_break_is_listed_as_one_name() {
    let f = fixture();
    let odd = [
        "x\nfake.txt",
        "(7 more names not shown)\n",
        "(2 more names not shown: the first 9 in sorted order are listed)",
        "tab\there",
        "\"quoted",
        "esc\u{1b}[31m",
        "sep\u{2028}arator",
        "back\\slash",
    ];
    for name in odd {
        std::fs::write(f.inside.join(name), name).expect("odd name");
    }
    let tools = workspace_tools_with(f.ws.clone(), ShellOptions::default());
    let listed = tools.call(&call("list_files", json!({}))).await;
    assert!(!listed.is_error, "{listed:?}");
    let lines: Vec<&str> = listed.content.lines().collect();
    let mut expected: Vec<String> = odd.iter().map(|n| (*n).to_owned()).collect();
    expected.extend(["inside.txt".to_owned(), "sub".to_owned()]);
    expected.sort();
    assert_eq!(lines.len(), expected.len(), "one line a name: {lines:?}");
    // Nothing was left out: no line may read as the one saying so.
    assert!(!lines.iter().any(|line| line.starts_with('(')), "a name reads as the count left out: {lines:?}");
    for (line, name) in lines.iter().zip(&expected) {
        // What the model takes from the line: a JSON string decoded, any
        // other line as it is.
        let path: String = if line.starts_with('"') {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"))
        } else {
            (*line).to_owned()
        };
        assert_eq!(&path, name, "{line}");
        if !odd.contains(&name.as_str()) {
            assert_eq!(line, name, "a plain name is shown as it is");
        } else {
            // Only what must be escaped is: the rest reads as it is.
            for word in name.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| w.len() >= 3) {
                assert!(line.contains(word), "{word:?} not shown as it is in {line}");
            }
            let read = tools.call(&call("read_file", json!({"path": path}))).await;
            assert_eq!((read.is_error, read.content.as_str()), (false, name.as_str()), "read back by {line}");
        }
    }
}

/// Set, to the agent's `.git`, in the copy of this test binary that runs as
/// an agent started by a git hook would, with git's variables for that
/// repository.
const AGENT_GIT_DIR: &str = "AGENT_FSM_TEST_AGENT_GIT_DIR";

/// An agent run from a git hook (or a `git -c` alias) inherits the
/// variables that tie `git` to the agent's repository: `GIT_DIR` and
/// `GIT_INDEX_FILE`, but also `GIT_OBJECT_DIRECTORY` and `GIT_COMMON_DIR`.
/// A commit made by the model's command in the workspace must land in the
/// workspace's repository, not write into the agent's. The variables are
/// process-wide, so the check runs in a copy of this binary started with
/// them set.
#[tokio::test]
async fn git_in_the_workspace_is_not_pointed_at_the_agents_repository() {
    const NAME: &str = "git_in_the_workspace_is_not_pointed_at_the_agents_repository";
    if let Some(agent_git) = std::env::var_os(AGENT_GIT_DIR) {
        return commit_in_the_workspace(Path::new(&agent_git)).await;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let agent = tmp.path().join("agent");
    let made = std::process::Command::new("git").args(["init", "-q"]).arg(&agent).status().expect("git");
    assert!(made.success());
    let git = agent.join(".git");
    let run = tokio::process::Command::new(std::env::current_exe().expect("this binary"))
        .args([NAME, "--exact", "--nocapture"])
        .env(AGENT_GIT_DIR, &git)
        .env("GIT_DIR", &git)
        .env("GIT_INDEX_FILE", git.join("index"))
        .env("GIT_OBJECT_DIRECTORY", git.join("objects"))
        .env("GIT_COMMON_DIR", &git)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let run = tokio::time::timeout(HANG, run).await.expect("the copy ended").expect("the copy ran");
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success() && stdout.contains("1 passed"), "{stdout}\n{stderr}");
    assert_eq!(objects_in(&git.join("objects")), 0, "nothing was written into the agent's repository");
}

/// In the copy with the agent's variables: a commit in a new repository in
/// the workspace.
async fn commit_in_the_workspace(agent_git: &Path) {
    assert!(std::env::var_os("GIT_OBJECT_DIRECTORY").is_some(), "run with the agent's variables");
    let f = fixture();
    let command = "git init -q . && echo hi > f && git add f && \
                   git -c user.name=t -c user.email=t@t commit -qm one && git rev-parse --absolute-git-dir";
    let options = ShellOptions::default().with_timeout(HANG);
    let run = tokio::time::timeout(HANG, f.ws.run_command(command, &options)).await.expect("in time").expect("ran");
    assert!(run.success(), "{run:?}");
    let own = std::fs::canonicalize(&f.inside).expect("canonical").join(".git");
    assert_eq!(run.output.trim(), own.display().to_string(), "the workspace's repository");
    assert!(objects_in(&own.join("objects")) >= 3, "the commit, its tree and its blob");
    assert_eq!(objects_in(&agent_git.join("objects")), 0, "nothing in the agent's repository");
}

/// The loose objects under `objects`.
fn objects_in(objects: &Path) -> usize {
    let Ok(dirs) = std::fs::read_dir(objects) else { return 0 };
    dirs.filter_map(Result::ok)
        .filter(|d| d.file_name().len() == 2)
        .map(|d| std::fs::read_dir(d.path()).map_or(0, Iterator::count))
        .sum()
}

/// Output that is not UTF-8 (a binary `cat`) is shown as U+FFFD, three bytes
/// of text a byte: the text the model reads stays within the cap all the
/// same, whether the bytes printed were over the cap or under it.
#[tokio::test]
async fn output_that_is_not_text_is_returned_within_the_cap() {
    let f = fixture();
    let cap = 1024;
    let options = ShellOptions::default().with_timeout(HANG).with_output_cap(cap);
    for (bytes, command) in [
        (100_000, "head -c 100000 /dev/zero | tr '\\0' '\\377'"),
        (1_000, "head -c 1000 /dev/zero | tr '\\0' '\\377'"),
        (3_000, "for i in $(seq 1000); do printf 'a\\351\\377'; done"),
    ] {
        let run = tokio::time::timeout(HANG, f.ws.run_command(command, &options)).await.expect("in time").expect("ran");
        assert!(run.success() && run.total_bytes == bytes, "{command}: {run:?}");
        let said = format!("\n[... {} bytes cut ...]\n", run.cut_bytes);
        assert!(run.cut_bytes > 0 && run.output.contains(&said), "{command}: the cut is said");
        let shown = run.output.len() - said.len();
        assert!(shown <= cap && shown > cap - 8, "{command}: {shown} bytes of text for a {cap}-byte cap");
    }
}
