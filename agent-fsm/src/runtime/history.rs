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

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::error::ReplayError;
use crate::{Named, StateMachine, Step};

/// One hop of the machine (transient hops included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransitionRecord {
    /// Which delivered event caused the hop (1 for the first event the
    /// machine handled). Hops of one event share it.
    pub step: u64,
    /// The state the hop left.
    pub from: &'static str,
    /// The event's name, `None` for an eventless hop out of a transient state.
    pub event: Option<&'static str>,
    /// The state the hop entered.
    pub to: &'static str,
    /// The row's action, `None` for a hop into a transient state.
    pub action: Option<&'static str>,
    /// Index of the row in the machine's description.
    pub row: usize,
    /// When the machine entered `from` (self-transitions do not re-enter).
    pub start: Instant,
    /// How long the machine had been in `from` when the hop happened.
    pub duration: Duration,
}

/// Total time spent in one state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StateTime {
    /// The state's name.
    pub state: &'static str,
    /// How many times the machine entered it (the initial entry included).
    pub entries: u64,
    /// Time spent in it, the current stay included up to when the history
    /// was read.
    pub total: Duration,
}

/// One event the machine handled, with what it did, for [`replay`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventRecord<E> {
    /// The event as delivered.
    pub event: E,
    /// The action `handle_event` returned.
    pub action: &'static str,
    /// The state after the event.
    pub state: &'static str,
}

/// An interrupt the worker carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InterruptRecord {
    /// When it was carried out.
    pub at: Instant,
    /// The cause given to [`interrupt`](super::MachineHandle::interrupt).
    pub cause: Arc<str>,
}

/// The history of one machine: bounded hop log, time per state, interrupts
/// and the optional event log.
#[derive(Debug, Clone)]
pub struct History<E> {
    /// The hop log, a ring once full: `head` is then the oldest hop, and
    /// the next one overwrites it (cheaper than a deque's pop and push).
    transitions: Vec<TransitionRecord>,
    head: usize,
    capacity: usize,
    evicted: u64,
    /// Closed stays, summed per state; the current stay is added on read.
    closed: Vec<StateTime>,
    current: &'static str,
    entered: Instant,
    /// `None` unless event recording is enabled in the configuration.
    events: Option<Vec<EventRecord<E>>>,
    /// The event type's `Clone`, when events are recorded: read here, on
    /// the step's path, rather than through the shared configuration.
    clone_event: Option<fn(&E) -> E>,
    interrupts: VecDeque<InterruptRecord>,
    steps: u64,
    /// When the history was last read, to close the current stay in
    /// [`time_in_state`](Self::time_in_state).
    read_at: Instant,
}

// ===== impl History =====

impl<E> History<E> {
    /// An empty history of a machine in `initial` since `now`. Allocates
    /// nothing until the first hop, so idle machines stay small.
    pub(crate) fn new(initial: &'static str, capacity: usize, clone_event: Option<fn(&E) -> E>, now: Instant) -> Self {
        Self {
            transitions: Vec::new(),
            head: 0,
            capacity,
            evicted: 0,
            closed: Vec::new(),
            current: initial,
            entered: now,
            events: clone_event.map(|_| Vec::new()),
            clone_event,
            interrupts: VecDeque::new(),
            steps: 0,
            read_at: now,
        }
    }

    /// Records one hop of the event being delivered, the one after the
    /// last [`on_step`](Self::on_step) counted.
    /// `changed`: whether `hop.from != hop.to`, computed once by the caller.
    #[inline]
    pub(crate) fn on_hop(&mut self, hop: &Step, changed: bool, now: Instant) {
        let step = self.steps + 1;
        // Hops of one burst share `now`, so after the first change of state
        // in a burst the stay is empty: skip the clock arithmetic.
        let duration = if now == self.entered { Duration::ZERO } else { now.saturating_duration_since(self.entered) };
        let record = TransitionRecord {
            step,
            from: hop.from,
            event: hop.event,
            to: hop.to,
            action: hop.action,
            row: hop.row,
            start: self.entered,
            duration,
        };
        if self.transitions.len() < self.capacity {
            self.transitions.push(record);
        } else {
            // With a capacity of 0 the log stays empty: every hop is dropped.
            if let Some(oldest) = self.transitions.get_mut(self.head) {
                *oldest = record;
                self.head = if self.head + 1 == self.transitions.len() { 0 } else { self.head + 1 };
            }
            self.evicted += 1;
        }
        if changed {
            let from = self.entry_mut(hop.from);
            if !duration.is_zero() {
                from.total += duration;
            }
            from.entries += 1;
            self.current = hop.to;
            self.entered = now;
        }
    }

    /// The event type's `Clone`, if events are recorded.
    #[inline]
    pub(crate) fn clone_event(&self) -> Option<fn(&E) -> E> {
        self.clone_event
    }

    /// Counts delivered event number `step`, after its hops (if any).
    pub(crate) fn on_step(&mut self, step: u64) {
        self.steps = step;
    }

    /// Appends to the event log, if it is enabled.
    pub(crate) fn record_event(&mut self, record: impl FnOnce() -> EventRecord<E>) {
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
    /// [`time_in_state`](Self::time_in_state).
    pub(crate) fn mark_read(&mut self, now: Instant) {
        self.read_at = now;
    }

    #[inline]
    fn entry_mut(&mut self, state: &'static str) -> &mut StateTime {
        // Names usually come from one static table, so a pointer match finds
        // the entry without comparing bytes.
        let index = match self.closed.iter().position(|s| core::ptr::eq(s.state, state)) {
            Some(index) => index,
            None => self.entry_by_name(state),
        };
        &mut self.closed[index]
    }

    /// The entry of `state` found by its bytes, created if missing.
    #[cold]
    fn entry_by_name(&mut self, state: &'static str) -> usize {
        match self.closed.iter().position(|s| s.state == state) {
            Some(index) => index,
            None => {
                self.closed.push(StateTime { state, entries: 0, total: Duration::ZERO });
                self.closed.len() - 1
            }
        }
    }

    /// The recorded hops, oldest first. At most the configured capacity;
    /// older ones are [`evicted`](Self::evicted).
    pub fn transitions(&self) -> impl ExactSizeIterator<Item = &TransitionRecord> + '_ {
        let (newer, older) = self.transitions.split_at(self.head);
        Hops { older: older.iter(), newer: newer.iter() }
    }

    /// How many hops were dropped from the front of the bounded log (with
    /// a capacity of 0, every hop).
    #[must_use]
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// How many events the machine handled (refused ones included).
    #[must_use]
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The current state and when the machine entered it.
    #[must_use]
    pub fn current(&self) -> (&'static str, Instant) {
        (self.current, self.entered)
    }

    /// Time spent per state, in order of first exit; the current state's
    /// stay is counted up to when the history was read, in its entry if it
    /// was visited before, or last if this is its first visit.
    #[must_use]
    pub fn time_in_state(&self) -> Vec<StateTime> {
        let mut times = self.closed.clone();
        let ongoing = self.read_at.saturating_duration_since(self.entered);
        match times.iter_mut().find(|s| s.state == self.current) {
            Some(current) => {
                current.total += ongoing;
                current.entries += 1;
            }
            None => times.push(StateTime { state: self.current, entries: 1, total: ongoing }),
        }
        times
    }

    /// Total time spent in `state` (see [`time_in_state`](Self::time_in_state)).
    #[must_use]
    pub fn time_in(&self, state: &str) -> Duration {
        self.time_in_state().iter().find(|s| s.state == state).map_or(Duration::ZERO, |s| s.total)
    }

    /// Every event handled, in delivery order, if
    /// [`record_events`](super::ExecutorConfig::record_events) was enabled.
    #[must_use]
    pub fn events(&self) -> Option<&[EventRecord<E>]> {
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
pub fn replay<M>(machine: &mut M, log: &[EventRecord<M::Event>]) -> Result<(), ReplayError>
where
    M: StateMachine,
    M::Event: Clone,
{
    for (index, record) in log.iter().enumerate() {
        let action = machine.handle_event(record.event.clone());
        let state = machine.state_name();
        if action.name() != record.action || state != record.state {
            return Err(ReplayError::Diverged {
                index,
                expected_action: record.action,
                actual_action: action.name(),
                expected_state: record.state,
                actual_state: state,
            });
        }
    }
    Ok(())
}

/// The hops of a [`History`], oldest first: the ring's two halves in turn.
struct Hops<'a> {
    older: std::slice::Iter<'a, TransitionRecord>,
    newer: std::slice::Iter<'a, TransitionRecord>,
}

impl<'a> Iterator for Hops<'a> {
    type Item = &'a TransitionRecord;

    fn next(&mut self) -> Option<Self::Item> {
        self.older.next().or_else(|| self.newer.next())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = self.older.len() + self.newer.len();
        (len, Some(len))
    }
}

impl ExactSizeIterator for Hops<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(from: &'static str, to: &'static str) -> Step {
        Step { from, event: Some("E"), to, action: Some("A"), row: 0 }
    }

    #[test]
    fn the_hop_log_keeps_the_latest_hops_oldest_first() {
        let start = Instant::now();
        let mut history = History::<()>::new("A", 3, None, start);
        for step in 1..=7 {
            let (from, to) = if step % 2 == 1 { ("A", "B") } else { ("B", "A") };
            history.on_hop(&hop(from, to), true, start);
            history.on_step(step);
        }
        let steps: Vec<u64> = history.transitions().map(|t| t.step).collect();
        assert_eq!(steps, [5, 6, 7]);
        assert_eq!(history.transitions().len(), 3);
        assert_eq!(history.evicted(), 4);
        assert_eq!(history.transitions().last().map(|t| (t.from, t.to)), Some(("A", "B")));

        let mut empty = History::<()>::new("A", 0, None, start);
        empty.on_hop(&hop("A", "B"), true, start);
        assert_eq!(empty.transitions().len(), 0);
        assert_eq!(empty.current().0, "B");
    }
}
