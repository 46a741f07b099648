//! The workspace file tools while another process changes the workspace
//! under them, as a shell command left running would: a directory swapped
//! for a symlink out of the workspace, a file swapped for a FIFO, a hard
//! link of a file outside made and removed under a dangling symlink, the
//! workspace's own symlink repointed as the shell starts, each many
//! thousand times during the calls, and a file growing while it is read.
//! Nothing outside is touched, no command runs elsewhere, no call blocks,
//! and no read returns more than the limit.
#![cfg(unix)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread::JoinHandle;

mod tools_support;

use tools_support::{HANG, fixture};

/// A thread that points the symlink `dir/name` at `b`, then `a`, then `b`
/// again, each swap one `rename`, until `stop`; it returns the swaps made.
/// The link points at `a` before this returns: a tool called at once must
/// not find the name free (it would create a directory there, which no
/// rename of a symlink replaces).
fn swapping(dir: &Path, name: &str, a: PathBuf, b: PathBuf, stop: &Arc<AtomicBool>) -> JoinHandle<u64> {
    let (target, tmp) = (dir.join(name), dir.join(format!(".{name}.next")));
    symlink(&a, &target).expect("the first link");
    let stop = Arc::clone(stop);
    std::thread::spawn(move || {
        let mut swaps = 1u64;
        while !stop.load(Ordering::Relaxed) {
            let _ = std::fs::remove_file(&tmp);
            symlink(if swaps.is_multiple_of(2) { &a } else { &b }, &tmp).expect("symlink");
            std::fs::rename(&tmp, &target).expect("rename");
            swaps += 1;
        }
        swaps
    })
}

/// `call` run `times` times while the swaps go on; whether any one did
/// not return within [`HANG`].
async fn any_blocked<F: Future>(times: usize, mut call: impl FnMut() -> F) -> bool {
    for _ in 0..times {
        if tokio::time::timeout(HANG, call()).await.is_err() {
            return true;
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_symlink_out_is_never_written_through() {
    let f = fixture();
    std::fs::create_dir(f.inside.join("real")).expect("real");
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = swapping(&f.inside, "d", "real".into(), f.outside.clone(), &stop);
    let mut written = 0;
    for i in 0..1000 {
        // New directories below the swapped one, a file in them, and the
        // secret's name read, written and edited through it.
        written += usize::from(f.ws.write_file(&format!("d/n{i}/deep/file.txt"), "pwned").await.is_ok());
        if let Ok(text) = f.ws.read_file("d/secret").await {
            assert_ne!(text, "top secret\n", "read the file outside");
        }
        let _ = f.ws.write_file("d/secret", "pwned").await;
        let _ = f.ws.edit_file("d/secret", "top", "pwned").await;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    assert!(swaps > 100 && written > 0, "the race ran: {swaps} swaps, {written} writes inside");
    f.assert_outside_untouched();
}

/// The file tools check a path's kind, then open it: a FIFO swapped in
/// between is found on the opened handle (opened without waiting for the
/// FIFO's other end) and refused, rather than blocking the call for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_swapped_for_a_fifo_after_the_check_does_not_block() {
    let f = fixture();
    std::fs::write(f.inside.join("plain"), "plain\n").expect("plain");
    let fifo = f.inside.join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = swapping(&f.inside, "f", "plain".into(), "pipe".into(), &stop);
    let read_blocked = any_blocked(10_000, || f.ws.read_file("f")).await;
    let write_blocked = any_blocked(10_000, || f.ws.write_file("f", "plain\n")).await;
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("swapper");
    // A blocked open returns once the FIFO has both ends, which lets the
    // runtime shut down.
    let _both_ends = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).expect("open the FIFO");
    assert!(!read_blocked, "read_file blocked on a FIFO swapped in after its check");
    assert!(!write_blocked, "write_file blocked on a FIFO swapped in after its check");
}

/// The size is checked before the read and again during it: a file that
/// grows past the limit in between is refused, never returned whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_growing_while_it_is_read_is_never_returned_past_the_limit() {
    const MAX: u64 = 64 * 1024;
    let f = fixture();
    let ws = f.ws.clone().with_max_file_bytes(MAX);
    let path = f.inside.join("log");
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU32::new(0));
    let grower = {
        let (path, stop, rounds) = (path.clone(), Arc::clone(&stop), Arc::clone(&rounds));
        std::thread::spawn(move || {
            use std::io::Write as _;
            let line = [b'x'; 4096];
            while !stop.load(Ordering::Relaxed) {
                // Starts small each round, then grows past the limit.
                let mut file = std::fs::File::create(&path).expect("create");
                for _ in 0..32 {
                    file.write_all(&line).expect("append");
                }
                rounds.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let (mut calls, mut read, mut refused) = (0u32, 0u32, 0u32);
    // At least 5,000 reads, and on until the race has run (the grower made
    // its rounds, the reads found the file both within and over the
    // limit), however the threads are scheduled on a loaded machine.
    let raced = tokio::time::timeout(HANG, async {
        while calls < 5000 || rounds.load(Ordering::Relaxed) <= 10 || read == 0 || refused == 0 {
            calls += 1;
            match ws.read_file("log").await {
                Ok(text) => {
                    assert!(text.len() as u64 <= MAX, "read {} bytes over the {MAX}-byte limit", text.len());
                    read += 1;
                }
                Err(_) => refused += 1,
            }
        }
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    grower.join().expect("grower");
    let rounds = rounds.load(Ordering::Relaxed);
    assert!(raced.is_ok(), "the race did not run: {rounds} rounds, {read} read, {refused} refused");
}

/// Directories `a` (the workspace) and `b` (elsewhere), each holding a
/// `marker` that names it, and the workspace opened by the symlink `ws`,
/// which points at `a`: the temp dir, the three paths, the workspace.
fn opened_by_a_link() -> (tempfile::TempDir, [PathBuf; 3], agent_fsm::tools::Workspace) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (a, b, link) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("ws"));
    for (dir, text) in [(&a, "the workspace\n"), (&b, "elsewhere\n")] {
        std::fs::create_dir(dir).expect("dir");
        std::fs::write(dir.join("marker"), text).expect("marker");
    }
    symlink(&a, &link).expect("symlink");
    let ws = agent_fsm::tools::Workspace::open(&link).expect("open");
    (tmp, [a, b, link], ws)
}

/// A workspace opened by a symlink that is later pointed at another
/// directory (by a command it ran, say): the file tools keep the
/// directory they opened, and the shell and `host_path`, which go by the
/// path, refuse rather than work in the other directory.
#[tokio::test]
async fn a_workspace_whose_symlinked_path_is_repointed_runs_nothing_elsewhere() {
    let (tmp, [a, b, link], ws) = opened_by_a_link();
    let options = agent_fsm::tools::ShellOptions::default().with_timeout(std::time::Duration::from_secs(10));
    let ran = ws.run_command("cat marker", &options).await.expect("ran").into_result().expect("succeeded");
    assert_eq!(ran, "the workspace\n");
    assert_eq!(std::fs::read_to_string(ws.host_path("marker").expect("inside")).expect("read"), "the workspace\n");

    // Repointed in one `rename`, as `ln -sfn` does.
    symlink(&b, tmp.path().join("ws.new")).expect("symlink");
    std::fs::rename(tmp.path().join("ws.new"), &link).expect("repoint");

    assert_eq!(ws.read_file("marker").await.expect("read"), "the workspace\n", "the file tools hold the directory");
    let run = ws.run_command("echo touched > marker", &options).await;
    assert!(
        matches!(&run, Err(agent_fsm::tools::ToolError::Moved { root }) if *root == link),
        "the shell refuses: {run:?}"
    );
    assert_eq!(std::fs::read_to_string(b.join("marker")).expect("read"), "elsewhere\n", "nothing ran elsewhere");
    let host = ws.host_path("marker");
    assert!(matches!(host, Err(agent_fsm::tools::ToolError::Moved { .. })), "{host:?}");

    // Pointed back: the path leads to the workspace again.
    symlink(&a, tmp.path().join("ws.new")).expect("symlink");
    std::fs::rename(tmp.path().join("ws.new"), &link).expect("repoint");
    let ran = ws.run_command("cat marker", &options).await.expect("ran").into_result().expect("succeeded");
    assert_eq!(ran, "the workspace\n");
}

/// The same repointing while commands run, each swap lasting a moment:
/// the check of the path passes, then the path leads elsewhere as the
/// shell starts. The shell enters the directory the file tools hold by
/// its handle, so no command runs (or writes) in the other directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_path_repointed_as_the_shell_starts_runs_nothing_elsewhere() {
    let (tmp, [a, b, link], ws) = opened_by_a_link();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, a, b, link, next) =
            (Arc::clone(&stop), a.clone(), b.clone(), link.clone(), tmp.path().join("ws.next"));
        std::thread::spawn(move || {
            let mut swaps = 0u32;
            while !stop.load(Ordering::Relaxed) {
                // At `a` most of the time, at `b` for a moment: the check
                // mostly passes, and the start after it may fall in the
                // moment at `b`.
                for (target, hold) in [(&b, 30), (&a, 150)] {
                    let _ = std::fs::remove_file(&next);
                    symlink(target, &next).expect("symlink");
                    std::fs::rename(&next, &link).expect("rename");
                    swaps += 1;
                    let until = std::time::Instant::now() + std::time::Duration::from_micros(hold);
                    while std::time::Instant::now() < until {
                        std::hint::spin_loop();
                    }
                }
            }
            swaps
        })
    };
    let options = agent_fsm::tools::ShellOptions::default().with_timeout(std::time::Duration::from_secs(10));
    let (mut inside, mut refused) = (0u32, 0u32);
    let raced = tokio::time::timeout(HANG, async {
        for i in 0..400 {
            match ws.run_command(&format!("cat marker; echo 'ran {i}' >> marker"), &options).await {
                Ok(run) => {
                    assert!(run.output.starts_with("the workspace"), "ran elsewhere: {run:?}");
                    inside += 1;
                }
                Err(agent_fsm::tools::ToolError::Moved { .. }) => refused += 1,
                Err(e) => panic!("{e}"),
            }
        }
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    assert!(raced.is_ok(), "the commands did not end");
    assert_eq!(std::fs::read_to_string(b.join("marker")).expect("read"), "elsewhere\n", "a command wrote elsewhere");
    assert!(swaps > 10 && inside > 0, "the race ran: {swaps} swaps, {inside} runs inside, {refused} refused");
}

/// A symlink inside whose target is missing, and a process that keeps
/// making and removing a hard link of a file outside at that target: a
/// write through the symlink never writes the file outside (it is written
/// in place only while nothing is there, and replaced by the rename
/// otherwise, which ends the link).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_link_appearing_under_a_dangling_symlink_is_never_written_through() {
    let f = fixture();
    symlink("target", f.inside.join("d")).expect("a dangling symlink");
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, secret, target) = (Arc::clone(&stop), f.outside.join("secret"), f.inside.join("target"));
        std::thread::spawn(move || {
            let mut flips = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::hard_link(&secret, &target);
                let _ = std::fs::remove_file(&target);
                flips += 1;
            }
            flips
        })
    };
    let mut written = 0u32;
    let raced = tokio::time::timeout(HANG, async {
        for i in 0..1500 {
            written += u32::from(f.ws.write_file("d", &format!("written {i}\n")).await.is_ok());
            let secret = std::fs::read_to_string(f.outside.join("secret")).expect("the secret");
            assert_eq!(secret, "top secret\n", "write {i} went through to the file outside");
        }
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().expect("flipper");
    assert!(raced.is_ok(), "the writes did not end");
    assert!(flips > 100 && written > 0, "the race ran: {flips} flips, {written} writes");
    f.assert_outside_untouched();
}
