//! What the executor costs per event and per idle agent, against a bare
//! hand-written tokio mpsc actor over the same machine (the baseline) and
//! against calling `handle_event` directly.
//!
//! The bare actor (`bare_actor`) is the usual shape: a bounded `mpsc`
//! channel of the same capacity (32), `send(..).await` to it, `while let
//! Some(msg) = rx.recv().await` in the actor, `handle_event` with no
//! observer, a oneshot per reply. The executor's handle first tries
//! `try_send` and awaits `send` only when the inbox is full, which is much
//! cheaper per event; `bare_actor_try_send` is the same bare actor sending
//! that way, so that the gain of the send path and the cost of the worker
//! can be told apart. The executor runs with everything it promises:
//! history, status, notifications, effects (`()`), ordering and control
//! checks between steps. Each executor bench has four variants:
//!
//! - `executor_observer`: a synchronous observer attached
//!   (`ExecutorConfig::observer`) that counts hops and refused events in
//!   atomic cells of the agent's own, registered where an exporter would
//!   sum them, in the worker's step, as a metrics exporter would.
//! - `executor_observed`: a subscriber draining
//!   every notification (two per event: the transition and the action) on
//!   its own task, as a UI would; its work is counted.
//! - `executor_observed_transitions`: the same subscriber, subscribed to
//!   `Topics::TRANSITIONS` only (one notification per event), as a state
//!   display would.
//! - `executor_unobserved`: nobody subscribed (history and status are kept
//!   all the same).
//!
//! The benches:
//!
//! - `direct`: `handle_event` in a loop, no runtime.
//! - `fire_and_forget/{current_thread,multi_thread}`: send 1,000 events,
//!   then wait until they are handled (`wait_idle`; the bare actor answers
//!   a flush message).
//! - `request_response/...`: 100 round trips, each waiting for its reply
//!   (`call`; the bare actor answers through a oneshot).
//! - `throughput`: 1,000 agents × 1,000 events on a 2-worker runtime.
//! - memory: RSS per idle agent with 10,000 and with 100,000 spawned (the
//!   bare actor, the executor, the executor with the observer), measured in
//!   a child process per variant and count (so that one variant's freed
//!   memory does not hide the next one's), printed before the timings.
//!   The bare actor's idle agent holds what the equal-channel actor of
//!   `executor_fair.rs` holds: the same channel, machine and task size.
//!
//! Run: `cargo bench -p agent-fsm --bench executor -- --quick`.
//! Note: dev-dependencies enable tokio's `test-util`, which makes
//! `tokio::time::Instant::now` (read once per burst of events by the
//! history) a little slower than in a release build of an application.

use std::hint::black_box;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use agent_fsm::runtime::{self, ExecutorConfig, MachineHandle, Topics};
use agent_fsm::{Observer, StateMachine, StepOf};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use tokio::runtime::Runtime;

#[path = "support/ping_pong.rs"]
mod ping_pong;

use ping_pong::{Bare, PingPong, Tick, bare_spawn, let_every_task_run, rss_bytes, time_concurrent_rounds, time_rounds};

// ===== the executor =====

type Handle = MachineHandle<PingPong, ()>;

/// One configuration for every agent, as an application would share it:
/// agents then share its settings and its task tracker.
static CONFIG: LazyLock<ExecutorConfig<PingPong>> = LazyLock::new(ExecutorConfig::new);

fn executor_spawn() -> Handle {
    runtime::spawn(PingPong::default(), (), CONFIG.clone())
}

/// With an observer attached: a subscriber draining every notification on
/// its own task (it ends when the worker does).
fn executor_spawn_observed() -> Handle {
    observed(Topics::ALL)
}

/// A subscriber of transitions only.
fn executor_spawn_observed_transitions() -> Handle {
    observed(Topics::TRANSITIONS)
}

fn observed(topics: Topics) -> Handle {
    let handle = executor_spawn();
    let mut subscription = handle.subscribe_to(topics);
    tokio::spawn(async move {
        while let Some(notification) = subscription.recv().await {
            black_box(notification);
        }
    });
    handle
}

/// Spawns one agent of an executor variant.
type Spawn = fn() -> Handle;

/// One agent's counters, as a metrics registry holds them: each agent
/// counts in cells of its own, and an exporter sums every agent's when it
/// reads. (Cells shared by every agent would measure their cache line
/// moving between the worker threads on every event, a cost of that
/// observer that any runtime calling it pays.)
#[derive(Default)]
struct Metrics {
    hops: AtomicU64,
    refused: AtomicU64,
}

/// Every observed agent's [`Metrics`], for an exporter to sum.
static REGISTRY: Mutex<Vec<Arc<Metrics>>> = Mutex::new(Vec::new());

/// Counts every hop and refused event into its agent's [`Metrics`], in the
/// worker's step, with no other task. (Publishing the state's name on a
/// tokio `watch` here instead costs about 500 more instructions per
/// event: the `watch` wakes its eight notifiers on every change.)
struct MetricsObserver(Arc<Metrics>);

impl Observer<PingPong> for MetricsObserver {
    fn on_transition(&mut self, _: &StepOf<PingPong>) {
        self.0.hops.fetch_add(1, Ordering::Relaxed);
    }

    fn on_unhandled(&mut self, _: &agent_fsm::UnhandledOf<PingPong>) {
        self.0.refused.fetch_add(1, Ordering::Relaxed);
    }
}

/// The configuration with [`MetricsObserver`] attached.
static OBSERVER_CONFIG: LazyLock<ExecutorConfig<PingPong>> = LazyLock::new(|| {
    ExecutorConfig::new().observer(|| {
        let metrics = Arc::new(Metrics::default());
        REGISTRY.lock().unwrap().push(Arc::clone(&metrics));
        MetricsObserver(metrics)
    })
});

/// With a synchronous observer attached ([`MetricsObserver`]).
fn executor_spawn_with_observer() -> Handle {
    runtime::spawn(PingPong::default(), (), OBSERVER_CONFIG.clone())
}

/// The executor variants, in the order they are benched.
const VARIANTS: [(&str, Spawn); 4] = [
    ("executor_observer", executor_spawn_with_observer),
    ("executor_observed", executor_spawn_observed),
    ("executor_observed_transitions", executor_spawn_observed_transitions),
    ("executor_unobserved", executor_spawn),
];

async fn executor_fire(handle: &Handle, n: u64) {
    for i in 0..n {
        handle.send(Tick(i)).await.unwrap();
    }
    handle.wait_idle().await.unwrap();
}

async fn executor_calls(handle: &Handle, n: u64) {
    for i in 0..n {
        black_box(handle.call(Tick(i)).await.unwrap());
    }
}

// ===== benches =====

fn runtimes() -> [(&'static str, Runtime); 2] {
    let current = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let multi = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    [("current_thread", current), ("multi_thread", multi)]
}

fn direct(c: &mut Criterion) {
    const N: u64 = 1_000;
    let mut group = c.benchmark_group("direct");
    group.throughput(Throughput::Elements(N));
    group.bench_function("handle_event", |b| {
        let mut machine = PingPong::default();
        b.iter(|| {
            for i in 0..N {
                black_box(machine.handle_event(Tick(i)));
            }
        });
    });
    group.finish();
}

fn fire_and_forget(c: &mut Criterion) {
    const N: u64 = 1_000;
    let mut group = c.benchmark_group("fire_and_forget");
    group.throughput(Throughput::Elements(N));
    for (name, rt) in runtimes() {
        let bare = rt.block_on(async { bare_spawn::<false>() });
        group.bench_function(BenchmarkId::new("bare_actor", name), |b| time_rounds(b, &rt, || bare.fire(N)));
        let bare = rt.block_on(async { bare_spawn::<true>() });
        group.bench_function(BenchmarkId::new("bare_actor_try_send", name), |b| time_rounds(b, &rt, || bare.fire(N)));
        for (variant, spawn) in VARIANTS {
            let handle = rt.block_on(async { spawn() });
            group.bench_function(BenchmarkId::new(variant, name), |b| {
                time_rounds(b, &rt, || executor_fire(&handle, N));
            });
        }
    }
    group.finish();
}

fn request_response(c: &mut Criterion) {
    const N: u64 = 100;
    let mut group = c.benchmark_group("request_response");
    group.throughput(Throughput::Elements(N));
    for (name, rt) in runtimes() {
        let bare = rt.block_on(async { bare_spawn::<false>() });
        group.bench_function(BenchmarkId::new("bare_actor", name), |b| {
            time_rounds(b, &rt, || async {
                bare.calls(N).await;
            });
        });
        let bare = rt.block_on(async { bare_spawn::<true>() });
        group.bench_function(BenchmarkId::new("bare_actor_try_send", name), |b| {
            time_rounds(b, &rt, || async {
                bare.calls(N).await;
            });
        });
        for (variant, spawn) in VARIANTS {
            let handle = rt.block_on(async { spawn() });
            group.bench_function(BenchmarkId::new(variant, name), |b| {
                time_rounds(b, &rt, || executor_calls(&handle, N));
            });
        }
    }
    group.finish();
}

fn throughput(c: &mut Criterion) {
    const AGENTS: usize = 1_000;
    const EVENTS: u64 = 1_000;
    let mut group = c.benchmark_group("throughput_1000_agents_x_1000_events");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(AGENTS as u64 * EVENTS));
    let [_, (_, rt)] = runtimes();

    throughput_bare::<false>(&mut group, "bare_actor", &rt, AGENTS, EVENTS);
    throughput_bare::<true>(&mut group, "bare_actor_try_send", &rt, AGENTS, EVENTS);

    for (variant, spawn) in VARIANTS {
        let handles: Vec<Handle> = rt.block_on(async { (0..AGENTS).map(|_| spawn()).collect() });
        group.bench_function(variant, |b| {
            time_concurrent_rounds(b, &rt, &handles, |handle| async move { executor_fire(&handle, EVENTS).await });
        });
        // Dropping the handles stops the workers (and their subscribers).
        drop(handles);
    }
    group.finish();
}

/// The throughput bench for one kind of bare actor.
fn throughput_bare<const TRY_FIRST: bool>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    rt: &Runtime,
    agents: usize,
    events: u64,
) {
    let bares: Vec<Bare<TRY_FIRST>> = rt.block_on(async { (0..agents).map(|_| bare_spawn()).collect() });
    group
        .bench_function(name, |b| time_concurrent_rounds(b, rt, &bares, |bare| async move { bare.fire(events).await }));
}

// ===== memory per idle agent =====

/// `<kind>:<count>` in a child process.
const MEMORY_ENV: &str = "AGENT_FSM_BENCH_MEMORY";
/// How many idle agents each measurement spawns.
const IDLE_COUNTS: [usize; 2] = [10_000, 100_000];

/// In a child process: spawn `count` idle agents of one kind, make sure
/// each worker ran once, and print the RSS growth per agent in bytes.
fn memory_child(kind: &str, count: usize) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        // Warm up the runtime's own structures first.
        let warm: Vec<Handle> = (0..100).map(|_| executor_spawn()).collect();
        let bare_warm: Vec<Bare> = (0..100).map(|_| bare_spawn::<false>()).collect();
        let_every_task_run().await;
        drop((warm, bare_warm));
        let_every_task_run().await;

        let before = rss_bytes().unwrap_or(0);
        match kind {
            "bare_actor" => idle(kind, count, before, bare_spawn::<false>).await,
            "executor_observer" => idle(kind, count, before, executor_spawn_with_observer).await,
            _ => idle(kind, count, before, executor_spawn).await,
        }
    });
}

/// Spawns `count` agents with `spawn`, lets each run once, and reports.
async fn idle<T>(kind: &str, count: usize, before: u64, spawn: impl Fn() -> T) {
    let agents: Vec<T> = (0..count).map(|_| spawn()).collect();
    let_every_task_run().await;
    report(kind, count, before);
    black_box(agents);
}

fn report(kind: &str, count: usize, before: u64) {
    let after = rss_bytes().unwrap_or(0);
    let per_agent = after.saturating_sub(before) / count as u64;
    println!("{kind} {per_agent}");
}

/// Runs the memory measurement for every kind and count, each in a child
/// process.
fn memory_report() {
    for count in IDLE_COUNTS {
        memory_report_of(count);
    }
}

fn memory_report_of(count: usize) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut figures = Vec::new();
    for kind in ["bare_actor", "executor", "executor_observer"] {
        let output = Command::new(&exe).env(MEMORY_ENV, format!("{kind}:{count}")).output();
        let Ok(output) = output else {
            return;
        };
        let text = String::from_utf8_lossy(&output.stdout);
        if let Some(bytes) = text.lines().find_map(|l| l.strip_prefix(kind).and_then(|b| b.trim().parse::<u64>().ok()))
        {
            figures.push((kind, bytes));
        }
    }
    println!("memory per idle agent ({count} spawned, RSS growth):");
    for (kind, bytes) in &figures {
        #[allow(clippy::cast_precision_loss)] // a display figure
        let kb = *bytes as f64 / 1024.0;
        println!("  {kind:<18} {bytes:>5} bytes/agent ({kb:.2} KB)");
    }
    if let [(_, bare), rest @ ..] = &figures[..] {
        for (kind, bytes) in rest {
            #[allow(clippy::cast_precision_loss)]
            let ratio = *bytes as f64 / (*bare).max(1) as f64;
            println!("  {kind} / bare actor: {ratio:.2}x");
        }
    }
}

fn main() {
    if let Ok(spec) = std::env::var(MEMORY_ENV) {
        let (kind, count) = spec.split_once(':').unwrap_or((&spec, "10000"));
        memory_child(kind, count.parse().unwrap_or(IDLE_COUNTS[0]));
        return;
    }
    memory_report();
    let mut c = Criterion::default().configure_from_args();
    direct(&mut c);
    fire_and_forget(&mut c);
    request_response(&mut c);
    throughput(&mut c);
    c.final_summary();
}
