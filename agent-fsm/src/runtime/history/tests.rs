//! The history's own tests: the hop log's ring and runs against a plain
//! record of every hop, and replay's errors.

use super::*;
use crate::Step;
use crate::runtime::test_machine::ab;
use ab::{ActionKind, EventKind, Machine, StateKind};

fn hop(from: StateKind, to: StateKind) -> StepOf<Machine> {
    Step { from, event: Some(EventKind::E), to, action: Some(ActionKind::Go), row: 0 }
}

#[test]
fn the_hop_log_keeps_the_latest_hops_oldest_first() {
    let start = Instant::now();
    let mut history = History::<Machine>::new(Status::In(StateKind::A), 3, None, start);
    for step in 1..=7 {
        let (from, to) = if step % 2 == 1 { (StateKind::A, StateKind::B) } else { (StateKind::B, StateKind::A) };
        history.on_hop(&hop(from, to), true);
        history.on_step(step);
    }
    let steps: Vec<u64> = history.transitions().map(|t| t.step).collect();
    assert_eq!(steps, [5, 6, 7]);
    assert_eq!(history.transitions().len(), 3);
    assert_eq!(history.evicted(), 4);
    assert_eq!(history.transitions().last().map(|t| (t.from, t.to)), Some((StateKind::A, StateKind::B)));

    let mut empty = History::<Machine>::new(Status::In(StateKind::A), 0, None, start);
    empty.on_hop(&hop(StateKind::A, StateKind::B), true);
    assert_eq!(empty.transitions().len(), 0);
    assert_eq!(empty.current().0, Status::In(StateKind::B));
}

/// A log that differs in the action alone, or in the state alone,
/// diverges, and the error names both by kind.
#[test]
fn replay_names_the_divergence_by_kind() {
    let record = |action, state| EventRecord { event: ab::Event::E, action, state: Status::In(state) };
    let good = [record(ActionKind::Go, StateKind::B), record(ActionKind::Go, StateKind::A)];
    assert_eq!(replay(&mut Machine::new(), &good), Ok(()));
    let wrong_state = [record(ActionKind::Go, StateKind::B), record(ActionKind::Go, StateKind::B)];
    assert_eq!(
        replay(&mut Machine::new(), &wrong_state),
        Err(ReplayError::Diverged {
            index: 1,
            expected_action: ActionKind::Go,
            actual_action: ActionKind::Go,
            expected_state: Status::In(StateKind::B),
            actual_state: Status::In(StateKind::A),
        })
    );
    let wrong_action = [record(ActionKind::Stay, StateKind::B)];
    let err = replay(&mut Machine::new(), &wrong_action).expect_err("the action differs");
    assert!(
        matches!(
            err,
            ReplayError::Diverged { index: 0, expected_action: ActionKind::Stay, actual_action: ActionKind::Go, .. }
        ),
        "{err:?}"
    );
}

/// The hop log as it was before runs: every hop written whole, the clock
/// read by the first hop after it expired. The reference the folded log
/// must read back as.
struct Plain {
    all: Vec<TransitionRecordOf<Machine>>,
    entered: Instant,
    now: Instant,
    clock_read: bool,
    steps: u64,
}

impl Plain {
    fn new(now: Instant) -> Self {
        Self { all: Vec::new(), entered: now, now, clock_read: false, steps: 0 }
    }

    fn hop(&mut self, hop: &StepOf<Machine>) {
        if !self.clock_read {
            self.clock_read = true;
            self.now = Instant::now();
        }
        self.all.push(TransitionRecord {
            step: self.steps + 1,
            from: hop.from,
            event: hop.event,
            to: hop.to,
            action: hop.action,
            row: hop.row,
            start: self.entered,
            duration: self.now.saturating_duration_since(self.entered),
            run: 1,
        });
        if hop.from != hop.to {
            self.entered = self.now;
        }
    }

    /// The latest `capacity` hops and how many are gone.
    fn kept(&self, capacity: usize) -> (Vec<TransitionRecordOf<Machine>>, u64) {
        let skip = self.all.len().saturating_sub(capacity);
        (self.all[skip..].to_vec(), skip as u64)
    }
}

/// Hops a test picks from: self-loops that differ in one field each, and
/// changes of state.
fn pick(index: usize) -> StepOf<Machine> {
    let (a, b) = (StateKind::A, StateKind::B);
    let (e, go, stay) = (Some(EventKind::E), Some(ActionKind::Go), Some(ActionKind::Stay));
    let hops = [
        Step { from: a, event: e, to: a, action: stay, row: 0 },
        Step { from: a, event: e, to: a, action: stay, row: 0 },
        Step { from: b, event: e, to: b, action: stay, row: 0 },
        Step { from: a, event: e, to: a, action: stay, row: 1 },
        Step { from: a, event: None, to: a, action: stay, row: 0 },
        Step { from: a, event: e, to: a, action: go, row: 0 },
        Step { from: a, event: e, to: b, action: go, row: 2 },
        Step { from: b, event: e, to: a, action: None, row: 3 },
    ];
    hops[index % hops.len()]
}

fn self_loop() -> StepOf<Machine> {
    pick(0)
}

/// Runs `ops` on a history of `capacity` and on the plain log, under
/// paused time, and checks that every read sees the same hops and the
/// same count of evicted ones.
async fn same_as_plain(capacity: usize, ops: Vec<Op>) {
    let mut history = History::<Machine>::new(Status::In(StateKind::A), capacity, None, Instant::now());
    let mut plain = Plain::new(Instant::now());
    let read = |history: &mut History<Machine>, plain: &Plain| {
        history.mark_read(Instant::now());
        let (kept, evicted) = plain.kept(capacity);
        assert_eq!(history.transitions().copied().collect::<Vec<_>>(), kept);
        assert_eq!(history.evicted(), evicted);
        assert_eq!(history.steps(), plain.steps);
    };
    for op in ops {
        match op {
            Op::Event(hops) => {
                for hop in hops.into_iter().map(pick) {
                    history.on_hop(&hop, hop.from != hop.to);
                    plain.hop(&hop);
                }
                plain.steps += 1;
                history.on_step(plain.steps);
            }
            Op::Burst(millis) => {
                tokio::time::advance(Duration::from_millis(millis)).await;
                history.expire_clock();
                plain.clock_read = false;
            }
            Op::Read => read(&mut history, &plain),
        }
    }
    read(&mut history, &plain);
}

/// What the worker does to a history.
#[derive(Debug, Clone)]
enum Op {
    /// An event with these hops ([`pick`]'s indices; none: refused), then
    /// its step counted.
    Event(Vec<usize>),
    /// A new burst, this many milliseconds later (0: a long burst's clock
    /// read again).
    Burst(u64),
    /// A reader reads the history.
    Read,
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        // Mostly the same self-loop, so that runs form.
        6 => Just(Op::Event(vec![0])),
        4 => proptest::collection::vec(0..8usize, 0..3).prop_map(Op::Event),
        1 => (0..3u64).prop_map(Op::Burst),
        1 => Just(Op::Read),
    ]
}

fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("a runtime")
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// Whatever the hops, bursts, refused events and reads, the log reads
    /// back as every hop written whole would: same steps, times, kinds and
    /// rows, the latest `capacity` of them, the rest counted as evicted.
    #[test]
    fn the_folded_log_reads_back_as_every_hop(
        capacity in 0..8usize,
        ops in proptest::collection::vec(op(), 0..200),
    ) {
        paused().block_on(same_as_plain(capacity, ops));
    }
}

/// A long run of one self-loop, longer than the capacity, around a
/// refused event, a new burst and a change of state.
#[test]
fn runs_longer_than_the_log_read_back_hop_by_hop() {
    let mut ops = vec![Op::Event(vec![6]), Op::Event(vec![3])];
    ops.extend(std::iter::repeat_n(Op::Event(vec![1]), 40));
    ops.extend([Op::Event(vec![]), Op::Event(vec![0]), Op::Event(vec![0]), Op::Burst(5), Op::Event(vec![0])]);
    ops.extend([Op::Read, Op::Event(vec![0]), Op::Event(vec![6, 7]), Op::Event(vec![0])]);
    for capacity in [0, 1, 3, 50, 100] {
        paused().block_on(same_as_plain(capacity, ops.clone()));
    }
}

/// The point of runs: repeated self-loops of a burst take one record
/// until the history is read, and a new burst, a different self-loop or
/// a refused event in between starts another.
#[test]
fn a_burst_of_one_self_loop_is_one_record() {
    paused().block_on(async {
        let mut history = History::<Machine>::new(Status::In(StateKind::A), 64, None, Instant::now());
        let mut step = 0;
        let mut event = |history: &mut History<Machine>, hop: Option<StepOf<Machine>>| {
            if let Some(hop) = hop {
                history.on_hop(&hop, hop.from != hop.to);
            }
            step += 1;
            history.on_step(step);
        };
        for _ in 0..49 {
            event(&mut history, Some(self_loop()));
        }
        assert_eq!(history.hops.ring().len(), 1);
        event(&mut history, Some(pick(3)));
        event(&mut history, Some(pick(3)));
        assert_eq!(history.hops.ring().len(), 2);
        event(&mut history, None);
        event(&mut history, Some(pick(3)));
        assert_eq!(history.hops.ring().len(), 3);
        history.expire_clock();
        event(&mut history, Some(pick(3)));
        assert_eq!(history.hops.ring().len(), 4);
        history.mark_read(Instant::now());
        assert_eq!(history.transitions().len(), 53);
        let steps: Vec<u64> = history.transitions().map(|t| t.step).collect();
        assert_eq!(steps, (1..=51).chain(53..=54).collect::<Vec<_>>());
    });
}

/// The run count lives in what was the record's padding: a record of a
/// machine with one-byte kinds is no bigger than before runs.
#[cfg(target_pointer_width = "64")]
#[test]
fn the_run_count_costs_no_space() {
    assert_eq!(std::mem::size_of::<TransitionRecordOf<Machine>>(), 56);
}

/// Debug output shows every hop, even of a run not unfolded yet, and
/// not the run count, the log's own business.
#[test]
fn debug_shows_every_hop_of_a_run() {
    let mut history = History::<Machine>::new(Status::In(StateKind::A), 8, None, Instant::now());
    for step in 1..=3 {
        history.on_hop(&self_loop(), false);
        history.on_step(step);
    }
    let shown = format!("{history:?}");
    assert_eq!(shown.matches("TransitionRecord {").count(), 3, "{shown}");
    assert!(shown.contains("step: 3, from: A, event: Some(E), to: A, action: Some(Stay), row: 0"), "{shown}");
    assert!(!shown.contains("run"), "{shown}");
}
