//! A process writing a file through the workspace tools, killed with
//! SIGKILL at seeded points of its writes: the file always holds one whole
//! version (the one before or a new one), never a truncated or half written
//! one, and the workspace works on after it. What the killed writers left
//! beside the file is removed by a sweep, while a live writer's new file
//! is not, nor its writes disturbed.
//!
//! Its own `main`: the test binary is also the child process it kills (run
//! with `WRITE_KILL_DIR` set).
#![cfg(unix)]

use std::io::{BufRead as _, BufReader, Lines, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use agent_fsm::tools::Workspace;

/// The file written over and over.
const FILE: &str = "big.txt";
/// The size of each version the child writes: large enough that a write
/// takes a while, so that kills land inside writes.
const SIZE: usize = 8 << 20;
/// The size of the version in place before the first child runs.
const FIRST_SIZE: usize = 1 << 20;
/// How many children are killed.
const KILLS: u32 = 16;
/// The seed of the kill points (printed, to replay a failure).
const SEED: u64 = 0x005e_edf5_717e;

/// The child: writes version `a`, then `b`, then `a` again... to the file,
/// saying on stdout before each write that it starts.
fn child(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let ws = Workspace::open(dir)?;
    let versions = ["a".repeat(SIZE), "b".repeat(SIZE)];
    let mut stdout = std::io::stdout();
    for i in 0.. {
        writeln!(stdout, "writing {i}")?;
        stdout.flush()?;
        runtime.block_on(ws.write_file(FILE, &versions[i % 2]))?;
    }
    Ok(())
}

/// A small generator of kill points, from [`SEED`].
struct Points(u64);

impl Points {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

/// The file holds one whole version: every byte the same letter, and as
/// many as that letter's version has.
fn assert_whole(dir: &Path, round: u32) {
    let bytes = std::fs::read(dir.join(FILE)).expect("the file is there");
    let first = bytes.first().copied();
    let whole = match first {
        Some(b'x') => bytes.len() == FIRST_SIZE,
        Some(b'a' | b'b') => bytes.len() == SIZE,
        _ => false,
    };
    let uniform = bytes.iter().all(|&b| Some(b) == first);
    assert!(
        whole && uniform,
        "kill {round} (seed {SEED:#x}) left {} bytes starting {:?}: not one whole version",
        bytes.len(),
        first.map(char::from)
    );
}

fn killed_writers_leave_a_whole_file() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join(FILE), "x".repeat(FIRST_SIZE)).expect("the first version");
    let exe = std::env::current_exe().expect("the test binary");
    let mut points = Points(SEED);
    for round in 0..KILLS {
        let (mut child, mut lines) = spawn_writer(&exe, dir.path());
        // Killed after it starts its `writes`th write, `delay` into it.
        let writes = 1 + points.next(3);
        let delay = Duration::from_micros(points.next(4_000));
        started(&mut lines, writes);
        std::thread::sleep(delay);
        child.kill().expect("SIGKILL");
        let status = child.wait().expect("reaped");
        assert!(!status.success(), "the child was killed, not finished: {status:?}");
        assert_whole(dir.path(), round);
    }
    // The workspace works on after the kills; what they left beside the
    // file is hidden names of its own.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let ws = Workspace::open(dir.path()).expect("the workspace");
    runtime.block_on(ws.write_file(FILE, "done")).expect("a write after the kills");
    assert_eq!(std::fs::read_to_string(dir.path().join(FILE)).expect("read"), "done");
    let left = new_files(dir.path());
    eprintln!("{} new files left behind by {KILLS} kills", left.len());

    // Swept while a writer runs: every file of the killed ones goes, the
    // live writer's stays (if it holds one at that moment), and its
    // writes go on.
    let (mut live, mut lines) = spawn_writer(&exe, dir.path());
    started(&mut lines, 2);
    let removed = runtime.block_on(ws.remove_left_behind("")).expect("swept");
    let own = format!(".agent-fsm-write-{}-", live.id());
    let after = new_files(dir.path());
    assert!(after.iter().all(|name| name.starts_with(&own)), "left after the sweep: {after:?}");
    // At least those: a sweep may also take a new file in the instant
    // between its writer's creating and locking it, which that writer
    // then replaces by another.
    assert!(removed >= left.len(), "removed {removed} of {left:?}");
    started(&mut lines, 2);
    assert!(live.try_wait().expect("its status").is_none(), "the live writer failed");
    live.kill().expect("SIGKILL");
    live.wait().expect("reaped");
    assert_whole(dir.path(), KILLS);
    runtime.block_on(ws.remove_left_behind(".")).expect("swept");
    assert_eq!(new_files(dir.path()), Vec::<String>::new(), "nothing but the file is left");
}

/// A child writing the file in `dir` over and over, and the lines it says.
fn spawn_writer(exe: &Path, dir: &Path) -> (Child, Lines<BufReader<ChildStdout>>) {
    let mut child = Command::new(exe)
        .env("WRITE_KILL_DIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the child");
    let stdout = child.stdout.take().expect("its stdout");
    (child, BufReader::new(stdout).lines())
}

/// Waits until the child says it started `writes` more writes.
fn started(lines: &mut Lines<BufReader<ChildStdout>>, writes: u64) {
    for _ in 0..writes {
        let line = lines.next().expect("the child says it writes").expect("a line");
        assert!(line.starts_with("writing"), "{line}");
    }
}

/// The names beside the file, each a new file a writer made.
fn new_files(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).expect("list") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        if name != FILE {
            assert!(name.starts_with(".agent-fsm-write-"), "left behind: {name}");
            names.push(name);
        }
    }
    names
}

fn main() {
    if let Some(dir) = std::env::var_os("WRITE_KILL_DIR") {
        if let Err(error) = child(Path::new(&dir)) {
            eprintln!("child failed: {error}");
            std::process::exit(1);
        }
        return;
    }
    let tests: [(&str, fn()); 1] = [("killed_writers_leave_a_whole_file", killed_writers_leave_a_whole_file)];
    // `cargo test -- --list`, and a name filter.
    if std::env::args().any(|a| a == "--list") {
        for (name, _) in &tests {
            println!("{name}: test");
        }
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    for (name, test) in tests {
        if !args.is_empty() && !args.iter().any(|a| name.contains(a.as_str())) {
            continue;
        }
        test();
        println!("test {name} ... ok");
    }
}
