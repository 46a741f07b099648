//! What `agent-fsm`'s executor costs per event and per idle agent next to
//! other ways of running one machine per tokio task, measured side by side
//! in one run over the same tiny two-state machine.
//!
//! Every variant owns a `Ping`/`Pong` machine and does the same work per
//! event: toggle the state, add the event's tick to a running total and
//! hand back the action (`Count`). Before any timing, each variant is driven
//! once through 1,000 one-way events and 101 round trips (`tokio_fsm`:
//! 1,101 round trips) and its total, final state and last reply are checked
//! against the expected ones, so that no variant wins by doing less.
//!
//! The variants:
//!
//! - `bare_actor`: the baseline, a hand-written actor: a bounded `mpsc`
//!   channel of 32, `send(..).await` to it, `while let Some(msg) =
//!   rx.recv().await` in the actor, a oneshot per reply.
//! - `executor`: `agent_fsm::runtime::spawn` with nothing attached (history
//!   and status are kept all the same).
//! - `executor_observer`: the same with a synchronous observer attached
//!   through `ExecutorConfig::observer`, counting hops in an atomic cell of
//!   the agent's own that an application-wide registry sums, as a metrics
//!   exporter would.
//! - `executor_watch`: the same with an observer that also publishes the new
//!   state's name on a per-agent tokio `watch`, as a status display might
//!   (tokio-fsm publishes its state on a `watch` on every transition).
//! - `executor_subscribed`: the same without observer but with a subscriber
//!   task draining `subscribe_to(Topics::TRANSITIONS)` (one notification per
//!   event), the asynchronous way to follow an agent.
//! - `ractor`: a `ractor` actor whose state is the machine; events are
//!   `cast`, round trips and the flush are `call`s through an
//!   `RpcReplyPort`. Its mailbox is unbounded (ractor has no bounded one).
//! - `kameo`: a `kameo` actor holding the machine, on a bounded mailbox of
//!   32; events are `tell`, round trips and the flush are `ask`.
//! - `tokio_fsm`: the same machine written with `tokio-fsm`'s `#[fsm]`
//!   macro (state `Ping`/`Pong`, event `Tick(u64)`, the total as context,
//!   a channel of 32), driven through its handle's `apply`. `apply` always
//!   waits for the FSM to answer: the handle has no one-way send, so the
//!   variant only takes part in the round-trip bench (and memory, and the
//!   `call` mode of the callgrind script). Its handlers cannot hand back a
//!   value, so `apply` answers the new state instead of the action; and
//!   every transition also publishes the state on the FSM's built-in
//!   `watch`, which tokio-fsm does unconditionally.
//!
//! The benches:
//!
//! - `fire_and_forget/current_thread`: send 1,000 events, then wait until
//!   they are handled (a flush message, or `wait_idle` for the executor).
//! - `request_response/current_thread`: 100 round trips, each waiting for
//!   its reply.
//! - `throughput_1000_agents_x_1000_events`: 1,000 agents each sent 1,000
//!   events (then flushed) by one driver task each, on a 2-worker runtime.
//! - memory: RSS growth per idle agent with 10,000 spawned, each variant in
//!   a child process of its own (so that one variant's freed memory does
//!   not hide the next one's), printed before the timings.
//!
//! Run: `cargo bench --manifest-path benches/peers/Cargo.toml -- --quick`.
//!
//! Instruction counts instead of wall time: `benches/peers/callgrind.sh`
//! runs this binary under `valgrind --tool=callgrind` with
//! `PEERS_CALLGRIND=<variant>:<fire|call>:<n>`, in which mode the binary
//! skips criterion, creates one agent of the variant on a current-thread
//! runtime, drives exactly `n` events through it once and exits; the script
//! turns two runs into instructions per event.

use std::hint::black_box;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use agent_fsm::runtime::{self, ExecutorConfig, MachineHandle, Topics};
use agent_fsm::{Named, Observer, StepOf};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput};
use tokio::runtime::Runtime;
use tokio::sync::watch;

// ===== the machine =====

#[path = "../../../agent-fsm/benches/support/ping_pong.rs"]
mod ping_pong;

use ping_pong::{
    Action, Bare, PingPong, Snapshot, State, Tick, bare_spawn, let_every_task_run, rss_bytes, time_concurrent_rounds,
    time_rounds,
};

// ===== the executor =====

/// A handle to one executor agent (no effects, so no outputs).
type Handle = MachineHandle<PingPong, ()>;

/// One configuration for every plain agent, as an application would share
/// it: agents then share its settings and its task tracker.
static CONFIG: LazyLock<ExecutorConfig<PingPong>> = LazyLock::new(ExecutorConfig::new);

/// Every observed agent's hop counter, as a metrics registry holds its
/// cells: each agent counts in a cell of its own, and the exporter sums
/// them when it reads. (One cell shared by every agent would measure its
/// cache line moving between the worker threads on every event, a cost of
/// that observer that any runtime calling it pays: see `docs/performance.md`.)
static HOPS: Mutex<Vec<Arc<AtomicU64>>> = Mutex::new(Vec::new());

/// A new agent's hop counter, registered in [`HOPS`].
fn hop_cell() -> Arc<AtomicU64> {
    let cell = Arc::new(AtomicU64::new(0));
    HOPS.lock().unwrap().push(Arc::clone(&cell));
    cell
}

/// Hops seen by every observed agent so far, as the exporter reads them.
fn hops_seen() -> u64 {
    HOPS.lock().unwrap().iter().map(|cell| cell.load(Ordering::Relaxed)).sum()
}

/// The shared configuration of `executor_observer` agents: each agent gets
/// its own [`HopCounter`] when it is spawned.
static OBSERVED_CONFIG: LazyLock<ExecutorConfig<PingPong>> =
    LazyLock::new(|| ExecutorConfig::new().observer(|| HopCounter(hop_cell())));

/// The shared configuration of `executor_watch` agents: each agent gets its
/// own [`StatusObserver`] when it is spawned.
static WATCHED_CONFIG: LazyLock<ExecutorConfig<PingPong>> = LazyLock::new(|| {
    ExecutorConfig::new().observer(|| StatusObserver { hops: hop_cell(), status: watch::Sender::new(State::Ping) })
});

/// Counts hops in the agent's cell of [`HOPS`]: a metrics exporter's
/// observer.
struct HopCounter(Arc<AtomicU64>);

impl Observer<PingPong> for HopCounter {
    fn on_transition(&mut self, _: &StepOf<PingPong>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// What a status display needs from an agent: a hop count and the current
/// state on a `watch`. In an application the display would hold receivers
/// (`status.subscribe()`); none is kept here because the cost measured is
/// the publishing, done on the agent's task, not the display's reading.
struct StatusObserver {
    /// The agent's cell of [`HOPS`].
    hops: Arc<AtomicU64>,
    /// This agent's state (its kind).
    status: watch::Sender<State>,
}

impl Observer<PingPong> for StatusObserver {
    fn on_transition(&mut self, step: &StepOf<PingPong>) {
        self.hops.fetch_add(1, Ordering::Relaxed);
        let to = step.to;
        // Wakes readers only when the state changes (a self-transition
        // would leave it as it is).
        self.status.send_if_modified(|shown| {
            let changed = *shown != to;
            if changed {
                *shown = to;
            }
            changed
        });
    }
}

/// An agent with a subscriber of transitions draining every notification
/// on its own task (it ends when the worker does).
fn executor_spawn_subscribed() -> Handle {
    let handle = runtime::spawn(PingPong::default(), (), CONFIG.clone());
    let mut subscription = handle.subscribe_to(Topics::TRANSITIONS);
    tokio::spawn(async move {
        while let Some(notification) = subscription.recv().await {
            black_box(notification);
        }
    });
    handle
}

// ===== ractor and kameo =====

#[path = "peers/actors.rs"]
mod actors;

use actors::{KameoCall, KameoEvent, KameoFlush, KameoInspect, KameoPingPong, RactorAgent, RactorMsg, kameo_spawn};

// ===== tokio-fsm =====

/// The machine in tokio-fsm's terms.
#[path = "peers/tokio_fsm_machine.rs"]
mod tokio_fsm_machine;

use tokio_fsm_machine::{PingPongFsm, PingPongFsmEvent, PingPongFsmHandle, PingPongFsmTask};

// ===== the variants =====

/// Which runtime drives the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The hand-written mpsc actor.
    BareActor,
    /// `agent_fsm` executor, nothing attached.
    Executor,
    /// `agent_fsm` executor with a synchronous observer counting hops.
    ExecutorObserver,
    /// `agent_fsm` executor with an observer publishing on a `watch`.
    ExecutorWatch,
    /// `agent_fsm` executor with a subscriber task.
    ExecutorSubscribed,
    /// A ractor actor.
    Ractor,
    /// A kameo actor.
    Kameo,
    /// A tokio-fsm machine.
    TokioFsm,
}

/// Every variant, in the order they are reported.
const KINDS: [Kind; 8] = [
    Kind::BareActor,
    Kind::Executor,
    Kind::ExecutorObserver,
    Kind::ExecutorWatch,
    Kind::ExecutorSubscribed,
    Kind::Ractor,
    Kind::Kameo,
    Kind::TokioFsm,
];

impl Kind {
    /// The name used in bench ids, the memory report and `PEERS_CALLGRIND`.
    fn name(self) -> &'static str {
        match self {
            Self::BareActor => "bare_actor",
            Self::Executor => "executor",
            Self::ExecutorObserver => "executor_observer",
            Self::ExecutorWatch => "executor_watch",
            Self::ExecutorSubscribed => "executor_subscribed",
            Self::Ractor => "ractor",
            Self::Kameo => "kameo",
            Self::TokioFsm => "tokio_fsm",
        }
    }

    /// The variant called `name`.
    fn from_name(name: &str) -> Option<Self> {
        KINDS.into_iter().find(|kind| kind.name() == name)
    }

    /// Whether it can send an event without waiting for it to be handled;
    /// tokio-fsm's handle cannot.
    fn fires(self) -> bool {
        self != Self::TokioFsm
    }

    /// The expected reply to a round trip that ends in state `to`: the
    /// action, except for tokio-fsm, whose `apply` answers the state.
    fn expected_reply(self, to: &'static str) -> &'static str {
        if self == Self::TokioFsm { to } else { Action::Count.name() }
    }

    /// Starts one agent; must run inside a tokio runtime.
    async fn spawn(self) -> Agent {
        match self {
            Self::BareActor => Agent::Bare(bare_spawn::<false>()),
            Self::Executor => Agent::Executor(runtime::spawn(PingPong::default(), (), CONFIG.clone())),
            Self::ExecutorObserver => Agent::Executor(runtime::spawn(PingPong::default(), (), OBSERVED_CONFIG.clone())),
            Self::ExecutorWatch => Agent::Executor(runtime::spawn(PingPong::default(), (), WATCHED_CONFIG.clone())),
            Self::ExecutorSubscribed => Agent::Executor(executor_spawn_subscribed()),
            Self::Ractor => Agent::Ractor(RactorAgent::spawn().await),
            Self::Kameo => Agent::Kameo(kameo_spawn()),
            Self::TokioFsm => {
                let (handle, task) = PingPongFsm::spawn(0);
                Agent::TokioFsm(handle, task)
            }
        }
    }
}

/// One running agent of any variant. The match happens once per round, not
/// once per event: each arm has its own loop.
enum Agent {
    /// `bare_actor`.
    Bare(Bare),
    /// The three executor variants (they differ in configuration only).
    Executor(Handle),
    /// `ractor`.
    Ractor(RactorAgent),
    /// `kameo`.
    Kameo(kameo::actor::ActorRef<KameoPingPong>),
    /// `tokio_fsm`: the task is kept because dropping it aborts the FSM.
    TokioFsm(PingPongFsmHandle, PingPongFsmTask),
}

impl Agent {
    /// Sends `n` events one way, then waits until all are handled.
    async fn fire(&self, n: u64) {
        match self {
            Self::Bare(bare) => bare.fire(n).await,
            Self::Executor(handle) => {
                for i in 0..n {
                    handle.send(Tick(i)).await.unwrap();
                }
                handle.wait_idle().await.unwrap();
            }
            Self::Ractor(actor) => {
                for i in 0..n {
                    actor.0.cast(RactorMsg::Event(Tick(i))).unwrap();
                }
                actor.call(RactorMsg::Flush).await;
            }
            Self::Kameo(actor) => {
                for i in 0..n {
                    actor.tell(KameoEvent(Tick(i))).await.unwrap();
                }
                actor.ask(KameoFlush).await.unwrap();
            }
            Self::TokioFsm(..) => unreachable!("tokio-fsm has no one-way send"),
        }
    }

    /// `n` round trips, each waiting for its reply; returns the last reply.
    async fn calls(&self, n: u64) -> &'static str {
        let mut last = "";
        match self {
            Self::Bare(bare) => last = bare.calls(n).await,
            Self::Executor(handle) => {
                for i in 0..n {
                    last = black_box(handle.call(Tick(i)).await.unwrap()).action().map_or("", agent_fsm::Kind::name);
                }
            }
            Self::Ractor(actor) => {
                for i in 0..n {
                    last = black_box(actor.call(|reply| RactorMsg::Call(Tick(i), reply)).await);
                }
            }
            Self::Kameo(actor) => {
                for i in 0..n {
                    last = black_box(actor.ask(KameoCall(Tick(i))).await.unwrap());
                }
            }
            Self::TokioFsm(handle, _) => {
                for i in 0..n {
                    last = black_box(handle.apply(PingPongFsmEvent::Tick(i)).await.unwrap()).name();
                }
            }
        }
        last
    }

    /// Stops the agent where that is how its total is read, and returns its
    /// total and state.
    async fn finish(self) -> Snapshot {
        match self {
            Self::Bare(bare) => bare.inspect().await,
            Self::Executor(handle) => handle.inspect(PingPong::snapshot).await.unwrap(),
            Self::Ractor(actor) => actor.call(RactorMsg::Inspect).await,
            Self::Kameo(actor) => actor.ask(KameoInspect).await.unwrap(),
            // tokio-fsm hands its context back only when its task ends.
            Self::TokioFsm(handle, task) => {
                let state = handle.state().name();
                handle.shutdown();
                (task.await.unwrap(), state)
            }
        }
    }
}

// ===== the check that every variant does the same work =====

/// Drives a fresh agent of each variant through 1,000 one-way events (when
/// it has them) and 101 round trips and checks its total, its final state
/// and its last reply; an odd count of events ends in `Pong`.
fn check_variants() {
    const FIRED: u64 = 1_000;
    const CALLED: u64 = 101;
    let rt = current_thread();
    for kind in KINDS {
        rt.block_on(async {
            let agent = kind.spawn().await;
            let hops_before = hops_seen();
            let (total, events, reply) = if kind.fires() {
                agent.fire(FIRED).await;
                let reply = agent.calls(CALLED).await;
                ((0..FIRED).sum::<u64>() + (0..CALLED).sum::<u64>(), FIRED + CALLED, reply)
            } else {
                // The same ticks, all as round trips.
                let reply = agent.calls(FIRED + CALLED).await;
                ((0..FIRED + CALLED).sum::<u64>(), FIRED + CALLED, reply)
            };
            assert_eq!(reply, kind.expected_reply("Pong"), "{}: last reply", kind.name());
            assert_eq!(agent.finish().await, (total, "Pong"), "{}: total and state", kind.name());
            if matches!(kind, Kind::ExecutorObserver | Kind::ExecutorWatch) {
                assert_eq!(hops_seen() - hops_before, events, "the observer saw every hop");
            }
        });
    }
}

// ===== benches =====

/// The runtime of the single-agent benches and of the callgrind mode.
fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// 1,000 one-way events then a flush, per variant that has one-way sends.
fn fire_and_forget(c: &mut Criterion) {
    const N: u64 = 1_000;
    let mut group = c.benchmark_group("fire_and_forget");
    group.throughput(Throughput::Elements(N));
    let rt = current_thread();
    for kind in KINDS.into_iter().filter(|kind| kind.fires()) {
        let agent = rt.block_on(kind.spawn());
        group.bench_function(BenchmarkId::new(kind.name(), "current_thread"), |b| {
            time_rounds(b, &rt, || agent.fire(N));
        });
    }
    group.finish();
}

/// 100 round trips, per variant.
fn request_response(c: &mut Criterion) {
    const N: u64 = 100;
    let mut group = c.benchmark_group("request_response");
    group.throughput(Throughput::Elements(N));
    let rt = current_thread();
    for kind in KINDS {
        let agent = rt.block_on(kind.spawn());
        group.bench_function(BenchmarkId::new(kind.name(), "current_thread"), |b| {
            time_rounds(b, &rt, || async {
                black_box(agent.calls(N).await);
            });
        });
    }
    group.finish();
}

/// Agents driven at once in the throughput bench.
const AGENTS: usize = 1_000;
/// Events per agent per round in the throughput bench.
const EVENTS: u64 = 1_000;

/// `AGENTS` × `EVENTS` one-way events on a 2-worker runtime, one driver
/// task per agent, per variant that has one-way sends.
fn throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group(format!("throughput_{AGENTS}_agents_x_{EVENTS}_events"));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(AGENTS as u64 * EVENTS));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    for kind in KINDS.into_iter().filter(|kind| kind.fires()) {
        throughput_one(&mut group, &rt, kind);
    }
    group.finish();
}

/// The throughput bench of one variant.
fn throughput_one(group: &mut BenchmarkGroup<'_, WallTime>, rt: &Runtime, kind: Kind) {
    let agents: Vec<Arc<Agent>> = rt.block_on(async {
        let mut agents = Vec::with_capacity(AGENTS);
        for _ in 0..AGENTS {
            agents.push(Arc::new(kind.spawn().await));
        }
        agents
    });
    group.bench_function(kind.name(), |b| {
        time_concurrent_rounds(b, rt, &agents, |agent| async move { agent.fire(EVENTS).await });
    });
    // Dropping the agents stops them (and their subscribers), so that the
    // next variant runs on a quiet runtime.
    drop(agents);
}

// ===== memory per idle agent =====

/// Set in a child process to the variant whose memory it measures.
const MEMORY_ENV: &str = "PEERS_MEMORY";
/// Agents spawned in the memory measurement.
const IDLE_AGENTS: usize = 10_000;

/// In a child process: spawn 10,000 idle agents of one variant, let each
/// run once, and print the RSS growth per agent in bytes.
fn memory_child(kind: Kind) {
    let rt = current_thread();
    rt.block_on(async {
        // Warm up the runtime's and the library's own structures first;
        // those agents stay, so nothing freed is reused by the measured ones.
        let mut warm = Vec::new();
        for _ in 0..100 {
            warm.push(kind.spawn().await);
        }
        let_every_task_run().await;

        let before = rss_bytes().unwrap_or(0);
        let mut agents = Vec::with_capacity(IDLE_AGENTS);
        for _ in 0..IDLE_AGENTS {
            agents.push(kind.spawn().await);
        }
        let_every_task_run().await;
        let after = rss_bytes().unwrap_or(0);
        println!("{} {}", kind.name(), after.saturating_sub(before) / IDLE_AGENTS as u64);
        black_box((warm, agents));
    });
}

/// Runs the memory measurement of every variant, each in a child process,
/// and prints the figures.
fn memory_report() {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut figures = Vec::new();
    for kind in KINDS {
        let Ok(output) = Command::new(&exe).env(MEMORY_ENV, kind.name()).output() else {
            return;
        };
        let text = String::from_utf8_lossy(&output.stdout);
        let bytes = text.lines().find_map(|line| {
            let (name, bytes) = line.split_once(' ')?;
            if name == kind.name() { bytes.trim().parse::<u64>().ok() } else { None }
        });
        if let Some(bytes) = bytes {
            figures.push((kind, bytes));
        }
    }
    println!("memory per idle agent ({IDLE_AGENTS} spawned, RSS growth):");
    let bare = figures.iter().find(|(kind, _)| *kind == Kind::BareActor).map(|(_, bytes)| *bytes);
    for (kind, bytes) in &figures {
        #[allow(clippy::cast_precision_loss)] // display figures
        let (kb, ratio) = (*bytes as f64 / 1024.0, bare.map(|bare| *bytes as f64 / bare.max(1) as f64));
        let ratio = ratio.map(|ratio| format!("{ratio:.2}x bare_actor")).unwrap_or_default();
        println!("  {:<20} {kb:>6.2} KB/agent  {ratio}", kind.name());
    }
}

// ===== callgrind mode =====

/// `<variant>:<fire|call>:<n>`: run exactly `n` events and exit.
const CALLGRIND_ENV: &str = "PEERS_CALLGRIND";

/// Creates one agent of the variant on a current-thread runtime and drives
/// `n` events through it once, one way then a flush (`fire`) or as round
/// trips (`call`). The caller subtracts two runs with different `n`, which
/// cancels the start-up and the agent's creation.
fn callgrind_run(spec: &str) -> Result<(), String> {
    let usage = || format!("{CALLGRIND_ENV}={spec}: expected <variant>:<fire|call>:<n>");
    let mut parts = spec.split(':');
    let (Some(kind), Some(mode), Some(n), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(usage());
    };
    let kind = Kind::from_name(kind).ok_or_else(usage)?;
    let n: u64 = n.parse().map_err(|_| usage())?;
    let fire = match mode {
        "fire" if kind.fires() => true,
        "fire" => return Err(format!("{} has no one-way send", kind.name())),
        "call" => false,
        _ => return Err(usage()),
    };
    current_thread().block_on(async {
        let agent = kind.spawn().await;
        if fire {
            agent.fire(n).await;
        } else {
            black_box(agent.calls(n).await);
        }
    });
    Ok(())
}

fn main() {
    if let Ok(spec) = std::env::var(CALLGRIND_ENV) {
        if let Err(message) = callgrind_run(&spec) {
            eprintln!("{message}");
            std::process::exit(2);
        }
        return;
    }
    if let Ok(name) = std::env::var(MEMORY_ENV) {
        memory_child(Kind::from_name(&name).expect("a known variant"));
        return;
    }
    memory_report();
    check_variants();
    let mut c = Criterion::default().configure_from_args();
    fire_and_forget(&mut c);
    request_response(&mut c);
    throughput(&mut c);
    c.final_summary();
}
