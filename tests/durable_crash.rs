//! The durable coding agent killed with SIGKILL at seeded points and
//! spawned again from its SQLite store each time: the session finishes,
//! and its workspace, conversation and final state equal those of a run
//! never killed; the event log has no gap and no duplicate; every tool
//! result reached the machine exactly once.
//!
//! Its own `main`: the test binary is also the child process it kills (run
//! with `CRASH_CHILD_STORE` set). The session's tools are idempotent
//! (`write_file`, `read_file`, `list_files`, a read-only command), as the
//! durable contract asks of tools performed again after a crash: at least
//! once, under the same call id.

#[path = "../agent-fsm/tests/support/child.rs"]
mod child;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_fsm::llm::{Provider, ProviderError, Request, StreamEvent};
use agent_fsm::store::{CheckpointStore, SqliteStore, restore};
use agent_fsm_examples::coding_agent::durable::{AGENT_ID, SessionEnd, ensure_workspace, run_durable_session};
use agent_fsm_examples::coding_agent::{LoomEffects, Workspace, stream_reply};
use agent_fsm_examples::loom::{AgentEvent, AssistantMessage, Loom, Message, ToolCall};
use child::{Seeded, wait_for};
use futures::stream::BoxStream;
use serde_json::json;

/// Tool rounds in the session before the fix.
const ROUNDS: usize = 32;
/// The fewest kills the test accepts.
const MIN_KILLS: usize = 30;
/// The seed of the kill points (printed, to replay a failure).
const SEED: u64 = 0x5eed_cafe_f00d;

/// A scripted model whose every reply depends only on the conversation:
/// `ROUNDS` rounds of notes written and read back, then the typo fixed by
/// writing the whole file, then a check that runs it, then the report.
struct Script {
    delay: Duration,
}

fn call(id: String, name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall { id, name: name.to_owned(), arguments }
}

impl Script {
    fn reply(messages: &[Message]) -> AssistantMessage {
        let results: Vec<&str> = messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool(result) => Some(result.content.as_str()),
                _ => None,
            })
            .collect();
        let rounds = results.len() / 2;
        let text = |what: &str| format!("Round {rounds}: {what}, one small step after another as agents do.");
        let (text, calls) = if rounds < ROUNDS {
            let note = format!("notes/{rounds:02}.txt");
            (
                text("writing a note and reading the workspace"),
                vec![
                    call(
                        format!("w{rounds}"),
                        "write_file",
                        json!({ "path": note, "content": format!("note {rounds}\n") }),
                    ),
                    call(format!("r{rounds}"), "list_files", json!({ "path": "." })),
                ],
            )
        } else if rounds == ROUNDS {
            (
                text("fixing the typo"),
                vec![
                    call(
                        "fix".into(),
                        "write_file",
                        json!({ "path": "greeting.sh", "content": "#!/bin/sh\necho \"Hello, world\"\n" }),
                    ),
                    call("read".into(), "read_file", json!({ "path": "notes/00.txt" })),
                ],
            )
        } else if rounds == ROUNDS + 1 {
            (
                text("checking the fix"),
                vec![
                    call("run".into(), "run_command", json!({ "command": "sh greeting.sh" })),
                    call("list".into(), "list_files", json!({ "path": "notes" })),
                ],
            )
        } else {
            ("Done: the greeting is fixed and the notes are written.".to_owned(), Vec::new())
        };
        AssistantMessage { text, tool_calls: calls, ..Default::default() }
    }
}

impl Provider for Script {
    fn stream(&self, request: &Request) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        stream_reply(Self::reply(&request.messages), self.delay)
    }
}

/// The child: runs the session kept at `store` to its end.
fn child(store: &Path) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        let root = ensure_workspace(store)?;
        // Round 0 writes the first note while it lists the workspace: with
        // `notes/` there from the start, the listing is the same whichever
        // of the two concurrent tools runs first (else the run never killed
        // and the killed one may list differently).
        std::fs::create_dir_all(root.join("notes"))?;
        let effects =
            LoomEffects::new(Arc::new(Script { delay: Duration::from_millis(1) }), "scripted", Workspace::new(root))?;
        let end = run_durable_session(store, effects, "Fix greeting.sh.", |_| {}, std::future::pending()).await?;
        match end {
            SessionEnd::Complete { .. } => Ok(()),
            other => Err(format!("the session did not complete: {other:?}").into()),
        }
    })
}

fn spawn_child(store: &Path) -> Child {
    let exe = std::env::current_exe().expect("the test binary's path");
    Command::new(exe)
        .env("CRASH_CHILD_STORE", store)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("the child starts")
}

/// Every file of a workspace, by path, with its contents. None is the new
/// file of a write killed before its rename (`.agent-fsm-write-..`): a
/// session that resumes removes those.
fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("the workspace reads") {
            let path = entry.expect("an entry").path();
            let left_behind = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".agent-fsm-write-"));
            assert!(!left_behind, "a killed write's new file is left: {}", path.display());
            if path.is_dir() {
                dirs.push(path);
            } else {
                let rel = path.strip_prefix(root).expect("inside").to_path_buf();
                out.insert(rel, std::fs::read(&path).expect("the file reads"));
            }
        }
    }
    out
}

/// What a finished session left: its machine, and its event log.
struct Outcome {
    machine: Loom,
    events: Vec<(u64, AgentEvent)>,
    files: BTreeMap<PathBuf, Vec<u8>>,
}

fn outcome(store_path: &Path) -> Outcome {
    let store = SqliteStore::open(store_path).expect("the store opens");
    let restored = restore::<Loom, _>(&store, AGENT_ID).expect("the agent restores");
    let last = restored.next_seq - 1;
    let events = store
        .events(AGENT_ID, 0, last)
        .expect("the log reads")
        .into_iter()
        .map(|r| (r.seq, serde_json::from_str(&r.event).expect("an event")))
        .collect();
    Outcome { machine: restored.machine, events, files: files(&ensure_workspace(store_path).expect("the workspace")) }
}

/// How many steps the store at `path` holds (0 before the agent is in it).
fn steps_written(path: &Path) -> u64 {
    let Ok(store) = SqliteStore::open(path) else { return 0 };
    store.agent(AGENT_ID).ok().flatten().map_or(0, |info| info.next_seq - 1)
}

/// How many times each tool call's result reached the machine.
fn results_per_call(events: &[(u64, AgentEvent)]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for (_, event) in events {
        if let AgentEvent::ToolCompleted { call_id, .. } = event {
            *counts.entry(call_id.clone()).or_default() += 1;
        }
    }
    counts
}

fn main() {
    if let Some(store) = std::env::var_os("CRASH_CHILD_STORE") {
        if let Err(error) = child(Path::new(&store)) {
            eprintln!("child failed: {error}");
            std::process::exit(1);
        }
        return;
    }
    // `cargo test -- --list` and filters: this binary is one test.
    if std::env::args().any(|a| a == "--list") {
        println!("a_session_killed_at_seeded_points_ends_as_one_never_killed: test");
        return;
    }
    let dir = tempfile::tempdir().expect("a temp dir");

    // The run never killed.
    let calm = dir.path().join("calm.db");
    let began = Instant::now();
    let mut first = spawn_child(&calm);
    assert_eq!(wait_for(&mut first, Duration::from_secs(120)), Some(true), "the uninterrupted session completes");
    let whole = began.elapsed();
    println!("the session never killed took {whole:?}");
    let began = Instant::now();
    let mut again = spawn_child(&calm);
    assert_eq!(wait_for(&mut again, Duration::from_secs(120)), Some(true), "a complete session resumes");
    let start_up = began.elapsed();
    println!("resuming the complete session took {start_up:?}");
    // Kill points spread so that about 50 lives cover the session on this
    // machine, however fast it is: some land in start-up and replay, most
    // in streams, tool runs and commits.
    let start_up_ms = u64::try_from(start_up.as_millis()).unwrap_or(u64::MAX);
    let whole_ms = u64::try_from(whole.as_millis()).unwrap_or(u64::MAX);
    let (low, mut high) = (start_up_ms / 2, start_up_ms + (whole_ms / 25).max(10));
    let expected = outcome(&calm);

    // The session killed again and again. The machine's speed can change
    // after the calm run measured it (other work starts or ends): a session
    // that ends before enough kills is run again on a store of its own,
    // with lives half as long; lives that write nothing are made longer.
    let mut rng = Seeded(SEED);
    let (mut kills, mut lives) = (0, 0);
    // The steps written when each kill landed, every session's in turn.
    let mut points = Vec::new();
    let distinct = |points: &[u64]| {
        let mut distinct = points.to_vec();
        distinct.dedup();
        distinct.len()
    };
    let deadline = Instant::now() + Duration::from_secs(600);
    for session in 0.. {
        let crashed = dir.path().join(format!("crashed-{session}.db"));
        // Kills of this session that found no more steps written than the
        // last one did, since its lives last had their length changed.
        let mut stalled = 0;
        loop {
            assert!(
                Instant::now() < deadline,
                "{kills} kills at {} points in 10 minutes, {MIN_KILLS} of each wanted (seed {SEED:#x}): {points:?}",
                distinct(&points)
            );
            let mut child = spawn_child(&crashed);
            lives += 1;
            let after = Duration::from_millis(rng.between(low, high));
            match wait_for(&mut child, after) {
                Some(true) => break,
                Some(false) => panic!("a child failed on its own after {kills} kills (seed {SEED:#x})"),
                None => {
                    // SIGKILL: no handler runs, nothing is flushed.
                    child.kill().expect("SIGKILL");
                    let _ = child.wait();
                    kills += 1;
                    let written = steps_written(&crashed);
                    stalled = if points.last() == Some(&written) { stalled + 1 } else { 0 };
                    points.push(written);
                    if stalled >= 25 {
                        // Lives as long as the whole calm session that still
                        // write nothing: the agent is stuck, not slow.
                        assert!(
                            high <= start_up_ms + whole_ms,
                            "no step written in 25 lives of up to {high} ms: stuck at {points:?} (seed {SEED:#x})"
                        );
                        high *= 2;
                        stalled = 0;
                        println!("no step written in 25 lives: lives of up to {high} ms");
                    }
                }
            }
        }
        check_session(&outcome(&crashed), &expected);
        if kills >= MIN_KILLS && distinct(&points) >= MIN_KILLS {
            break;
        }
        high = (low + 1).max(high / 2);
        println!("session {session} ended after {kills} kills in all: another, lives of up to {high} ms");
    }
    println!("{kills} kills over {lives} lives; steps written at each kill: {points:?}");
    println!("test a_session_killed_at_seeded_points_ends_as_one_never_killed ... ok");
}

/// A session killed again and again (`got`) ends as the one never killed
/// (`expected`): a gapless log of the same events, each tool result taken
/// once, the same state, conversation and workspace.
fn check_session(got: &Outcome, expected: &Outcome) {
    println!("a killed session ended with {} steps", got.events.len());
    // No gap, no duplicate.
    let seqs: Vec<u64> = got.events.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    // Each event reached the machine as often as in the run never killed
    // (the same events; only concurrent tools may finish in another order).
    let multiset = |events: &[(u64, AgentEvent)]| {
        let mut all: Vec<String> = events.iter().map(|(_, e)| format!("{e:?}")).collect();
        all.sort();
        all
    };
    assert!(multiset(&got.events) == multiset(&expected.events), "the events differ from the run never killed");
    // Every tool result reached the machine once.
    let counts = results_per_call(&got.events);
    assert!(counts.values().all(|&n| n == 1), "{counts:?}");
    assert_eq!(counts.len(), results_per_call(&expected.events).len());
    assert_eq!(counts.len(), ROUNDS * 2 + 4);
    // The same end.
    assert_eq!(got.machine.state(), expected.machine.state(), "the final state and conversation");
    assert_eq!(got.files, expected.files, "the workspace");
    assert_eq!(
        got.files.get(Path::new("greeting.sh")).map(Vec::as_slice),
        Some(b"#!/bin/sh\necho \"Hello, world\"\n".as_slice())
    );
}
