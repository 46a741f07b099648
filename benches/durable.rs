//! What a durable agent costs: steps per second of the Loom tool loop run
//! with no store, with the in-memory store and with SQLite, in each
//! durability mode, side by side in one run; and the bytes a step adds to
//! the store as the conversation grows.
//!
//! The loop is CPU-bound: a scripted model that answers at once (its reply
//! one `Completed` event on the keyed `llm` stream, as `LoomEffects` opens
//! it) asks for one tool call per reply, `rounds` times, then ends the
//! turn with text; the tool is a task that returns its result at once. A
//! session is the user's message, then two steps a round (the reply, the
//! tool's result), then the closing reply: `2 × rounds + 2` steps, as many
//! as the messages it leaves in the conversation. Every session is a new
//! agent: spawned, sent its message, awaited until idle, shut down (the
//! shutdown is timed too, as `OnStop` writes then). SQLite files go in a
//! temporary directory (`TMPDIR`), opened with `Synchronous::Normal` and
//! with `Synchronous::Full` (the default).
//!
//! The bytes per step are printed before the timings: the growth of the
//! in-memory store's accounted text and of the SQLite file (with its WAL,
//! after the store is closed) between sessions of 10, 100, 1,000 and 2,000
//! messages, beside one snapshot and the mean event at that length.
//!
//! Run: `cargo bench --bench durable -- --quick`.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_fsm::runtime::{EffectContext, EffectFailure, Effects, ExecutorConfig, MachineHandle};
use agent_fsm::store::{CheckpointStore, Durability, Durable, MemoryStore, SqliteConfig, SqliteStore, Synchronous};
use agent_fsm_examples::loom::{
    AgentAction, AgentConfig, AgentEvent, Loom, Message, ToolCall, ToolExecutionOutcome, reply,
};
use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput, measurement::WallTime};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

/// Tool rounds of a timed session: 42 steps, a conversation of 42 messages.
const ROUNDS: usize = 20;

/// What the tool returns: a short file, so that the conversation grows by
/// about what a real `read_file` adds.
const TOOL_OUTPUT: &str = "fn main() {\n    let name = std::env::args().nth(1).unwrap_or_default();\n    \
                           println!(\"Hello, {name}!\");\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    \
                           fn greets() {\n        assert!(true);\n    }\n}\n";

/// A model and a tool that answer at once: `rounds` tool calls, then text.
#[derive(Debug, Clone)]
struct ToolLoop {
    rounds: usize,
}

impl Effects<Loom> for ToolLoop {
    type Output = ();

    fn perform(&mut self, action: AgentAction, cx: &mut EffectContext<'_, Loom, ()>) {
        match action {
            AgentAction::SendLlmRequest(request) => {
                let done = request.messages.iter().filter(|m| matches!(m, Message::Tool(_))).count();
                let event = if done < self.rounds {
                    let call = ToolCall {
                        id: format!("call_{done}"),
                        name: "read_file".to_owned(),
                        arguments: json!({ "path": format!("src/file_{done}.rs") }),
                    };
                    reply("Let me read the next file.", vec![call])
                } else {
                    reply("Done: every file is read.", Vec::new())
                };
                let stream = futures::stream::iter([AgentEvent::LlmEvent(event)]);
                cx.stream_keyed("llm", stream.boxed(), |_: EffectFailure| None);
            }
            AgentAction::ExecuteTools(calls) => {
                for call in calls {
                    let id = call.id;
                    cx.spawn_task(
                        id.clone(),
                        async move {
                            let output = Value::String(TOOL_OUTPUT.to_owned());
                            AgentEvent::ToolCompleted {
                                outcome: ToolExecutionOutcome::Success { call_id: id.clone(), output },
                                call_id: id,
                            }
                        },
                        |call_id: String, failure: EffectFailure| AgentEvent::ToolCompleted {
                            outcome: ToolExecutionOutcome::Error {
                                call_id: call_id.clone(),
                                error: agent_fsm_examples::loom::ToolError { message: failure.to_string() },
                            },
                            call_id,
                        },
                    );
                }
            }
            _ => {}
        }
    }
}

/// Steps of a session of `rounds` tool rounds.
fn steps_of(rounds: usize) -> u64 {
    2 * rounds as u64 + 2
}

/// Where a session's steps go.
#[derive(Clone)]
enum Sink {
    /// `agent_fsm::runtime::spawn`: nothing written.
    None,
    /// `Durable::spawn` on this store, in this mode.
    Store(Arc<dyn CheckpointStore>, Durability),
}

/// Agent `agent` spawned and run through a session of `rounds` rounds,
/// idle at its end.
async fn run(sink: &Sink, agent: &str, rounds: usize) -> MachineHandle<Loom, ()> {
    let machine = || Loom::new(AgentConfig::default());
    let effects = ToolLoop { rounds };
    let handle = match sink {
        Sink::None => agent_fsm::runtime::spawn(machine(), effects, ExecutorConfig::new()),
        Sink::Store(store, durability) => {
            let durable = Durable::new(Arc::clone(store), agent).durability(*durability);
            durable.spawn(machine, effects, ExecutorConfig::new()).expect("spawn").0
        }
    };
    handle.send(AgentEvent::UserInput(Message::user("Read every file of src/."))).await.expect("send");
    handle.wait_idle().await.expect("idle");
    handle
}

/// One session of `rounds` rounds as agent `agent`, to its stop.
async fn session(sink: &Sink, agent: &str, rounds: usize) {
    let handle = run(sink, agent, rounds).await;
    black_box(handle.shutdown().await.expect("shutdown"));
}

/// `iters` sessions, each a new agent.
fn sessions(rt: &Runtime, sink: &Sink, iters: u64, next: &mut u64) -> Duration {
    rt.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            *next += 1;
            session(sink, &format!("agent-{next}"), ROUNDS).await;
        }
        start.elapsed()
    })
}

fn sqlite(dir: &Path, name: &str, synchronous: Synchronous) -> Arc<dyn CheckpointStore> {
    let config = SqliteConfig::default().synchronous(synchronous);
    Arc::new(SqliteStore::open_with(dir.join(name), config).expect("open"))
}

const MODES: [(Durability, &str); 3] = [
    (Durability::BeforeAction, "before_action"),
    (Durability::WhileAction, "while_action"),
    (Durability::OnStop, "on_stop"),
];

fn bench_one(group: &mut BenchmarkGroup<'_, WallTime>, rt: &Runtime, name: &str, sink: &Sink, next: &mut u64) {
    group.bench_function(name, |b| b.iter_custom(|iters| sessions(rt, sink, iters, next)));
}

fn steps_per_second(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut group = c.benchmark_group(format!("tool_loop_{}_steps", steps_of(ROUNDS)));
    group.throughput(Throughput::Elements(steps_of(ROUNDS)));
    group.sampling_mode(SamplingMode::Flat);
    // SQLite with `Full` waits for the disk on every commit: fewer samples
    // keep the run within minutes.
    group.sample_size(20);
    let mut next = 0;
    bench_one(&mut group, &rt, "no_store", &Sink::None, &mut next);
    let memory: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    for (mode, label) in MODES {
        bench_one(&mut group, &rt, &format!("memory/{label}"), &Sink::Store(Arc::clone(&memory), mode), &mut next);
    }
    for (synchronous, sync_label) in [(Synchronous::Normal, "normal"), (Synchronous::Full, "full")] {
        for (mode, label) in MODES {
            let store = sqlite(dir.path(), &format!("{sync_label}-{label}.db"), synchronous);
            bench_one(&mut group, &rt, &format!("sqlite_{sync_label}/{label}"), &Sink::Store(store, mode), &mut next);
        }
    }
    group.finish();
}

/// Bytes of the SQLite file at `path` and its WAL, if any.
fn file_bytes(path: &Path) -> u64 {
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    size(path) + size(Path::new(&wal))
}

/// What one session of `rounds` rounds leaves: the in-memory store's
/// bytes, the SQLite file's bytes, the size of one snapshot of the machine
/// at its end (what a store that rewrote the machine every step would
/// write per step) and the mean event's bytes of its last `window` steps.
fn footprint(rt: &Runtime, dir: &Path, rounds: usize, window: u64) -> (usize, u64, usize, usize) {
    let memory = Arc::new(MemoryStore::new());
    let sink = Sink::Store(Arc::clone(&memory) as Arc<dyn CheckpointStore>, Durability::BeforeAction);
    let snapshot = rt.block_on(async {
        let handle = run(&sink, "a", rounds).await;
        let snapshot = handle.inspect(|m| agent_fsm::snapshot::to_json(m).expect("snapshot").len()).await;
        handle.shutdown().await.expect("shutdown");
        snapshot.expect("inspect")
    });
    let steps = steps_of(rounds);
    let info = memory.agent("a").expect("read").expect("agent");
    assert_eq!(info.next_seq, steps + 1, "a session of {rounds} rounds takes {steps} steps");
    let events = memory.events("a", steps.saturating_sub(window), steps).expect("events");
    let mean_event = events.iter().map(|e| e.event.len()).sum::<usize>() / events.len().max(1);
    let path = dir.join(format!("len-{steps}.db"));
    {
        let store = sqlite(dir, &format!("len-{steps}.db"), Synchronous::Normal);
        let sink = Sink::Store(store, Durability::BeforeAction);
        rt.block_on(session(&sink, "a", rounds));
    }
    (memory.bytes(), file_bytes(&path), snapshot, mean_event)
}

/// Bytes a step adds as one conversation grows, printed.
fn bytes_per_step() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    // 10, 100, 1,000 and 2,000 messages (and steps).
    let rounds = [4, 49, 499, 999];
    let mut previous: Option<(u64, usize, u64)> = None;
    eprintln!("messages     memory B/step  sqlite B/step  one snapshot B  mean event B");
    for &r in &rounds {
        let steps = steps_of(r);
        let window = previous.map_or(steps, |(from, _, _)| steps - from);
        let (memory, file, snapshot, event) = footprint(&rt, dir.path(), r, window);
        let (from, mem_before, file_before) = previous.unwrap_or((0, 0, 0));
        #[allow(clippy::cast_precision_loss)] // display figures
        let per_step = |now: f64, before: f64| (now - before) / (steps - from) as f64;
        #[allow(clippy::cast_precision_loss)]
        let (mem_step, file_step) =
            (per_step(memory as f64, mem_before as f64), per_step(file as f64, file_before as f64));
        eprintln!("{from:>5}-{steps:<5} {mem_step:>13.0}  {file_step:>13.0}  {snapshot:>14}  {event:>12}");
        previous = Some((steps, memory, file));
    }
}

fn main() {
    bytes_per_step();
    let mut c = Criterion::default().configure_from_args();
    steps_per_second(&mut c);
    c.final_summary();
}
