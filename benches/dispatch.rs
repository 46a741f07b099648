//! Dispatch cost of the generated `Loom::handle_event` against a hand-written
//! machine over the same types (`support/hand.rs`, `HandLoom`: the baseline).
//!
//! Traces (built outside the timed region, fed by value so the machine drops
//! the events' strings as a real run would; every action is dropped right
//! away, as an executor would once it has performed it):
//! - `a_text_turn`: `UserInput`, 2,000 `TextDelta`, text-only `Completed`
//!   (2,002 events);
//! - `b_tool_loop`: `UserInput`, 500 x (`Completed` with 4 tool calls, 4
//!   `ToolCompleted` out of call order, `PostToolsHookCompleted`), text-only
//!   `Completed` (3,002 events);
//! - `flatness/<machine>/<n>`: `CallingLlm` with `n` messages in the
//!   conversation, 1,000 `TextDelta` events.
//!
//! Before anything is measured, the machines are run in lockstep over every
//! trace (and coverage traces that visit every row, the refused pair and the
//! catch-all) and must return the same action for every event and be in the
//! same state after it; the benched traces must never reach the catch-all.
//!
//! Modes:
//! - `cargo bench --bench dispatch -- [criterion args]`: criterion.
//! - `DISPATCH_CALLGRIND=<gen|hand>-<a|b|flat10|flat100|flat1000|flat10000>`
//!   (and optionally `DISPATCH_REPS=n`, default 5): runs that trace `n`
//!   times through `run_gen` / `run_hand` (`#[inline(never)]`,
//!   the functions to pass to callgrind's `--toggle-collect`) and prints
//!   `events=<total events fed>`; see `scripts/callgrind_dispatch.sh`.
//! - `DISPATCH_AB=<rounds>`: generated and hand-written run
//!   one after the other, round after round (default 200), on every trace;
//!   prints min and median ns/event (wall clock, noise hits all alike).
//!   `DISPATCH_AB_PAIR=hand,handdrop` times `run_hand` against
//!   `run_hand_drop` instead (the store-forwarding experiment; the columns
//!   keep their names: `gen` is the first of the pair). `handdrop` is also
//!   a machine for `DISPATCH_CALLGRIND` (`handdrop-a`, counted by
//!   `--toggle-collect=*run_hand_drop*`).
//! - `DISPATCH_VERIFY=0` skips the lockstep check (it runs otherwise, in
//!   both modes; the callgrind script runs it once natively first).

mod support;

use agent_fsm::{Observer, UnhandledOf};
use agent_fsm_examples::loom::{AgentConfig, AgentEvent, AgentState, Loom};
use criterion::{BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use support::feed::{feeders, time_trace};
use support::hand::{HAND_UNHANDLED, HandLoom};
use support::traces::{self, Trace};

feeders! {
    /// The generated machine.
    run_gen: Loom;
    /// The hand-written machine.
    run_hand: HandLoom;
}

/// `run_hand` with each action dropped where the step wrote it instead of
/// moved into `black_box` (the experiment behind docs/performance.md's
/// store-forwarding figures): the move is two 16-byte loads over the three
/// smaller stores that wrote the action, which cannot be forwarded.
/// Only for the hand-written machine, whose step is `#[inline(always)]`: a
/// second caller of the generated step in this crate changes whether
/// `run_gen` inlines it.
#[inline(never)]
fn run_hand_drop(machine: &mut HandLoom, events: &mut Vec<AgentEvent>) {
    for event in events.drain(..) {
        drop(machine.handle_event(event));
    }
}

// ---------------------------------------------------------------------------
// Verification

#[derive(Default)]
struct CountUnhandled(usize);

impl Observer<Loom> for CountUnhandled {
    fn on_unhandled(&mut self, _: &UnhandledOf<Loom>) {
        self.0 += 1;
    }
}

/// Runs the generated machine and the hand-written one in lockstep over
/// `trace`; panics on the first difference. Returns how many events each
/// left unhandled.
fn lockstep(trace: &Trace) -> (usize, usize) {
    let mut generated = Loom::with_state(trace.start.clone(), traces::config());
    let mut hand = HandLoom::with_state(trace.start.clone(), traces::config());
    let mut observer = CountUnhandled::default();
    let hand_before = HAND_UNHANDLED.load(std::sync::atomic::Ordering::Relaxed);
    for (i, event) in trace.events.iter().enumerate() {
        let a = generated.handle_event_with(event.clone(), &mut observer);
        let b = hand.handle_event(event.clone());
        let name = &trace.name;
        assert_eq!(a, b, "{name}: event #{i} ({event:?}): actions differ");
        let state = generated.state();
        assert_eq!(state, &hand.state, "{name}: event #{i} ({event:?}): states differ");
    }
    let hand_unhandled = HAND_UNHANDLED.load(std::sync::atomic::Ordering::Relaxed) - hand_before;
    (observer.0, hand_unhandled)
}

fn verify() {
    let mut benched = vec![traces::text_turn(), traces::tool_loop()];
    benched.extend(traces::FLAT_SIZES.iter().map(|&n| traces::flat(n)));
    for trace in &benched {
        let (g, h) = lockstep(trace);
        assert_eq!((g, h), (0, 0), "{}: a benched trace reached the catch-all", trace.name);
    }
    for trace in support::coverage::traces() {
        let (g, h) = lockstep(&trace);
        assert_eq!(g, h, "{}: unhandled counts differ", trace.name);
        assert!(g > 0, "{}: the coverage trace should reach the catch-all", trace.name);
    }
    eprintln!(
        "dispatch: generated and hand-written machines agree on every trace (actions and states after every event)"
    );
}

// ---------------------------------------------------------------------------
// Criterion

fn bench_trace(c: &mut Criterion, trace: &Trace) {
    let mut group = c.benchmark_group(trace.name.as_str());
    group.throughput(Throughput::Elements(trace.events.len() as u64));
    group.bench_function("generated", |b| time_trace(b, trace, Loom::with_state, run_gen));
    group.bench_function("hand", |b| time_trace(b, trace, HandLoom::with_state, run_hand));
    group.finish();
}

fn bench_flatness(c: &mut Criterion) {
    let mut group = c.benchmark_group("flatness");
    group.throughput(Throughput::Elements(traces::FLAT_DELTAS as u64));
    for &n in &traces::FLAT_SIZES {
        let trace = traces::flat(n);
        group.bench_with_input(BenchmarkId::new("generated", n), &trace, |b, t| {
            time_trace(b, t, Loom::with_state, run_gen);
        });
        group.bench_with_input(BenchmarkId::new("hand", n), &trace, |b, t| {
            time_trace(b, t, HandLoom::with_state, run_hand)
        });
    }
    group.finish();
}

// ---------------------------------------------------------------------------
// Callgrind mode

fn callgrind(spec: &str) {
    let (which, trace) =
        spec.split_once('-').unwrap_or_else(|| panic!("DISPATCH_CALLGRIND={spec}: expected <gen|hand>-<trace>"));
    let trace = match trace {
        "a" => traces::text_turn(),
        "b" => traces::tool_loop(),
        flat if flat.starts_with("flat") => {
            traces::flat(flat["flat".len()..].parse().unwrap_or_else(|_| panic!("bad flatness size in {spec}")))
        }
        other => panic!("unknown trace `{other}`; expected a, b or flat<N>"),
    };
    let reps: usize = std::env::var("DISPATCH_REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(5);
    let mut fed = 0;
    for _ in 0..reps {
        let events = trace.events.clone();
        fed += events.len();
        match which {
            "gen" => black_box(once(&trace, Loom::with_state, run_gen, events)),
            "hand" => black_box(once(&trace, HandLoom::with_state, run_hand, events)),
            "handdrop" => black_box(once(&trace, HandLoom::with_state, run_hand_drop, events)),
            other => panic!("unknown machine `{other}`; expected gen, hand or handdrop"),
        };
    }
    println!("events={fed}");
}

// ---------------------------------------------------------------------------
// Interleaved A/B mode

/// Time of one run of `trace` through a fresh machine, setup excluded.
fn once<M>(
    trace: &Trace,
    make: fn(AgentState, AgentConfig) -> M,
    run: fn(&mut M, &mut Vec<AgentEvent>),
    mut events: Vec<AgentEvent>,
) -> std::time::Duration {
    let mut machine = make(trace.start.clone(), traces::config());
    let start = std::time::Instant::now();
    run(&mut machine, &mut events);
    let elapsed = start.elapsed();
    black_box(&machine);
    elapsed
}

/// ns per event of one run of `trace` through `which`.
fn time_once(which: &str, trace: &Trace) -> f64 {
    let events = trace.events.clone();
    let n = events.len() as f64;
    let elapsed = match which {
        "gen" => once(trace, Loom::with_state, run_gen, events),
        "hand" => once(trace, HandLoom::with_state, run_hand, events),
        "handdrop" => once(trace, HandLoom::with_state, run_hand_drop, events),
        other => panic!("DISPATCH_AB_PAIR: unknown machine `{other}`; expected gen, hand or handdrop"),
    };
    elapsed.as_nanos() as f64 / n
}

/// `DISPATCH_AB=<rounds>`: the machines run one after the other, round
/// after round (taking turns at going first), on each trace, so a noisy
/// neighbour hits them alike; prints
/// the minimum and the median ns/event of each and the ratios.
fn ab(rounds: usize, pair: [&str; 2]) {
    let mut all = vec![traces::text_turn(), traces::tool_loop()];
    all.extend(traces::FLAT_SIZES.iter().map(|&n| traces::flat(n)));
    println!(
        "{:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "trace", "gen min", "hand min", "gen med", "hand med", "min g/h", "med g/h"
    );
    for trace in &all {
        let mut t = [Vec::new(), Vec::new()];
        for round in 0..rounds {
            // Each goes first in every other round: whatever the first run
            // of a round leaves behind (the allocator's free lists, caches)
            // falls on both alike.
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                t[i].push(time_once(pair[i], trace));
            }
        }
        let stats = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (v[0], v[v.len() / 2])
        };
        let (gmin, gmed) = stats(&mut t[0]);
        let (hmin, hmed) = stats(&mut t[1]);
        println!(
            "{:<14} {gmin:>9.2} {hmin:>9.2} {gmed:>9.2} {hmed:>9.2} {:>9.3} {:>9.3}",
            trace.name,
            gmin / hmin,
            gmed / hmed
        );
    }
}

fn main() {
    // `DISPATCH_VERIFY=0` skips the lockstep check (the callgrind script
    // runs it once natively, then skips it under valgrind).
    if std::env::var("DISPATCH_VERIFY").as_deref() != Ok("0") {
        verify();
    }
    if let Ok(spec) = std::env::var("DISPATCH_CALLGRIND") {
        callgrind(&spec);
        return;
    }
    if let Ok(rounds) = std::env::var("DISPATCH_AB") {
        // `DISPATCH_AB_PAIR=hand,handdrop` times the store-forwarding
        // experiment in the same way, in place of the two machines.
        let pair = std::env::var("DISPATCH_AB_PAIR").unwrap_or_else(|_| "gen,hand".into());
        let pair = pair.split_once(',').unwrap_or(("gen", "hand"));
        ab(rounds.parse().unwrap_or(200), [pair.0, pair.1]);
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    bench_trace(&mut c, &traces::text_turn());
    bench_trace(&mut c, &traces::tool_loop());
    bench_flatness(&mut c);
    c.final_summary();
}
