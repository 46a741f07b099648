//! What a machine did: a bounded log of every hop, time spent per state, the
//! interrupts it received and, when enabled, the log of every event it
//! handled, which [`replay`] feeds into a fresh machine to reproduce the run.
//!
//! The worker ([`executor`](super::executor)) fills the [`History`] from the
//! machine's [`Observer`](crate::Observer) callbacks, so transient states
//! appear as hops of their own. Handles read it with
//! [`MachineHandle::history`](super::MachineHandle::history) or
//! [`MachineHandle::with_history`](super::MachineHandle::with_history).
//! Times are `tokio::time::Instant`s, so tests under paused time see exact
//! durations. To keep clock reads off the per-event path, the worker reads
//! the clock once per burst: when it wakes up, and again every 64 events
//! of a long burst; hops handled within one burst share a timestamp.
//! Identical self-loops of one burst (a stream of text deltas) share
//! everything but their step, so the worker keeps a run of them as one
//! record with a count, and unfolds it into one record per hop before
//! anyone reads the history: readers see every hop.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::error::ReplayError;
use crate::{ActionKindOf, EventKindOf, Kind, Kinded, StateKindOf, StateMachine, Status, StepOf};

mod hops;

use hops::HopLog;

/// One hop of the machine (transient hops included), by kind: `S`, `E` and
/// `A` are the machine's state, event and action kinds (see
/// [`TransitionRecordOf`]).
#[derive(Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransitionRecord<S, E, A> {
    /// Which delivered event caused the hop (1 for the first event the
    /// machine handled). Hops of one event share it.
    pub step: u64,
    /// The state the hop left.
    pub from: S,
    /// The event, `None` for an eventless hop out of a transient state.
    pub event: Option<E>,
    /// The state the hop entered.
    pub to: S,
    /// The row's action, `None` for a hop into a transient state.
    pub action: Option<A>,
    /// Index of the row in the machine's description.
    pub row: usize,
    /// When the machine entered `from` (self-transitions do not re-enter).
    pub start: Instant,
    /// How long the machine had been in `from` when the hop happened.
    pub duration: Duration,
    /// How many hops the record stands for: inside the worker, a run of
    /// identical self-loops of one burst, of steps `step..step + run`;
    /// 1 in every record a reader sees (the log is unfolded first). It fits
    /// in the record's padding.
    run: u32,
}

// Written out: the run count is the log's own business (always 1 here).
impl<S: fmt::Debug, E: fmt::Debug, A: fmt::Debug> fmt::Debug for TransitionRecord<S, E, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransitionRecord")
            .field("step", &self.step)
            .field("from", &self.from)
            .field("event", &self.event)
            .field("to", &self.to)
            .field("action", &self.action)
            .field("row", &self.row)
            .field("start", &self.start)
            .field("duration", &self.duration)
            .finish()
    }
}

/// The [`TransitionRecord`] of machine `M`.
pub type TransitionRecordOf<M> = TransitionRecord<StateKindOf<M>, EventKindOf<M>, ActionKindOf<M>>;

/// Total time spent in one state (`S`, its kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StateTime<S> {
    /// The state.
    pub state: S,
    /// How many times the machine entered it (the initial entry included).
    pub entries: u64,
    /// Time spent in it, the current stay included up to when the history
    /// was read.
    pub total: Duration,
}

/// One event the machine handled, with what it did, for [`replay`]: `E`
/// is the machine's event type, `S` and `A` its state and action kinds
/// (see [`EventRecordOf`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventRecord<E, S, A> {
    /// The event as delivered.
    pub event: E,
    /// The action `handle_event` returned.
    pub action: A,
    /// The state after the event ([`Status::Poisoned`] if the event's row
    /// poisoned the machine).
    pub state: Status<S>,
}

/// The [`EventRecord`] of machine `M`.
pub type EventRecordOf<M> = EventRecord<<M as StateMachine>::Event, StateKindOf<M>, ActionKindOf<M>>;

/// An interrupt the worker carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InterruptRecord {
    /// When it was carried out.
    pub at: Instant,
    /// The cause given to [`interrupt`](super::MachineHandle::interrupt).
    pub cause: Arc<str>,
}

/// The event type's `Clone`, when events are recorded.
type CloneEvent<M> = fn(&<M as StateMachine>::Event) -> <M as StateMachine>::Event;

/// The history of one machine `M`: bounded hop log, time per state,
/// interrupts and the optional event log.
pub struct History<M: StateMachine> {
    /// The bounded hop log, runs of self-loops folded until read.
    hops: HopLog<StateKindOf<M>, EventKindOf<M>, ActionKindOf<M>>,
    /// How many hops (and interrupts) are kept.
    capacity: usize,
    /// Closed stays, summed per state, in order of first exit; the current
    /// stay is added on read.
    closed: Vec<StateTime<StateKindOf<M>>>,
    /// Where each state's entry is in `closed`, by the state kind's
    /// [`index`](Kind::index): its position plus one, 0 for none yet.
    /// Found in one load on every change of state, rather than by a scan.
    slots: Vec<u32>,
    /// Poisoned only for a machine handed over poisoned, before any hop.
    current: Status<StateKindOf<M>>,
    entered: Instant,
    /// The time of the hops of the current burst of events (the worker
    /// reads the clock once per burst, see [`set_clock`](Self::set_clock)).
    now: Instant,
    /// How long the machine had been in `current` at `now`: computed once
    /// per burst, so that a self-loop's record copies it instead of
    /// subtracting two instants on every event.
    stay: Duration,
    /// `now` was read for the current burst; cleared by
    /// [`expire_clock`](Self::expire_clock).
    clock_read: bool,
    /// `None` unless event recording is enabled in the configuration.
    events: Option<Vec<EventRecordOf<M>>>,
    /// The event type's `Clone`, when events are recorded: read here, on
    /// the step's path, rather than through the shared configuration.
    clone_event: Option<CloneEvent<M>>,
    interrupts: VecDeque<InterruptRecord>,
    steps: u64,
    /// When the history was last read, to close the current stay in
    /// [`time_in_state`](Self::time_in_state).
    read_at: Instant,
}

// ===== impl History =====

// Written out: derives would ask `M` itself for the traits.
impl<M: StateMachine> Clone for History<M>
where
    M::Event: Clone,
{
    fn clone(&self) -> Self {
        Self {
            hops: self.hops.clone(),
            capacity: self.capacity,
            closed: self.closed.clone(),
            slots: self.slots.clone(),
            current: self.current,
            entered: self.entered,
            now: self.now,
            stay: self.stay,
            clock_read: self.clock_read,
            events: self.events.clone(),
            clone_event: self.clone_event,
            interrupts: self.interrupts.clone(),
            steps: self.steps,
            read_at: self.read_at,
        }
    }
}

impl<M: StateMachine> fmt::Debug for History<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("History")
            .field("transitions", &self.hops.hops().collect::<Vec<_>>())
            .field("evicted", &self.hops.evicted())
            .field("current", &self.current)
            .field("steps", &self.steps)
            .field("events", &self.events.as_ref().map(Vec::len))
            .field("interrupts", &self.interrupts)
            .finish_non_exhaustive()
    }
}

impl<M: StateMachine> History<M> {
    /// An empty history of a machine in `initial` since `now`. Allocates
    /// nothing until the first hop, so idle machines stay small.
    pub(crate) fn new(
        initial: Status<StateKindOf<M>>,
        capacity: usize,
        clone_event: Option<CloneEvent<M>>,
        now: Instant,
    ) -> Self {
        Self {
            hops: HopLog::new(capacity),
            capacity,
            closed: Vec::new(),
            slots: Vec::new(),
            current: initial,
            entered: now,
            now,
            stay: Duration::ZERO,
            clock_read: false,
            events: clone_event.map(|_| Vec::new()),
            clone_event,
            interrupts: VecDeque::new(),
            steps: 0,
            read_at: now,
        }
    }

    /// Sets the time of the hops that follow, up to the next call: the
    /// worker reads the clock once per burst of events. The stay in the
    /// current state up to `now` is computed here, once, rather than for
    /// every hop: within a burst it changes only when the state does (it
    /// is then empty).
    #[inline]
    pub(crate) fn set_clock(&mut self, now: Instant) {
        self.clock_read = true;
        self.now = now;
        self.stay = now.saturating_duration_since(self.entered);
        // No run is open here: only the first hop of a burst reads the
        // clock, after `expire_clock` closed it.
    }

    /// Reads the clock for the hops that follow, unless it was read since
    /// the last [`expire_clock`](Self::expire_clock): one read per burst.
    #[inline]
    pub(crate) fn read_clock_once(&mut self) {
        if !self.clock_read {
            self.set_clock(Instant::now());
        }
    }

    /// Makes the next [`read_clock_once`](Self::read_clock_once) read the
    /// clock: the worker sleeps or yields (time passes while others run,
    /// which the next hop must not charge to the wrong stay), or a long
    /// burst goes on.
    #[inline]
    pub(crate) fn expire_clock(&mut self) {
        self.clock_read = false;
        // The next hop reads the clock: it cannot join the current run.
        self.hops.close_run();
    }

    /// When the machine entered its current state (what the next hop that
    /// leaves it will record), for the time-in-state metric.
    #[cfg(feature = "metrics")]
    pub(crate) fn entered(&self) -> Instant {
        self.entered
    }

    /// The time of the current burst's hops, for the time-in-state metric.
    #[cfg(feature = "metrics")]
    pub(crate) fn now(&self) -> Instant {
        self.now
    }

    /// Records one hop of the event being delivered, the one after the
    /// last [`on_step`](Self::on_step) counted, at the burst's time (read
    /// by the first hop of a burst, see
    /// [`read_clock_once`](Self::read_clock_once)).
    /// `changed`: whether `hop.from != hop.to`, computed once by the caller.
    ///
    /// A self-loop that repeats the previous hop of the burst, for the next
    /// step, only counts into that hop's record: the same time, stay and
    /// kinds, nothing else to write.
    #[inline]
    pub(crate) fn on_hop(&mut self, hop: &StepOf<M>, changed: bool) {
        if changed || !self.hops.extend_run(hop, self.steps) {
            self.write_hop(hop, changed);
        }
    }

    /// [`on_hop`](Self::on_hop)'s new record (the self-loops of a run skip
    /// it). Inlined: out of line, its call and saved registers cost about
    /// 25 instructions, which machines whose every hop changes state pay
    /// on every hop.
    #[inline(always)]
    fn write_hop(&mut self, hop: &StepOf<M>, changed: bool) {
        self.read_clock_once();
        self.hops.push(hop, self.steps + 1, self.entered, self.stay, !changed);
        if changed {
            self.on_change(hop.from, hop.to);
        }
    }

    /// Closes the stay in `from` and enters `to` at the burst's time.
    #[inline]
    fn on_change(&mut self, from: StateKindOf<M>, to: StateKindOf<M>) {
        let stay = self.stay;
        let closed = self.entry_mut(from);
        // After the first change of state in a burst the stay is empty.
        if !stay.is_zero() {
            closed.total += stay;
        }
        closed.entries += 1;
        self.current = Status::In(to);
        self.entered = self.now;
        self.stay = Duration::ZERO;
    }

    /// The event type's `Clone`, if events are recorded.
    #[inline]
    pub(crate) fn clone_event(&self) -> Option<CloneEvent<M>> {
        self.clone_event
    }

    /// Counts delivered event number `step`, after its hops (if any).
    pub(crate) fn on_step(&mut self, step: u64) {
        self.steps = step;
    }

    /// Appends to the event log, if it is enabled.
    pub(crate) fn record_event(&mut self, record: impl FnOnce() -> EventRecordOf<M>) {
        if let Some(events) = &mut self.events {
            events.push(record());
        }
    }

    /// Records an interrupt; keeps at most `capacity` of them, as the hop
    /// log does (none for 0).
    pub(crate) fn record_interrupt(&mut self, cause: Arc<str>, now: Instant) {
        if self.capacity == 0 {
            return;
        }
        if self.interrupts.len() >= self.capacity {
            self.interrupts.pop_front();
        }
        self.interrupts.push_back(InterruptRecord { at: now, cause });
    }

    /// Marks the history as read at `now`, closing the current stay for
    /// [`time_in_state`](Self::time_in_state), and unfolds the hop log's
    /// runs: every path that hands the history to a reader calls it first.
    pub(crate) fn mark_read(&mut self, now: Instant) {
        self.read_at = now;
        self.hops.unfold();
    }

    /// The entry of `state`, created if missing.
    #[inline]
    fn entry_mut(&mut self, state: StateKindOf<M>) -> &mut StateTime<StateKindOf<M>> {
        match self.slots.get(state.index()) {
            Some(&slot) if slot != 0 => &mut self.closed[slot as usize - 1],
            _ => self.new_entry(state),
        }
    }

    /// [`entry_mut`](Self::entry_mut) for a state left for the first time:
    /// once per state, so out of line.
    #[cold]
    #[inline(never)]
    fn new_entry(&mut self, state: StateKindOf<M>) -> &mut StateTime<StateKindOf<M>> {
        let index = state.index();
        if self.slots.len() <= index {
            // `index + 1`: a hand-written kind whose index lies past `ALL`
            // still gets its slot.
            self.slots.resize(StateKindOf::<M>::ALL.len().max(index + 1), 0);
        }
        self.closed.push(StateTime { state, entries: 0, total: Duration::ZERO });
        // At most one entry per state kind, which a table counts in `u32`s.
        self.slots[index] = u32::try_from(self.closed.len()).unwrap_or(u32::MAX);
        let last = self.closed.len() - 1;
        &mut self.closed[last]
    }

    /// The recorded hops, oldest first. At most the configured capacity;
    /// older ones are [`evicted`](Self::evicted).
    pub fn transitions(&self) -> impl ExactSizeIterator<Item = &TransitionRecordOf<M>> + '_ {
        debug_assert!(self.hops.is_unfolded(), "the history is read unfolded");
        self.hops.ring()
    }

    /// How many hops were dropped from the front of the bounded log (with
    /// a capacity of 0, every hop).
    #[must_use]
    pub fn evicted(&self) -> u64 {
        self.hops.evicted()
    }

    /// How many events the machine handled (refused ones included).
    #[must_use]
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The current state and when the machine entered it
    /// ([`Status::Poisoned`] only for a machine spawned poisoned).
    #[must_use]
    pub fn current(&self) -> (Status<StateKindOf<M>>, Instant) {
        (self.current, self.entered)
    }

    /// Time spent per state, in order of first exit; the current state's
    /// stay is counted up to when the history was read, in its entry if it
    /// was visited before, or last if this is its first visit.
    #[must_use]
    pub fn time_in_state(&self) -> Vec<StateTime<StateKindOf<M>>> {
        let mut times = self.closed.clone();
        let Status::In(current) = self.current else {
            return times;
        };
        let ongoing = self.read_at.saturating_duration_since(self.entered);
        match times.iter_mut().find(|s| s.state == current) {
            Some(current) => {
                current.total += ongoing;
                current.entries += 1;
            }
            None => times.push(StateTime { state: current, entries: 1, total: ongoing }),
        }
        times
    }

    /// Total time spent in `state` (see [`time_in_state`](Self::time_in_state)).
    #[must_use]
    pub fn time_in(&self, state: StateKindOf<M>) -> Duration {
        self.time_in_state().iter().find(|s| s.state == state).map_or(Duration::ZERO, |s| s.total)
    }

    /// Every event handled, in delivery order, if
    /// [`record_events`](super::ExecutorConfig::record_events) was enabled.
    #[must_use]
    pub fn events(&self) -> Option<&[EventRecordOf<M>]> {
        self.events.as_deref()
    }

    /// The most recent interrupts, oldest first: at most the configured
    /// [`history_capacity`](super::ExecutorConfig::history_capacity), as
    /// for hops.
    pub fn interrupts(&self) -> impl ExactSizeIterator<Item = &InterruptRecord> + '_ {
        self.interrupts.iter()
    }
}

/// Feeds a recorded event log into `machine` (normally a fresh one built
/// like the original) and checks that every event returns the recorded
/// action and leads to the recorded state.
///
/// Since a machine is deterministic, a log recorded from the start of a run
/// reproduces the run's final state exactly; compare
/// [`state`](StateMachine::state) afterwards for the full data.
///
/// # Errors
/// [`ReplayError::Diverged`] at the first event whose action or resulting
/// state differs from the record: the machine is not the one recorded, was
/// not fresh, or is not deterministic.
pub fn replay<M>(machine: &mut M, log: &[EventRecordOf<M>]) -> Result<(), ReplayError<M>>
where
    M: StateMachine,
    M::Event: Clone,
{
    for (index, record) in log.iter().enumerate() {
        let action = machine.handle_event(record.event.clone()).kind();
        let state = machine.status();
        if action != record.action || state != record.state {
            return Err(ReplayError::Diverged {
                index,
                expected_action: record.action,
                actual_action: action,
                expected_state: record.state,
                actual_state: state,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
