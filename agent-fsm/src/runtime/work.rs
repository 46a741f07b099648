//! The effect work in flight for one machine: open streams, spawned and
//! queued tasks, pending timers, and the events effects sent for immediate
//! delivery. The worker ([`executor`](super::executor)) polls it and
//! delivers what it yields; [`EffectContext`](super::EffectContext) fills it.
//!
//! Ordering inside one poll: due timers first, then finished tasks (in the
//! order they finished), then expired stream deadlines, then stream items,
//! the streams taking turns. Everything here is
//! allocated on first use, so an idle agent pays for none of it.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{FutureExt, Stream};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio::time::{Instant, Sleep};
use tokio_util::task::TaskTracker;

use super::durable::{Tracking, WorkId, WorkKind};
use super::error::{drop_caught, panic_message};
use super::task::EffectFailure;

mod slots;
mod spawn;

// The deadline rule is the tool set's too (`ToolSet::with_timeout`).
pub(crate) use slots::deadline_in;
use slots::{QueuedTask, StreamSlot, TaskSlot, drop_streams, run_task, task_outcome};

/// The boxed future of a task.
pub(crate) type TaskFuture<E> = Pin<Box<dyn Future<Output = E> + Send>>;
/// Maps a failed task (its key and why) to the event the machine receives.
pub(crate) type TaskFailureFn<E> = Box<dyn FnOnce(String, EffectFailure) -> E + Send>;
/// Maps a failed stream to the event the machine receives, if any.
pub(crate) type StreamFailureFn<E> = Box<dyn FnOnce(EffectFailure) -> Option<E> + Send>;
/// What a spawned task returns to the worker.
type TaskResult<E> = Result<E, EffectFailure>;
/// A task's result, stamped with when it finished (see [`FINISHED`]).
type Stamped<E> = (u64, TaskResult<E>);
/// What joining a task gives.
type Joined<E> = Result<Stamped<E>, tokio::task::JoinError>;

/// Counts task ends, across agents: each task takes the next number as it
/// finishes, so the worker delivers results it finds together in the order
/// they came (one counter for all, rather than a field in every idle agent).
static FINISHED: AtomicU64 = AtomicU64::new(0);

/// Something the work produced. Failure callbacks are user code, so they
/// are handed to the worker, which calls them under `catch_unwind`.
pub(crate) enum Produced<E> {
    /// An event to deliver.
    Event(E),
    /// A stream failed (timed out, panicked or was cancelled); `key` if it
    /// was opened with one.
    StreamFailed { key: Option<String>, on_failure: StreamFailureFn<E>, failure: EffectFailure },
    /// A task failed (timed out, panicked or was cancelled).
    TaskFailed { key: String, on_failure: TaskFailureFn<E>, failure: EffectFailure },
}

pub(crate) struct Timer<E> {
    pub(crate) id: Option<WorkId>,
    pub(crate) deadline: Instant,
    /// The machine's visit counter when the timer was set; the timer dies
    /// when the machine leaves that state.
    visit: u32,
    /// Holds external input back while pending (`pause`), or lets it
    /// through (`deadline`).
    pub(crate) holds: bool,
    pub(crate) event: E,
}

impl<E> Timer<E> {
    pub(crate) fn kind(&self) -> WorkKind {
        if self.holds { WorkKind::Pause } else { WorkKind::Deadline }
    }
}

/// An event for delivery right after the current step.
pub(crate) struct Immediate<E> {
    pub(crate) event: E,
    /// Owed by a task or stream the effects cancelled (`cancel_task`),
    /// rather than sent: a cancellation of everything (an interrupt, a
    /// shutdown) delivers it instead of dropping it with the sends.
    pub(crate) owed: bool,
    /// A durable agent's id for it.
    pub(crate) id: Option<WorkId>,
}

/// All effect work of one machine.
pub(crate) struct Work<E> {
    /// Events from `EffectContext::send` and `cancel_task`, delivered
    /// before anything else.
    pub(crate) ready: VecDeque<Immediate<E>>,
    /// How many times `ready` was emptied by a cancellation; tells the
    /// worker whether the events after a step's are still the older ones.
    pub(crate) ready_cleared: u64,
    /// Events the steps of the current chain of sends have sent since it
    /// was last cut; the worker keeps it (see `drain_ready`).
    pub(crate) chain: u32,
    streams: Vec<StreamSlot<E>>,
    /// Where the next search for a ready stream starts (see `poll_streams`).
    stream_turn: usize,
    /// Running tasks, in spawn order.
    tasks: Vec<TaskSlot<E>>,
    /// Tasks waiting for a concurrency slot, in spawn order.
    queued: VecDeque<QueuedTask<E>>,
    /// Sorted by deadline; equal deadlines keep scheduling order.
    pub(crate) timers: Vec<Timer<E>>,
    /// Armed for `timers[0]`.
    sleep: Option<Pin<Box<Sleep>>>,
    /// Cancelled tasks that may still be unwinding; awaited before the
    /// worker exits so that no task outlives it.
    aborted: Vec<JoinHandle<Stamped<E>>>,
    limit: usize,
    runtime: Handle,
    tracker: TaskTracker,
    /// A durable agent's bookkeeping; `None` for the others.
    pub(crate) track: Option<Box<Tracking>>,
}

impl<E: Send + 'static> Work<E> {
    pub(crate) fn new(runtime: Handle, tracker: TaskTracker, limit: usize) -> Self {
        Self {
            ready: VecDeque::new(),
            ready_cleared: 0,
            chain: 0,
            streams: Vec::new(),
            stream_turn: 0,
            tasks: Vec::new(),
            queued: VecDeque::new(),
            timers: Vec::new(),
            sleep: None,
            aborted: Vec::new(),
            limit,
            runtime,
            tracker,
            track: None,
        }
    }

    /// Ids new work of `kind` for a durable agent: `None` if it is not to
    /// run (a replay drops it), else its id (`None` for an agent without a
    /// journal) and how many items of a stream to skip.
    fn identify(&mut self, kind: WorkKind) -> Option<(Option<WorkId>, u64)> {
        match &mut self.track {
            None => Some((None, 0)),
            Some(track) => track.start(kind).map(|(id, skip)| (Some(id), skip)),
        }
    }

    /// Records that work `id` of `kind` ended.
    fn ended(&mut self, kind: WorkKind, id: Option<WorkId>) {
        if let Some(track) = &mut self.track {
            track.end(kind, id);
        }
    }

    /// Whether a step is being replayed after a restart.
    pub(crate) fn replaying(&self) -> bool {
        self.track.as_ref().is_some_and(|t| t.replay.is_some())
    }

    /// Queues `event` for delivery right after the current step.
    pub(crate) fn push_ready(&mut self, event: E, owed: bool) {
        if let Some((id, _)) = self.identify(WorkKind::Send) {
            self.ready.push_back(Immediate { event, owed, id });
        }
    }

    /// A restarted agent's timer, pending before the restart.
    pub(crate) fn restore_timer(&mut self, id: WorkId, delay: Duration, visit: u32, holds: bool, event: E) {
        self.insert_timer(Some(id), delay, visit, holds, event);
    }

    /// Starts the tasks a step held back until it was written.
    pub(crate) fn release(&mut self) {
        if let Some(track) = &mut self.track {
            track.hold = false;
        }
        self.start_queued();
    }

    /// Whether any stream, task or timer that holds external input back is
    /// in flight. Events in `ready` do not count: the worker drains them
    /// before it polls again.
    pub(crate) fn busy(&self) -> bool {
        !(self.streams.is_empty() && self.tasks.is_empty() && self.queued.is_empty())
            || self.timers.iter().any(|t| t.holds)
    }

    /// Whether anything is in flight, timers that let input through
    /// included: the work must be polled.
    pub(crate) fn in_flight(&self) -> bool {
        self.busy() || !self.timers.is_empty()
    }

    pub(crate) fn add_timer(&mut self, delay: Duration, visit: u32, holds: bool, event: E) {
        let kind = if holds { WorkKind::Pause } else { WorkKind::Deadline };
        if let Some((id, _)) = self.identify(kind) {
            self.insert_timer(id, delay, visit, holds, event);
        }
    }

    fn insert_timer(&mut self, id: Option<WorkId>, delay: Duration, visit: u32, holds: bool, event: E) {
        let Some(deadline) = deadline_in(delay) else {
            tracing::debug!(?delay, "timer dropped: its delay is too long to ever fire");
            self.ended(if holds { WorkKind::Pause } else { WorkKind::Deadline }, id);
            return;
        };
        let at = self.timers.partition_point(|t| t.deadline <= deadline);
        self.timers.insert(at, Timer { id, deadline, visit, holds, event });
        if at == 0 {
            self.arm();
        }
    }

    /// Drops the timers set in an earlier visit (the machine left their state).
    pub(crate) fn retain_timers(&mut self, visit: u32) {
        if self.timers.is_empty() {
            return;
        }
        let before = self.timers.len();
        let dropped: Vec<_> = self.timers.extract_if(.., |t| t.visit != visit).map(|t| (t.kind(), t.id)).collect();
        for (kind, id) in dropped {
            self.ended(kind, id);
        }
        if self.timers.len() != before {
            tracing::debug!(dropped = before - self.timers.len(), "timers dropped: their state was left");
            self.arm();
        }
    }

    fn arm(&mut self) {
        match (self.timers.first(), &mut self.sleep) {
            (Some(first), Some(sleep)) => sleep.as_mut().reset(first.deadline),
            (Some(first), None) => self.sleep = Some(Box::pin(tokio::time::sleep_until(first.deadline))),
            (None, _) => self.sleep = None,
        }
    }

    /// Cancels every task and open stream with `key`, and returns what
    /// each owes: running tasks (spawn order), queued ones, then streams
    /// (opening order). A cancelled stream is dropped at once, so nothing
    /// more of it is delivered. Every one, not the first found: a stream
    /// that yielded its last item may still be open beside a newer one
    /// under the same key, and a retry abandoning "the LLM stream" means
    /// whichever of them is still talking.
    pub(crate) fn cancel(&mut self, key: &str) -> Vec<Produced<E>> {
        // Queued tasks first, so that none starts in a slot freed below.
        let (queued, waiting): (VecDeque<_>, VecDeque<_>) =
            std::mem::take(&mut self.queued).into_iter().partition(|t| t.key == key);
        self.queued = waiting;
        let running: Vec<_> = self.tasks.extract_if(.., |t| t.key == key).collect();
        let mut owed: Vec<_> = running.into_iter().map(|slot| self.cancel_running(slot)).collect();
        for task in queued {
            self.ended(WorkKind::Task, task.id);
            owed.push(task.cancelled());
        }
        self.start_queued();
        let streams: Vec<_> = self.streams.extract_if(.., |s| s.key.as_deref() == Some(key)).collect();
        for slot in streams {
            self.ended(WorkKind::Stream, slot.id);
            owed.push(slot.failed(EffectFailure::Cancelled));
        }
        owed
    }

    /// A task that already finished keeps its real result, so no event it
    /// produced is lost; any other is aborted and reported as cancelled.
    fn cancel_running(&mut self, mut slot: TaskSlot<E>) -> Produced<E> {
        self.ended(WorkKind::Task, slot.id);
        if slot.join_finished()
            && let Some(joined) = slot.done
        {
            return task_outcome(slot.key, slot.on_failure, joined);
        }
        slot.handle.abort();
        // Aborted tasks are joined at the stop; the ones that have stopped
        // since are let go now, so that an agent that cancels tasks one by
        // one (`cancel_task`) does not keep every one of them until then.
        self.aborted.retain(|h| !h.is_finished());
        self.aborted.push(slot.handle);
        Produced::TaskFailed { key: slot.key, on_failure: slot.on_failure, failure: EffectFailure::Cancelled }
    }

    /// Cancels everything in flight. Returns what each stream and task owes:
    /// first what those the effects cancelled themselves still owe (in
    /// `ready`, due before this cancellation), then streams (opening order),
    /// then tasks (spawn order). Timers and the events in `ready` that were
    /// sent (what is left of a chain of sends cut at one of its pauses) are
    /// dropped. For an `interrupt`, the tasks spawned to survive one stay,
    /// running or queued, in their order.
    pub(crate) fn cancel_all(&mut self, interrupt: bool) -> Vec<Produced<E>> {
        let mut owed = Vec::with_capacity(self.streams.len() + self.tasks.len() + self.queued.len());
        let mut dropped = 0;
        for immediate in std::mem::take(&mut self.ready) {
            self.ended(WorkKind::Send, immediate.id);
            if immediate.owed {
                owed.push(Produced::Event(immediate.event));
            } else {
                dropped += 1;
            }
        }
        if dropped > 0 {
            // The rest of a chain of sends cut at one of its pauses.
            tracing::debug!(dropped, "sent events dropped: cancelled");
        }
        self.ready_cleared += 1;
        for slot in std::mem::take(&mut self.streams) {
            self.ended(WorkKind::Stream, slot.id);
            owed.push(slot.failed(EffectFailure::Cancelled));
        }
        let tasks = std::mem::take(&mut self.tasks);
        for slot in tasks {
            if interrupt && slot.survives_interrupt {
                self.tasks.push(slot);
                continue;
            }
            let produced = self.cancel_running(slot);
            owed.push(produced);
        }
        let (kept, cancelled): (VecDeque<_>, VecDeque<_>) =
            std::mem::take(&mut self.queued).into_iter().partition(|t| interrupt && t.survives_interrupt);
        self.queued = kept;
        for task in cancelled {
            self.ended(WorkKind::Task, task.id);
            owed.push(task.cancelled());
        }
        if !self.timers.is_empty() {
            tracing::debug!(dropped = self.timers.len(), "timers dropped: cancelled");
        }
        for timer in std::mem::take(&mut self.timers) {
            self.ended(timer.kind(), timer.id);
        }
        self.sleep = None;
        self.aborted.retain(|h| !h.is_finished());
        // The tasks kept through an interrupt and still queued take the
        // slots it freed: nothing else would start them while no task
        // runs (a cancelled one that had already finished leaves no
        // handle to wait for), and they would hold the agent's input back
        // for good.
        self.start_queued();
        owed
    }

    /// Aborts every task without asking for its event (the worker is
    /// failing or being dropped).
    pub(crate) fn abort_all(&mut self) {
        // A joined handle is not polled again.
        for slot in self.tasks.drain(..).filter(|slot| slot.done.is_none()) {
            slot.handle.abort();
            self.aborted.push(slot.handle);
        }
        self.queued.clear();
        drop_streams(&mut self.streams);
        self.timers.clear();
        self.sleep = None;
        self.ready.clear();
        self.ready_cleared += 1;
    }

    /// Ready once every aborted task has stopped.
    pub(crate) fn poll_join_aborted(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        // The results are cancellations or discarded late results.
        self.aborted.retain_mut(|handle| Pin::new(handle).poll(cx).is_pending());
        if self.aborted.is_empty() { Poll::Ready(()) } else { Poll::Pending }
    }

    /// Polls the work in flight for its next product.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Produced<E>> {
        // Yield to the scheduler now and then: a stream that is always
        // ready must not starve the other tasks on this thread.
        let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
        let polled = self.poll_timers(cx).or_else(|| self.poll_tasks(cx)).or_else(|| self.poll_streams(cx));
        match polled {
            Some(produced) => {
                coop.made_progress();
                Poll::Ready(produced)
            }
            None => Poll::Pending,
        }
    }

    fn poll_timers(&mut self, cx: &mut Context<'_>) -> Option<Produced<E>> {
        let sleep = self.sleep.as_mut()?;
        if sleep.as_mut().poll(cx).is_pending() {
            return None;
        }
        let timer = self.timers.remove(0);
        self.arm();
        self.ended(timer.kind(), timer.id);
        Some(Produced::Event(timer.event))
    }
}

impl<E> Drop for Work<E> {
    /// A worker dropped mid-run (its future dropped) must not leave tasks
    /// running: abort them. They stop at their next await point.
    fn drop(&mut self) {
        for slot in &self.tasks {
            slot.handle.abort();
        }
        drop_streams(&mut self.streams);
    }
}

#[cfg(test)]
mod tests;
