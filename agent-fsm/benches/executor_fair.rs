//! The executor against a bare tokio actor that uses the same channel
//! operations (`support/equal_actor.rs`), on two workloads, in criterion
//! wall time and, run under callgrind, in instructions.
//!
//! - `ping_pong`: every event changes state (`support/ping_pong.rs`).
//! - `stream`: a Loom-like reply (`support/stream.rs`): 50 text deltas per
//!   turn, all but the first a self-loop, then `Done`, which changes state.
//!
//! Each runs fire and forget (events sent one way, then a flush: the
//! executor's `wait_idle`, the actor's flush message) and as round trips
//! (`call`, a oneshot per event), on a current-thread runtime and on 2
//! worker threads. Sides: `actor`, the equal-channel actor; `executor`,
//! the executor with a synchronous observer attached that counts hops and
//! refused events in cells of the agent's own (as a metrics exporter
//! would); `executor_unobserved`, with nothing attached. The executor keeps
//! its history and status in both.
//!
//! Criterion: `cargo bench -p agent-fsm --bench executor_fair -- --quick`.
//! Instructions: `scripts/callgrind_executor.sh` runs this binary under
//! callgrind with `EXECUTOR_FAIR_CALLGRIND=<workload>:<side>:<flavour>:<mode>:<n>`
//! for two values of `n` and divides the difference (process start,
//! runtime and warm-up cancel out), then runs criterion on the same build,
//! then the paired timing below.
//!
//! Paired timing (`EXECUTOR_FAIR_AB=<rounds>`): every side's agent on one
//! runtime, timed one round each in turn (the order rotating), `rounds`
//! times; each side's time is divided by the actor's in the same turn and
//! the median of those ratios printed. Rounds timed milliseconds apart
//! share the machine's load, so the ratio holds where criterion's
//! medians, taken seconds apart, move with the load of other processes.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use agent_fsm::runtime::{self, ExecutorConfig, MachineHandle};
use agent_fsm::{Observer, StateMachine, StepOf, UnhandledOf};
use criterion::{BenchmarkId, Criterion, Throughput};
use tokio::runtime::Runtime;

#[allow(dead_code)] // only the machine is used here
#[path = "support/ping_pong.rs"]
mod ping_pong;

#[path = "support/equal_actor.rs"]
mod equal_actor;

#[path = "support/stream.rs"]
mod stream;

use equal_actor::{Equal, equal_spawn};
use ping_pong::{PingPong, Tick};
use stream::{Stream, stream_event, stream_machine};

// ===== workloads =====

/// A machine and the events a bench feeds it.
trait Workload: StateMachine<Event: Send + 'static> + Send + Sized + 'static {
    /// The workload's name in bench ids.
    const NAME: &'static str;

    /// A fresh machine.
    fn fresh() -> Self;

    /// The `i`th event.
    fn event(i: u64) -> Self::Event;
}

impl Workload for PingPong {
    const NAME: &'static str = "ping_pong";

    fn fresh() -> Self {
        Self::default()
    }

    fn event(i: u64) -> Tick {
        Tick(i)
    }
}

impl Workload for Stream {
    const NAME: &'static str = "stream";

    fn fresh() -> Self {
        stream_machine()
    }

    fn event(i: u64) -> stream::Event {
        stream_event(i)
    }
}

// ===== the sides =====

/// One agent's counters, as a metrics registry holds them.
#[derive(Default)]
struct Metrics {
    hops: AtomicU64,
    refused: AtomicU64,
}

/// Every observed agent's [`Metrics`], for an exporter to sum.
static REGISTRY: Mutex<Vec<Arc<Metrics>>> = Mutex::new(Vec::new());

/// Counts every hop and refused event into its agent's [`Metrics`].
struct MetricsObserver(Arc<Metrics>);

impl<M: StateMachine> Observer<M> for MetricsObserver {
    fn on_transition(&mut self, _: &StepOf<M>) {
        self.0.hops.fetch_add(1, Ordering::Relaxed);
    }

    fn on_unhandled(&mut self, _: &UnhandledOf<M>) {
        self.0.refused.fetch_add(1, Ordering::Relaxed);
    }
}

/// An agent of one side, driven the same way whichever it is.
enum Agent<M: Workload> {
    Actor(Equal<M>),
    Executor(MachineHandle<M, ()>),
}

impl<M: Workload> Clone for Agent<M> {
    fn clone(&self) -> Self {
        match self {
            Self::Actor(actor) => Self::Actor(actor.clone()),
            Self::Executor(handle) => Self::Executor(handle.clone()),
        }
    }
}

/// The sides, in the order they are benched.
const SIDES: [&str; 3] = ["actor", "executor", "executor_unobserved"];

/// Starts an agent of `side` (inside a runtime).
fn spawn<M: Workload>(side: &str) -> Agent<M> {
    match side {
        "actor" => Agent::Actor(equal_spawn(M::fresh())),
        "executor" => {
            let config = ExecutorConfig::new().observer(|| {
                let metrics = Arc::new(Metrics::default());
                REGISTRY.lock().expect("not poisoned").push(Arc::clone(&metrics));
                MetricsObserver(metrics)
            });
            Agent::Executor(runtime::spawn(M::fresh(), (), config))
        }
        _ => Agent::Executor(runtime::spawn(M::fresh(), (), ExecutorConfig::new())),
    }
}

impl<M: Workload> Agent<M> {
    /// Events `from..from + n` one way, then waits until they are handled.
    async fn fire(&self, from: u64, n: u64) {
        match self {
            Self::Actor(actor) => {
                for i in from..from + n {
                    actor.send(M::event(i)).await;
                }
                actor.flush().await;
            }
            Self::Executor(handle) => {
                for i in from..from + n {
                    handle.send(M::event(i)).await.expect("the worker runs");
                }
                handle.wait_idle().await.expect("the worker runs");
            }
        }
    }

    /// Events `from..from + n` as round trips.
    async fn calls(&self, from: u64, n: u64) {
        match self {
            Self::Actor(actor) => {
                for i in from..from + n {
                    std::hint::black_box(actor.call(M::event(i)).await);
                }
            }
            Self::Executor(handle) => {
                for i in from..from + n {
                    std::hint::black_box(handle.call(M::event(i)).await.expect("the worker runs"));
                }
            }
        }
    }

    /// Runs `mode` (`fire` or `call`) over events `from..from + n`.
    async fn run(&self, mode: &str, from: u64, n: u64) {
        if mode == "fire" { self.fire(from, n).await } else { self.calls(from, n).await }
    }
}

fn runtime(flavour: &str) -> Runtime {
    let mut builder = if flavour == "current_thread" {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(2);
        builder
    };
    builder.enable_all().build().expect("a runtime")
}

const FLAVOURS: [&str; 2] = ["current_thread", "multi_thread"];
const MODES: [&str; 2] = ["fire", "call"];

/// Events per round: 1,020 one way (20 turns of the stream), 102 round trips.
fn per_round(mode: &str) -> u64 {
    if mode == "fire" { 1_020 } else { 102 }
}

// ===== criterion =====

/// Times `round` `iters` times inside one `block_on`.
fn time_rounds<F: Future<Output = ()>>(b: &mut criterion::Bencher<'_>, rt: &Runtime, mut round: impl FnMut() -> F) {
    b.iter_custom(|iters| {
        rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                round().await;
            }
            start.elapsed()
        })
    });
}

fn bench_workload<M: Workload>(c: &mut Criterion) {
    for mode in MODES {
        let n = per_round(mode);
        let mut group = c.benchmark_group(format!("fair_{}_{mode}", M::NAME));
        group.throughput(Throughput::Elements(n));
        for flavour in FLAVOURS {
            let rt = runtime(flavour);
            // The sides alternate within the group, so load on the machine
            // falls on all of them alike.
            for side in SIDES {
                let agent: Agent<M> = rt.block_on(async { spawn(side) });
                // Every round starts a turn afresh: `n` is whole turns.
                group.bench_function(BenchmarkId::new(side, flavour), |b| {
                    time_rounds(b, &rt, || agent.run(mode, 0, n));
                });
            }
        }
        group.finish();
    }
}

// ===== callgrind =====

const CALLGRIND_ENV: &str = "EXECUTOR_FAIR_CALLGRIND";

/// Warm-up events before the counted ones: the history's ring fills, the
/// channel's blocks are allocated.
const WARM_UP: u64 = 2_040;

/// One measured run: `<workload>:<side>:<flavour>:<mode>:<n>`.
fn callgrind_run(spec: &str) {
    let parts: Vec<&str> = spec.split(':').collect();
    let [workload, side, flavour, mode, n] = parts[..] else {
        panic!("{CALLGRIND_ENV}: expected <workload>:<side>:<flavour>:<mode>:<n>, got {spec}");
    };
    let n: u64 = n.parse().expect("a count");
    match workload {
        "ping_pong" => callgrind_workload::<PingPong>(side, flavour, mode, n),
        "stream" => callgrind_workload::<Stream>(side, flavour, mode, n),
        other => panic!("{CALLGRIND_ENV}: unknown workload {other}"),
    }
}

fn callgrind_workload<M: Workload>(side: &str, flavour: &str, mode: &str, n: u64) {
    let rt = runtime(flavour);
    rt.block_on(async {
        let agent: Agent<M> = spawn(side);
        // Whole turns of the stream, so both runs start the counted part
        // at the same point of a turn.
        agent.run(mode, 0, WARM_UP).await;
        agent.run(mode, 0, n).await;
    });
    println!("events={n}");
}

// ===== paired timing =====

const AB_ENV: &str = "EXECUTOR_FAIR_AB";

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Prints `ab <workload> <flavour> <mode> <side> <median ns per event>
/// <median ratio to the actor of the same turn>` for every combination.
fn paired<M: Workload>(rounds: usize) {
    for flavour in FLAVOURS {
        let rt = runtime(flavour);
        for mode in MODES {
            let n = per_round(mode);
            let agents: Vec<Agent<M>> = rt.block_on(async { SIDES.iter().map(|side| spawn(side)).collect() });
            let mut times = vec![Vec::with_capacity(rounds); SIDES.len()];
            rt.block_on(async {
                for agent in &agents {
                    agent.run(mode, 0, n).await;
                }
                for round in 0..rounds {
                    for k in 0..SIDES.len() {
                        let i = (round + k) % SIDES.len();
                        let start = Instant::now();
                        agents[i].run(mode, 0, n).await;
                        times[i].push(start.elapsed().as_secs_f64());
                    }
                }
            });
            for (i, side) in SIDES.iter().enumerate() {
                #[allow(clippy::cast_precision_loss)] // a display figure
                let ns = median(times[i].iter().map(|t| t * 1e9 / n as f64).collect());
                let ratio = median(times[i].iter().zip(&times[0]).map(|(t, a)| t / a).collect());
                println!("ab {} {flavour} {mode} {side} {ns:.1} {ratio:.3}", M::NAME);
            }
        }
    }
}

fn main() {
    if let Ok(spec) = std::env::var(CALLGRIND_ENV) {
        callgrind_run(&spec);
        return;
    }
    if let Ok(rounds) = std::env::var(AB_ENV) {
        let rounds = rounds.parse().expect("a number of rounds");
        paired::<PingPong>(rounds);
        paired::<Stream>(rounds);
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    bench_workload::<PingPong>(&mut c);
    bench_workload::<Stream>(&mut c);
    c.final_summary();
}
