//! The hop log of a [`History`](super::History): a bounded ring of
//! [`TransitionRecord`]s, in which the worker keeps a run of identical
//! self-loops of one burst as one record with a count, and which it
//! unfolds into one record per hop before anyone reads it.
//!
//! On a streaming workload most events are self-loops (text deltas):
//! writing a whole record for each cost about 30 instructions per event,
//! where extending the run costs a few compares and a count.

use std::time::Duration;

use tokio::time::Instant;

use super::TransitionRecord;
use crate::Step;

/// [`HopLog::run_last`] when no run is open: no step counter reaches it.
const NO_RUN: u64 = u64::MAX;

/// The bounded hop log (`S`, `E`, `A`: the machine's kinds).
#[derive(Clone)]
pub(super) struct HopLog<S, E, A> {
    /// A ring once full: `head` is then the oldest record, and the next one
    /// overwrites it (cheaper than a deque's pop and push). At most
    /// `capacity` records, each standing for `run` hops (one, once
    /// unfolded).
    records: Vec<TransitionRecord<S, E, A>>,
    head: usize,
    capacity: usize,
    /// Hops dropped from the front.
    evicted: u64,
    /// The step of the open run's last hop, [`NO_RUN`] if none is open.
    /// Open, the record at `run_slot` is a self-loop of the current burst
    /// (same time, same stay) that the next hop extends if it repeats it
    /// for the next step. Closed by a new record, a new burst and a read.
    run_last: u64,
    run_slot: usize,
}

impl<S: Copy + Eq, E: Copy + Eq, A: Copy + Eq> HopLog<S, E, A> {
    /// An empty log that keeps the latest `capacity` hops. Allocates
    /// nothing until the first hop.
    pub(super) fn new(capacity: usize) -> Self {
        Self { records: Vec::new(), head: 0, capacity, evicted: 0, run_last: NO_RUN, run_slot: 0 }
    }

    /// Counts `hop`, a self-loop of the event after step `steps`, into the
    /// open run if it repeats the run's self-loop for the next step; false
    /// (nothing done) otherwise.
    #[inline]
    pub(super) fn extend_run(&mut self, hop: &Step<S, E, A>, steps: u64) -> bool {
        debug_assert!(hop.from == hop.to, "only self-loops extend a run");
        if self.run_last != steps {
            return false;
        }
        let Some(record) = self.records.get_mut(self.run_slot) else {
            return false;
        };
        // The record is a self-loop too: the same `from` is the same `to`.
        if record.row != hop.row || record.from != hop.from || record.event != hop.event || record.action != hop.action
        {
            return false;
        }
        let Some(run) = record.run.checked_add(1) else {
            return false;
        };
        record.run = run;
        self.run_last = steps + 1;
        true
    }

    /// Appends `hop` of step `step`, in `from` since `start` for
    /// `duration`, evicting the oldest record's hops once the ring is full.
    /// A self-loop opens a run that later hops of the same burst may
    /// extend.
    #[inline]
    pub(super) fn push(&mut self, hop: &Step<S, E, A>, step: u64, start: Instant, duration: Duration, self_loop: bool) {
        // Built where it is stored, rather than built and copied.
        let record = || TransitionRecord {
            step,
            from: hop.from,
            event: hop.event,
            to: hop.to,
            action: hop.action,
            row: hop.row,
            start,
            duration,
            run: 1,
        };
        let slot = if self.records.len() < self.capacity {
            self.records.push(record());
            self.records.len() - 1
        } else if let Some(oldest) = self.records.get_mut(self.head) {
            self.evicted += u64::from(oldest.run);
            *oldest = record();
            let slot = self.head;
            self.head = if self.head + 1 == self.records.len() { 0 } else { self.head + 1 };
            slot
        } else {
            // With a capacity of 0 the log stays empty: every hop is dropped.
            self.evicted += 1;
            self.run_last = NO_RUN;
            return;
        };
        if self_loop {
            self.run_last = step;
            self.run_slot = slot;
        } else {
            self.run_last = NO_RUN;
        }
    }

    /// Closes the open run: the hops that follow have another time or
    /// stay, or the log is being unfolded.
    #[inline]
    pub(super) fn close_run(&mut self) {
        self.run_last = NO_RUN;
    }

    /// Rewrites the log as one record per hop, the latest `capacity` of
    /// them, oldest first, counting those that no longer fit as evicted:
    /// what readers see.
    pub(super) fn unfold(&mut self) {
        self.close_run();
        if self.records.iter().all(|r| r.run == 1) {
            return;
        }
        let held: u64 = self.records.iter().map(|r| u64::from(r.run)).sum();
        let kept = usize::try_from(held).map_or(self.capacity, |held| held.min(self.capacity));
        let mut skip = held - kept as u64;
        self.evicted += skip;
        let mut records = Vec::with_capacity(kept.max(self.records.capacity().min(self.capacity)));
        for run in self.ring() {
            let hops = u64::from(run.run);
            let dropped = skip.min(hops);
            skip -= dropped;
            records.extend((dropped..hops).map(|i| TransitionRecord { step: run.step + i, run: 1, ..*run }));
        }
        self.records = records;
        self.head = 0;
    }

    /// The records, oldest first: the ring's two halves in turn.
    pub(super) fn ring(&self) -> Hops<'_, TransitionRecord<S, E, A>> {
        let (newer, older) = self.records.split_at(self.head);
        Hops { older: older.iter(), newer: newer.iter() }
    }

    /// Every hop held, oldest first, runs unfolded (some may be past the
    /// capacity until [`unfold`](Self::unfold) drops them).
    pub(super) fn hops(&self) -> impl Iterator<Item = TransitionRecord<S, E, A>> + '_ {
        self.ring()
            .flat_map(|run| (0..u64::from(run.run)).map(|i| TransitionRecord { step: run.step + i, run: 1, ..*run }))
    }

    /// Whether every record stands for one hop (as readers see the log).
    pub(super) fn is_unfolded(&self) -> bool {
        self.records.iter().all(|r| r.run == 1)
    }

    /// How many hops were dropped from the front.
    pub(super) fn evicted(&self) -> u64 {
        self.evicted
    }
}

/// The records of a [`HopLog`], oldest first: the ring's two halves in turn.
pub(super) struct Hops<'a, T> {
    older: std::slice::Iter<'a, T>,
    newer: std::slice::Iter<'a, T>,
}

impl<'a, T> Iterator for Hops<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<Self::Item> {
        self.older.next().or_else(|| self.newer.next())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = self.older.len() + self.newer.len();
        (len, Some(len))
    }
}

impl<T> ExactSizeIterator for Hops<'_, T> {}
