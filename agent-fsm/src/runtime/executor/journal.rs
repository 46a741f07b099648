//! The worker's side of a durable agent: rebuilding it from its store at
//! start (replaying its log, performing again the work still in flight,
//! re-arming its timers and sends), then writing each step to its journal
//! and stopping the journal when the agent stops.

use super::{Effects, Mode, Source, StateMachine, Work, Worker, WorkerError};
use crate::runtime::durable::{JournalError, Origin, Replay, Started, StepWork, Tracking, WorkId, WorkKind};
use crate::runtime::error::StoreFailure;

impl<M, E> Worker<M, E>
where
    M: StateMachine + Send + 'static,
    M::Event: Send + 'static,
    E: Effects<M>,
{
    /// Rebuilds a durable agent and starts journaling; false if the worker
    /// failed meanwhile.
    #[cold]
    #[inline(never)]
    pub(super) fn start_journal(&mut self) -> bool {
        let Some(journal) = self.link.extras.as_mut().and_then(|extras| extras.journal.as_mut()) else {
            return true;
        };
        let replay = journal.take_replay();
        // A durable agent's work is tracked from the first step: its ids
        // name the store's rows.
        let settings = &self.link.shared.settings;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.fail(WorkerError::NoRuntime);
            return false;
        };
        let mut work = Work::new(runtime, settings.tracker.clone(), settings.concurrency_limit);
        work.track = Some(Box::default());
        self.work = Some(Box::new(work));
        if let Some(replay) = replay
            && !self.replay(replay)
        {
            return false;
        }
        self.hot.journaling = true;
        true
    }

    fn tracking(&mut self) -> Option<&mut Tracking> {
        self.work.as_mut().and_then(|work| work.track.as_deref_mut())
    }

    /// Feeds the logged events again, performing the actions whose work is
    /// still in flight (only that work starts), then re-arms the timers and
    /// queues the sends; false if the worker failed.
    fn replay(&mut self, replay: Replay<M::Event>) -> bool {
        let Replay { steps, timers, sends } = replay;
        tracing::debug!(machine = M::DESCRIPTION.name, steps = steps.len(), "resuming from the store");
        #[cfg(any(feature = "metrics", feature = "otel"))]
        {
            self.hot.replaying = true;
        }
        #[cfg(feature = "otel")]
        self.hot.turn.restored(self.link.shared.settings.turns.as_ref(), self.machine.status());
        for (seq, event, keep) in steps {
            let perform = keep.is_some();
            if let Some(track) = self.tracking() {
                track.begin_step(seq);
                track.replay = Some(keep.unwrap_or_default());
            }
            self.deliver(event, if perform { Mode::Normal } else { Mode::Draining }, None, Source::Runtime);
            if self.hot.failed {
                return false;
            }
            // Work in flight the action did not start again would leave the
            // machine waiting for a result that never comes: refused.
            let missed = self
                .tracking()
                .and_then(|track| track.replay.as_ref())
                .and_then(|keep| keep.iter().map(|(id, (kind, _))| (*id, *kind)).min_by_key(|(id, _)| *id));
            if let Some((id, kind)) = missed
                && let Some(journal) = self.link.extras.as_ref().and_then(|extras| extras.journal.as_ref())
            {
                let error = journal.not_started_again(id, kind);
                self.store_failed(error);
                return false;
            }
        }
        #[cfg(any(feature = "metrics", feature = "otel"))]
        {
            self.hot.replaying = false;
        }
        #[cfg(feature = "otel")]
        self.hot.turn.resumed(self.link.shared.settings.agent_id.as_deref());
        let visit = self.hot.visit;
        if let Some(work) = self.work.as_deref_mut() {
            if let Some(track) = work.track.as_deref_mut() {
                // What the replay started has its rows already.
                track.replay = None;
                track.started.clear();
                track.ended.clear();
                track.origin = None;
            }
            for (id, left, holds, event) in timers {
                work.restore_timer(id, left, visit, holds, event);
            }
            for (id, event) in sends {
                work.ready.push_back(crate::runtime::work::Immediate { event, owed: false, id: Some(id) });
            }
        }
        true
    }

    /// Begins the step of `event` (from the mailbox if `input`) in the
    /// journal; false if the worker failed.
    #[inline(never)]
    pub(super) fn journal_begin(&mut self, event: &M::Event, input: bool) -> bool {
        let stream = self.tracking().and_then(|track| track.origin.take());
        let origin = match stream {
            Some(id) => Some(Origin::Stream(id)),
            None if input => Some(Origin::Input),
            None => None,
        };
        let Some(journal) = self.link.extras.as_mut().and_then(|extras| extras.journal.as_mut()) else {
            return true;
        };
        let hold = journal.holds_tasks();
        match journal.begin(event, origin) {
            Ok(seq) => {
                if let Some(track) = self.tracking() {
                    track.begin_step(seq);
                    // Every step's tasks wait for its write, not only the
                    // first's: `journal_commit` lets them go.
                    track.hold = hold;
                }
                true
            }
            Err(error) => {
                self.store_failed(error);
                false
            }
        }
    }

    /// Writes the step just taken, then starts the tasks it held back. A
    /// step the store refused keeps them held: the worker fails, and work
    /// the store does not know of never runs.
    #[inline(never)]
    pub(super) fn journal_commit(&mut self) {
        let (Some(extras), Some(work)) = (self.link.extras.as_mut(), self.work.as_deref_mut()) else {
            return;
        };
        let Some(journal) = extras.journal.as_mut() else {
            return;
        };
        match journal.commit(&self.machine, step_work(work)) {
            Ok(()) => work.release(),
            Err(error) => self.store_failed(error),
        }
    }

    /// Writes the ends of work that ended since the last step (a stream's
    /// end), if any: the worker is between two steps.
    #[cold]
    #[inline(never)]
    pub(super) fn journal_ended(&mut self) {
        let Some(track) = self.tracking() else { return };
        if track.ended.is_empty() {
            return;
        }
        let ended = std::mem::take(&mut track.ended);
        let Some(journal) = self.link.extras.as_mut().and_then(|extras| extras.journal.as_mut()) else {
            return;
        };
        if let Err(error) = journal.ended(ended) {
            self.store_failed(error);
        }
    }

    /// Stops journaling: the ends of work seen since the last step, and what
    /// the journal still buffers, are written. After a failure the ends are
    /// not written: the step that failed may have been taking that work's
    /// result, which no written step holds, so the work stays in flight in
    /// the store and is performed again on a resume, not lost.
    pub(super) fn stop_journal(&mut self) {
        if !self.hot.journaling {
            return;
        }
        if self.hot.failed {
            if let Some(track) = self.tracking() {
                track.ended.clear();
            }
        } else {
            self.journal_ended();
        }
        if !std::mem::take(&mut self.hot.journaling) {
            return;
        }
        if let Some(track) = self.tracking() {
            track.hold = false;
        }
        let Some(journal) = self.link.extras.as_mut().and_then(|extras| extras.journal.as_mut()) else {
            return;
        };
        if let Err(error) = journal.stop() {
            self.store_failed(error);
        }
    }

    /// Whether a write off the worker's thread failed (the worker then
    /// failed); registers `cx` for one otherwise.
    #[inline(never)]
    pub(super) fn journal_failed(&mut self, cx: &mut std::task::Context<'_>) -> bool {
        let Some(journal) = self.link.extras.as_mut().and_then(|extras| extras.journal.as_mut()) else {
            return false;
        };
        let Some(error) = journal.poll_failure(cx) else { return false };
        self.store_failed(error);
        true
    }

    fn store_failed(&mut self, error: JournalError) {
        self.hot.journaling = false;
        if !self.hot.failed {
            self.fail(WorkerError::Store(StoreFailure(error)));
        }
    }
}

/// Takes the work the current step started and the work that ended since
/// the last step from `work`'s bookkeeping. Work started and ended within
/// the step (a timer too far off to ever fire, a task cancelled by the
/// action that spawned it) is left out of both.
fn step_work<E>(work: &mut Work<E>) -> StepWork<'_, E> {
    let Some(track) = work.track.as_deref_mut() else {
        return StepWork { started: Vec::new(), ended: Vec::new() };
    };
    let mut started = std::mem::take(&mut track.started);
    let mut ended = std::mem::take(&mut track.ended);
    if !started.is_empty() && !ended.is_empty() {
        let both: Vec<WorkId> = started.iter().filter(|s| ended.contains(s)).map(|(_, id)| *id).collect();
        started.retain(|(_, id)| !both.contains(id));
        ended.retain(|(_, id)| !both.contains(id));
    }
    let now = tokio::time::Instant::now();
    let work = &*work;
    let started = started
        .into_iter()
        .filter_map(|(kind, id)| match kind {
            WorkKind::Task => Some(Started::Task(id)),
            WorkKind::Stream => Some(Started::Stream(id)),
            WorkKind::Deadline | WorkKind::Pause => work.timers.iter().find(|t| t.id == Some(id)).map(|t| {
                Started::Timer { id, holds: t.holds, left: t.deadline.saturating_duration_since(now), event: &t.event }
            }),
            WorkKind::Send => {
                work.ready.iter().find(|r| r.id == Some(id)).map(|r| Started::Send { id, event: &r.event })
            }
        })
        .collect();
    StepWork { started, ended }
}
