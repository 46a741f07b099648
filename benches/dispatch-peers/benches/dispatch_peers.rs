//! Per-event dispatch cost of the Loom agent machine written with three
//! peer state-machine crates, side by side with the generated
//! `agent_fsm_examples::loom::Loom` and the hand-written baseline `HandLoom`
//! (`benches/support/hand.rs`, included from the main package as are its
//! traces, `benches/support/traces.rs`).
//!
//! # Machines
//! - `gen`: `Loom::handle_event`, generated from the `#[state_machine]`
//!   table in `src/loom.rs`.
//! - `hand`: `HandLoom`, the same rows written as one hand-made `match`.
//! - `smlang`: smlang's `statemachine!` DSL (`peers/smlang.rs`). Its events
//!   are its own flat enum, converted from `AgentEvent` on every step; state
//!   data reaches guards and actions only by `&`, so the data that is
//!   mutated or moved from state to state (conversation, executions) lives
//!   in the context, and states carry only what is read (retries, the
//!   pending request, the retry data).
//! - `rust_fsm`: rust-fsm's `state_machine!` DSL (`peers/rust_fsm.rs`). Its
//!   states, inputs and outputs are unit variants with no guards, so all of
//!   Loom's state data lives in a struct beside the machine; the driver
//!   turns each event and Loom's guards into an input, consumes it, and
//!   performs the output kind on the data to build the action.
//! - `statig`: statig's hierarchical `#[state_machine]` (`peers/statig.rs`).
//!   State-local storage carries Loom's data (moved with `mem::take`, which
//!   leaves a fresh empty conversation behind); events arrive by `&`, so
//!   what Loom moves out of an event (message, text, tool calls, outcomes)
//!   is cloned; the `*` rows are a superstate.
//!
//! Every peer returns the shared `AgentAction` (smlang and statig leave it
//! in their context, rust-fsm's driver builds it from the output kind),
//! threads the conversation as Loom does (user message on `UserInput`,
//! assistant message on `Completed`, tool results in call order once all are
//! done), resolves the transient `ProcessingLlmResponse` inline as
//! `HandLoom` does, and falls back to `WaitForInput` with the same warning
//! when no row takes an event. Each writes every row of Loom's table, and
//! each resumes in any of Loom's states (a transient one resolved at once,
//! as `Loom::with_state` does), so that the coverage traces can start
//! where they do.
//!
//! # Traces
//! Built outside the timed region and fed by value (each machine drops the
//! events' strings, as a real run would; every action is dropped at once):
//! - `a_text_turn`: `UserInput`, 2,000 `TextDelta`, text-only `Completed`;
//! - `b_tool_loop`: `UserInput`, 500 x (`Completed` with 4 tool calls, 4
//!   `ToolCompleted` out of call order, `PostToolsHookCompleted`), text-only
//!   `Completed`.
//!
//! Before anything is measured, every machine runs in lockstep with
//! `HandLoom` over both traces and over the coverage traces of
//! `benches/support/coverage.rs` (every row of the table, the catch-all,
//! the refused pair, the `*` rows from every state): each event must give
//! an equal action (`==`), leave both in states of the same name, and
//! reach the catch-all in both or in neither; the benched traces must never
//! reach it. The first difference panics. The peers' state data is compared
//! through the actions: a trace goes on after each row that changes the
//! conversation until a request carries it.
//!
//! # Running
//! - criterion: `cargo bench --manifest-path benches/dispatch-peers/Cargo.toml
//!   -- [criterion args]` (from the repository root); groups `a_text_turn`
//!   and `b_tool_loop`, one function per machine, throughput in events.
//! - callgrind: `benches/dispatch-peers/callgrind.sh` prints instructions
//!   per event of every machine on both traces and the ratio to `hand`. It
//!   runs this binary with `PEERS_DISPATCH_CALLGRIND=<machine>-<a|b>`
//!   (`machine`: `gen`, `hand`, `smlang`, `rust_fsm`, `statig`; optionally
//!   `DISPATCH_REPS=n`, default 5), which feeds that trace `n` times through
//!   `run_<machine>` (`#[inline(never)]`, the function given to
//!   `--toggle-collect`) and prints `events=<total events fed>`.
//! - `PEERS_DISPATCH_AB=<rounds>` (default 200): the five machines run
//!   interleaved, round after round, the order rotating; prints min and
//!   median ns/event of each and the medians' ratios to `hand` and to the
//!   fastest peer. Wall clock, so noise hits every machine alike.
//! - `PEERS_DISPATCH_VERIFY=0` skips the lockstep check (the script runs it
//!   once natively, then skips it under valgrind).

#[path = "../../support/coverage.rs"]
mod coverage;
#[path = "../../support/feed.rs"]
mod feed;
#[path = "../../support/hand.rs"]
mod hand;
mod peers;
// Only the two benched traces are used here; the flatness traces and their
// helpers stay unused.
#[allow(dead_code)]
#[path = "../../support/traces.rs"]
mod traces;

use agent_fsm::{Observer, UnhandledOf};
use agent_fsm_examples::loom::{AgentAction, AgentConfig, AgentEvent, AgentState, Loom};
use criterion::{Criterion, Throughput};
use feed::{feeders, time_trace};
use hand::{HAND_UNHANDLED, HandLoom};
use peers::PEER_UNHANDLED;
use peers::rust_fsm::RustFsmLoom;
use peers::smlang::SmlangLoom;
use peers::statig::StatigLoom;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use traces::Trace;

// ---------------------------------------------------------------------------
// The machines, behind one face

/// What the lockstep check needs of a machine.
trait Machine: Sized {
    /// A machine resumed in `state`.
    fn with_state(state: AgentState, config: AgentConfig) -> Self;
    /// One event in, its action out.
    fn step(&mut self, event: AgentEvent) -> AgentAction;
    /// The current state's name, as Loom spells it.
    fn state_name(&self) -> &'static str;
    /// How many events machines of this kind left to their catch-all so
    /// far, over the whole process.
    fn unhandled_so_far() -> usize;
}

/// Events the generated machine left unhandled, over the whole process.
static GEN_UNHANDLED: AtomicUsize = AtomicUsize::new(0);

/// Counts the generated machine's catch-alls into `GEN_UNHANDLED`.
struct CountUnhandled;

impl Observer<Loom> for CountUnhandled {
    fn on_unhandled(&mut self, _: &UnhandledOf<Loom>) {
        GEN_UNHANDLED.fetch_add(1, Ordering::Relaxed);
    }
}

impl Machine for Loom {
    fn with_state(state: AgentState, config: AgentConfig) -> Self {
        Loom::with_state(state, config)
    }
    fn step(&mut self, event: AgentEvent) -> AgentAction {
        // Observed, so that a catch-all is seen (only in the check).
        self.handle_event_with(event, &mut CountUnhandled)
    }
    fn state_name(&self) -> &'static str {
        self.state().name()
    }
    fn unhandled_so_far() -> usize {
        GEN_UNHANDLED.load(Ordering::Relaxed)
    }
}

impl Machine for HandLoom {
    fn with_state(state: AgentState, config: AgentConfig) -> Self {
        HandLoom::with_state(state, config)
    }
    fn step(&mut self, event: AgentEvent) -> AgentAction {
        self.handle_event(event)
    }
    fn state_name(&self) -> &'static str {
        self.state.name()
    }
    fn unhandled_so_far() -> usize {
        HAND_UNHANDLED.load(Ordering::Relaxed)
    }
}

/// `Machine` for a peer wrapper, whose methods have the same names.
macro_rules! peer_machine {
    ($($ty:ty),*) => {$(
        impl Machine for $ty {
            fn with_state(state: AgentState, config: AgentConfig) -> Self {
                <$ty>::with_state(state, config)
            }
            fn step(&mut self, event: AgentEvent) -> AgentAction {
                self.handle_event(event)
            }
            fn state_name(&self) -> &'static str {
                <$ty>::state_name(self)
            }
            fn unhandled_so_far() -> usize {
                PEER_UNHANDLED.load(Ordering::Relaxed)
            }
        }
    )*};
}
peer_machine!(SmlangLoom, RustFsmLoom, StatigLoom);

// ---------------------------------------------------------------------------
// The timed (and, under callgrind, counted) regions

feeders! {
    /// The generated machine.
    run_gen: Loom;
    /// The hand-written machine.
    run_hand: HandLoom;
    /// The smlang machine.
    run_smlang: SmlangLoom;
    /// The rust-fsm machine.
    run_rust_fsm: RustFsmLoom;
    /// The statig machine.
    run_statig: StatigLoom;
}

// ---------------------------------------------------------------------------
// Verification

/// Runs `M` and `HandLoom` in lockstep over `trace`; panics on the first
/// difference in action, state, or whether the event reached the
/// catch-all. Returns how many events went to it.
fn lockstep<M: Machine>(machine: &str, trace: &Trace) -> usize {
    let mut peer = M::with_state(trace.start.clone(), traces::config());
    let mut hand = HandLoom::with_state(trace.start.clone(), traces::config());
    let name = &trace.name;
    let mut unhandled = 0;
    for (i, event) in trace.events.iter().enumerate() {
        let (peer_before, hand_before) = (M::unhandled_so_far(), HandLoom::unhandled_so_far());
        let a = peer.step(event.clone());
        let b = hand.step(event.clone());
        assert_eq!(a, b, "{machine} on {name}: event #{i} ({event:?}): actions differ from hand's");
        assert_eq!(
            peer.state_name(),
            Machine::state_name(&hand),
            "{machine} on {name}: event #{i} ({event:?}): states differ from hand's"
        );
        let (peer_fell, hand_fell) =
            (M::unhandled_so_far() != peer_before, HandLoom::unhandled_so_far() != hand_before);
        assert_eq!(
            peer_fell, hand_fell,
            "{machine} on {name}: event #{i} ({event:?}): catch-all reached by one machine only (peer, hand)"
        );
        unhandled += usize::from(hand_fell);
    }
    unhandled
}

/// Every machine against `HandLoom` on both benched traces, where none may
/// reach its catch-all, and on the coverage traces.
fn verify() {
    fn all(trace: &Trace) -> [usize; 4] {
        [
            lockstep::<Loom>("gen", trace),
            lockstep::<SmlangLoom>("smlang", trace),
            lockstep::<RustFsmLoom>("rust_fsm", trace),
            lockstep::<StatigLoom>("statig", trace),
        ]
    }
    for trace in [traces::text_turn(), traces::tool_loop()] {
        assert_eq!(all(&trace), [0; 4], "{}: a benched trace reached a catch-all", trace.name);
    }
    for trace in coverage::traces() {
        let unhandled = all(&trace);
        assert!(unhandled[0] > 0, "{}: the coverage trace should reach the catch-all", trace.name);
    }
    eprintln!(
        "dispatch_peers: gen, smlang, rust_fsm and statig agree with hand on both traces and every coverage trace \
         (actions, states, catch-alls)"
    );
}

// ---------------------------------------------------------------------------
// Criterion

/// One criterion group per trace, the five machines in it.
fn bench_trace(c: &mut Criterion, trace: &Trace) {
    let mut group = c.benchmark_group(trace.name.as_str());
    group.throughput(Throughput::Elements(trace.events.len() as u64));
    group.bench_function("gen", |b| time_trace(b, trace, Loom::with_state, run_gen));
    group.bench_function("hand", |b| time_trace(b, trace, HandLoom::with_state, run_hand));
    group.bench_function("smlang", |b| time_trace(b, trace, SmlangLoom::with_state, run_smlang));
    group.bench_function("rust_fsm", |b| time_trace(b, trace, RustFsmLoom::with_state, run_rust_fsm));
    group.bench_function("statig", |b| time_trace(b, trace, StatigLoom::with_state, run_statig));
    group.finish();
}

// ---------------------------------------------------------------------------
// Callgrind mode

/// One run of `trace` through a fresh `M`, setup outside `run`.
fn once<M: Machine>(trace: &Trace, run: fn(&mut M, &mut Vec<AgentEvent>)) -> usize {
    let mut machine = M::with_state(trace.start.clone(), traces::config());
    let mut events = trace.events.clone();
    let fed = events.len();
    run(&mut machine, &mut events);
    black_box(&machine);
    fed
}

/// `PEERS_DISPATCH_CALLGRIND=<machine>-<a|b>`: that trace, `DISPATCH_REPS`
/// times, through `run_<machine>`; prints the events fed.
fn callgrind(spec: &str) {
    let (which, trace) =
        spec.split_once('-').unwrap_or_else(|| panic!("PEERS_DISPATCH_CALLGRIND={spec}: expected <machine>-<a|b>"));
    let trace = match trace {
        "a" => traces::text_turn(),
        "b" => traces::tool_loop(),
        other => panic!("unknown trace `{other}`; expected a or b"),
    };
    let reps: usize = std::env::var("DISPATCH_REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(5);
    let mut fed = 0;
    for _ in 0..reps {
        fed += match which {
            "gen" => once(&trace, run_gen),
            "hand" => once(&trace, run_hand),
            "smlang" => once(&trace, run_smlang),
            "rust_fsm" => once(&trace, run_rust_fsm),
            "statig" => once(&trace, run_statig),
            other => panic!("unknown machine `{other}`; expected gen, hand, smlang, rust_fsm or statig"),
        };
    }
    println!("events={fed}");
}

// ---------------------------------------------------------------------------
// Interleaved mode

/// ns per event of one run of `trace` through a fresh `M`, setup excluded.
fn time_once<M: Machine>(trace: &Trace, run: fn(&mut M, &mut Vec<AgentEvent>)) -> f64 {
    let mut machine = M::with_state(trace.start.clone(), traces::config());
    let mut events = trace.events.clone();
    let n = events.len() as f64;
    let start = std::time::Instant::now();
    run(&mut machine, &mut events);
    let elapsed = start.elapsed();
    black_box(&machine);
    elapsed.as_nanos() as f64 / n
}

/// `PEERS_DISPATCH_AB=<rounds>`: the five machines run one after the
/// other, round after round, each trace, the order rotating every round so
/// that each is first as often as the others, and a noisy neighbour hits
/// them alike; prints each one's minimum and median ns/event and the
/// medians' ratio to the fastest peer's (smlang, rust-fsm, statig).
fn interleaved(rounds: usize) {
    const NAMES: [&str; 5] = ["gen", "hand", "smlang", "rust_fsm", "statig"];
    for trace in [traces::text_turn(), traces::tool_loop()] {
        let mut times: [Vec<f64>; 5] = Default::default();
        for round in 0..rounds {
            for k in 0..NAMES.len() {
                let i = (round + k) % NAMES.len();
                times[i].push(match i {
                    0 => time_once(&trace, run_gen),
                    1 => time_once(&trace, run_hand),
                    2 => time_once(&trace, run_smlang),
                    3 => time_once(&trace, run_rust_fsm),
                    _ => time_once(&trace, run_statig),
                });
            }
        }
        let stats: Vec<(f64, f64)> = times
            .iter_mut()
            .map(|v| {
                v.sort_by(f64::total_cmp);
                (v[0], v[v.len() / 2])
            })
            .collect();
        let fastest_peer = stats[2..].iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
        println!("{} ({rounds} rounds; ns/event)", trace.name);
        println!("{:<10} {:>9} {:>9} {:>9} {:>12}", "machine", "min", "median", "x hand", "x best peer");
        for (name, (min, med)) in NAMES.iter().zip(&stats) {
            println!("{name:<10} {min:>9.2} {med:>9.2} {:>9.3} {:>12.3}", med / stats[1].1, med / fastest_peer);
        }
    }
}

fn main() {
    if std::env::var("PEERS_DISPATCH_VERIFY").as_deref() != Ok("0") {
        verify();
    }
    if let Ok(spec) = std::env::var("PEERS_DISPATCH_CALLGRIND") {
        callgrind(&spec);
        return;
    }
    if let Ok(rounds) = std::env::var("PEERS_DISPATCH_AB") {
        interleaved(rounds.parse().unwrap_or(200));
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    bench_trace(&mut c, &traces::text_turn());
    bench_trace(&mut c, &traces::tool_loop());
    c.final_summary();
}
