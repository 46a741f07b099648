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

struct StreamSlot<E> {
    /// Set by `EffectContext::stream_keyed`, for `cancel`.
    key: Option<String>,
    /// A durable agent's id for it.
    id: Option<WorkId>,
    /// The span of the step that opened the stream, entered while it is
    /// polled (tasks carry theirs through `Instrument`).
    span: tracing::Span,
    stream: Pin<Box<dyn Stream<Item = E> + Send>>,
    deadline: Option<Pin<Box<Sleep>>>,
    on_failure: StreamFailureFn<E>,
}

struct TaskSlot<E> {
    key: String,
    id: Option<WorkId>,
    /// Spawned with `TaskOptions::survive_interrupt`: an interrupt leaves
    /// it running.
    survives_interrupt: bool,
    handle: JoinHandle<Stamped<E>>,
    on_failure: TaskFailureFn<E>,
    /// Joined, waiting for the results that finished before it.
    done: Option<Joined<E>>,
}

impl<E> TaskSlot<E> {
    /// Takes a finished task's result into `done`; true once it is there.
    /// Unconstrained: once the worker's coop budget ran out, a finished
    /// handle would report `Pending`, and its result would be taken late
    /// (out of order, or reported cancelled).
    fn join_finished(&mut self) -> bool {
        if self.done.is_none() && self.handle.is_finished() {
            self.done = tokio::task::coop::unconstrained(&mut self.handle).now_or_never();
        }
        self.done.is_some()
    }

    /// When it finished; a task the runtime stopped from outside goes
    /// after every stamped one.
    fn finished_at(&self) -> Option<u64> {
        self.done.as_ref().map(|joined| joined.as_ref().map_or(u64::MAX, |(at, _)| *at))
    }
}

struct QueuedTask<E> {
    key: String,
    id: Option<WorkId>,
    survives_interrupt: bool,
    future: TaskFuture<E>,
    on_failure: TaskFailureFn<E>,
    timeout: Option<Duration>,
}

impl<E> StreamSlot<E> {
    /// What the stream owes the machine when it ends in `failure`. The
    /// stream is dropped here; a panic in its `Drop` is logged, and the
    /// failure already owed stands.
    fn failed(self, failure: EffectFailure) -> Produced<E> {
        let (key, on_failure) = self.discard();
        Produced::StreamFailed { key, on_failure, failure }
    }

    /// Drops the stream, logging a panic in its `Drop`; gives back what
    /// the slot held besides.
    fn discard(self) -> (Option<String>, StreamFailureFn<E>) {
        if let Some(message) = drop_caught(self.stream) {
            tracing::error!(key = self.key.as_deref(), panic = %message, "a stream panicked while being dropped");
        }
        (self.key, self.on_failure)
    }
}

/// Drops every stream without asking for its event (see `discard`).
fn drop_streams<E>(streams: &mut Vec<StreamSlot<E>>) {
    for slot in streams.drain(..) {
        // Nobody asks for the event: the callback goes unused.
        let _ = slot.discard();
    }
}

impl<E> QueuedTask<E> {
    /// What a task cancelled before it started owes the machine.
    fn cancelled(self) -> Produced<E> {
        Produced::TaskFailed { key: self.key, on_failure: self.on_failure, failure: EffectFailure::Cancelled }
    }
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

    pub(crate) fn open_stream(
        &mut self,
        key: Option<String>,
        stream: Pin<Box<dyn Stream<Item = E> + Send>>,
        timeout: Option<Duration>,
        on_failure: StreamFailureFn<E>,
    ) {
        let Some((id, skip)) = self.identify(WorkKind::Stream) else {
            return;
        };
        // Performed again after a restart: the items the machine took
        // before it are not delivered twice.
        let stream = if skip > 0 {
            Box::pin(futures::StreamExt::skip(stream, usize::try_from(skip).unwrap_or(usize::MAX)))
        } else {
            stream
        };
        let deadline = timeout.and_then(deadline_in).map(|at| Box::pin(tokio::time::sleep_until(at)));
        let span = tracing::Span::current();
        self.streams.push(StreamSlot { key, id, span, stream, deadline, on_failure });
    }

    /// Tasks holding a concurrency slot: the running ones, and the
    /// cancelled ones that have not stopped yet (tokio's abort takes effect
    /// at a task's next `.await`; a task in the middle of blocking work
    /// runs on until then, and still counts).
    fn holding_slots(&self) -> usize {
        self.tasks.len() + self.aborted.iter().filter(|h| !h.is_finished()).count()
    }

    #[cfg(test)]
    pub(crate) fn spawn_task(
        &mut self,
        key: String,
        future: TaskFuture<E>,
        timeout: Option<Duration>,
        on_failure: TaskFailureFn<E>,
    ) {
        self.spawn_task_with(key, future, timeout, on_failure, false);
    }

    /// [`spawn_task`](Self::spawn_task), with `survives_interrupt`: an
    /// interrupt leaves the task running ([`cancel_all`](Self::cancel_all)).
    pub(crate) fn spawn_task_with(
        &mut self,
        key: String,
        future: TaskFuture<E>,
        timeout: Option<Duration>,
        on_failure: TaskFailureFn<E>,
        survives_interrupt: bool,
    ) {
        let Some((id, _)) = self.identify(WorkKind::Task) else {
            return;
        };
        let task = QueuedTask { key, id, survives_interrupt, future, on_failure, timeout };
        // Behind tasks already waiting (for a cancelled one to stop, say),
        // a new one waits its turn: tasks start in spawn order.
        if self.queued.is_empty() && self.holding_slots() < self.limit && !self.holding() {
            self.start(task);
        } else {
            self.queued.push_back(task);
            self.start_queued();
        }
    }

    fn start(&mut self, task: QueuedTask<E>) {
        let QueuedTask { key, id, survives_interrupt, future, on_failure, timeout } = task;
        let handle = self.tracker.spawn_on(run_task(future, timeout), &self.runtime);
        self.tasks.push(TaskSlot { key, id, survives_interrupt, handle, on_failure, done: None });
    }

    /// Whether new tasks wait until their step is written.
    fn holding(&self) -> bool {
        self.track.as_ref().is_some_and(|t| t.hold)
    }

    /// Starts queued tasks while slots are free, in spawn order.
    fn start_queued(&mut self) {
        if self.queued.is_empty() || self.holding() {
            return;
        }
        let mut holding = self.holding_slots();
        while holding < self.limit {
            holding += 1;
            match self.queued.pop_front() {
                Some(task) => self.start(task),
                None => break,
            }
        }
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

    /// The result of the task that finished first among those that have.
    /// Out of line: only an agent with tasks in flight comes here, and
    /// inlined it made the worker's per-event path longer.
    #[inline(never)]
    fn poll_tasks(&mut self, cx: &mut Context<'_>) -> Option<Produced<E>> {
        // Queued tasks may be waiting for cancelled ones to stop: watch
        // those, and start the queued ones in the slots they leave.
        if !self.queued.is_empty() && !self.aborted.is_empty() {
            self.aborted.retain_mut(|handle| Pin::new(handle).poll(cx).is_pending());
            self.start_queued();
        }
        let mut first: Option<(usize, u64)> = None;
        for (i, slot) in self.tasks.iter_mut().enumerate() {
            // A task still running registers the worker for its end.
            if !slot.join_finished()
                && let Poll::Ready(joined) = Pin::new(&mut slot.handle).poll(cx)
            {
                slot.done = Some(joined);
            }
            if let Some(at) = slot.finished_at()
                && first.is_none_or(|(_, best)| at < best)
            {
                first = Some((i, at));
            }
        }
        let slot = self.tasks.remove(first?.0);
        self.start_queued();
        self.ended(WorkKind::Task, slot.id);
        let joined = slot.done?;
        Some(task_outcome(slot.key, slot.on_failure, joined))
    }

    fn poll_streams(&mut self, cx: &mut Context<'_>) -> Option<Produced<E>> {
        // Every deadline first: a stream that is always ready must not keep
        // another's deadline from being seen. A stream's own deadline goes
        // before its items too, or one that is always ready never times out.
        let expired = self
            .streams
            .iter_mut()
            .position(|slot| slot.deadline.as_mut().is_some_and(|d| d.as_mut().poll(cx).is_ready()));
        if let Some(i) = expired {
            let slot = self.streams.remove(i);
            self.ended(WorkKind::Stream, slot.id);
            return Some(slot.failed(EffectFailure::TimedOut));
        }
        // Streams take turns: the search starts after the one that yielded
        // last, so one that is always ready cannot starve the others. Each
        // open stream is polled at most once.
        let mut unpolled = self.streams.len();
        let mut i = self.stream_turn;
        while unpolled > 0 {
            if i >= self.streams.len() {
                i = 0;
            }
            unpolled -= 1;
            let StreamSlot { stream, span, id, .. } = &mut self.streams[i];
            let polled = span.in_scope(|| catch_unwind(AssertUnwindSafe(|| stream.as_mut().poll_next(cx))));
            match polled {
                Ok(Poll::Ready(Some(event))) => {
                    self.stream_turn = i + 1;
                    if let Some(track) = &mut self.track {
                        track.origin = *id;
                    }
                    return Some(Produced::Event(event));
                }
                // The next stream moves into `i`.
                Ok(Poll::Ready(None)) => {
                    let slot = self.streams.remove(i);
                    self.ended(WorkKind::Stream, slot.id);
                    // An end that panics is the stream's failure, as a
                    // panic while polling it is.
                    if let Some(message) = drop_caught(slot.stream) {
                        let failure = EffectFailure::Panicked(message);
                        return Some(Produced::StreamFailed { key: slot.key, on_failure: slot.on_failure, failure });
                    }
                }
                Ok(Poll::Pending) => i += 1,
                Err(payload) => {
                    let slot = self.streams.remove(i);
                    self.ended(WorkKind::Stream, slot.id);
                    return Some(slot.failed(EffectFailure::Panicked(panic_message(&*payload))));
                }
            }
        }
        None
    }
}

/// Maps a task's join result to what the machine receives.
fn task_outcome<E>(key: String, on_failure: TaskFailureFn<E>, result: Joined<E>) -> Produced<E> {
    let failure = match result {
        Ok((_, Ok(event))) => return Produced::Event(event),
        Ok((_, Err(failure))) => failure,
        // Panics are caught inside `run_task`; a join error can only be an
        // abort from outside (runtime shutdown) or a panic in the wrapper.
        Err(e) if e.is_panic() => EffectFailure::Panicked(panic_message(&*e.into_panic())),
        Err(_) => EffectFailure::Cancelled,
    };
    Produced::TaskFailed { key, on_failure, failure }
}

/// Delays from this long on never come: timers this far off are dropped
/// and timeouts this long left out. Tokio's own `sleep` counts no further,
/// and a deadline near the end of the clock (`Duration::MAX` away, or
/// within the millisecond tokio's timer rounds up to) would overflow.
const NEVER: Duration = Duration::from_secs(30 * 365 * 86_400);

/// The deadline `delay` from now, or `None` for a delay that never comes.
fn deadline_in(delay: Duration) -> Option<Instant> {
    if delay >= NEVER { None } else { Instant::now().checked_add(delay) }
}

/// The spawned body of a task: [`run_guarded`], its result stamped as it
/// comes (see [`FINISHED`]).
async fn run_task<E>(future: TaskFuture<E>, timeout: Option<Duration>) -> Stamped<E> {
    let result = run_guarded(future, timeout).await;
    (FINISHED.fetch_add(1, Ordering::Relaxed), result)
}

/// The task's future under `catch_unwind` and its timeout, which starts
/// when the task starts running.
async fn run_guarded<E>(future: TaskFuture<E>, timeout: Option<Duration>) -> TaskResult<E> {
    let guarded = AssertUnwindSafe(future).catch_unwind();
    let result = match timeout.and_then(deadline_in) {
        Some(deadline) => match tokio::time::timeout_at(deadline, guarded).await {
            // `timeout_at` polls the task before its clock, so a task that
            // blocked past the deadline and then finished on that poll
            // would count as on time. Its result is judged by when it
            // came, with the streams' rule: at the deadline is too late.
            Ok(_) if Instant::now() >= deadline => return Err(EffectFailure::TimedOut),
            Ok(result) => result,
            Err(_elapsed) => return Err(EffectFailure::TimedOut),
        },
        None => guarded.await,
    };
    result.map_err(|payload| EffectFailure::Panicked(panic_message(&*payload)))
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
mod tests {
    use super::{Produced, Work};
    use std::future::poll_fn;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use tokio::runtime::Handle;
    use tokio::sync::oneshot;
    use tokio_util::task::TaskTracker;

    fn event(produced: Produced<&'static str>) -> &'static str {
        match produced {
            Produced::Event(event) => event,
            _ => panic!("a task failed"),
        }
    }

    /// Results the worker finds together come in the order their tasks
    /// finished, not the order they were spawned in; one cancelled after
    /// it finished keeps its result.
    #[tokio::test]
    async fn finished_tasks_are_delivered_in_the_order_they_finished() {
        let mut work: Work<&'static str> = Work::new(Handle::current(), TaskTracker::new(), 4);
        let (b_done, b_finished) = oneshot::channel::<()>();
        let (c_done, c_finished) = oneshot::channel::<()>();
        // `a` waits for `b`, and `b` for `c`: they finish c, b, a.
        let failed = |_, _| "failed";
        work.spawn_task(
            "a".into(),
            Box::pin(async move {
                let _ = b_finished.await;
                "a"
            }),
            None,
            Box::new(failed),
        );
        work.spawn_task(
            "b".into(),
            Box::pin(async move {
                let _ = c_finished.await;
                let _ = b_done.send(());
                "b"
            }),
            None,
            Box::new(failed),
        );
        work.spawn_task(
            "c".into(),
            Box::pin(async move {
                let _ = c_done.send(());
                "c"
            }),
            None,
            Box::new(failed),
        );
        // All three end before the worker looks.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        let mut order = Vec::new();
        for _ in 0..2 {
            order.push(event(poll_fn(|cx| work.poll_next(cx)).await));
        }
        assert_eq!(order, ["c", "b"]);
        assert_eq!(work.cancel("a").into_iter().map(event).collect::<Vec<_>>(), ["a"]);
        assert!(!work.busy());
    }

    /// Cancelling tasks one by one keeps only the aborted tasks that have
    /// not stopped yet, not every one cancelled since the agent started.
    #[tokio::test(start_paused = true)]
    async fn cancelled_tasks_that_stopped_are_let_go() {
        let mut work: Work<u32> = Work::new(Handle::current(), TaskTracker::new(), 4);
        for round in 0..100 {
            work.spawn_task("tool".to_owned(), Box::pin(std::future::pending()), None, Box::new(|_, _| 0));
            assert_eq!(work.cancel("tool").len(), 1, "round {round}: the task was running");
            // The runtime stops the aborted task.
            tokio::task::yield_now().await;
        }
        assert!(work.aborted.len() <= 2, "{} aborted handles kept", work.aborted.len());
    }

    fn failure(produced: Produced<&'static str>) -> Option<super::EffectFailure> {
        match produced {
            Produced::TaskFailed { failure, .. } | Produced::StreamFailed { failure, .. } => Some(failure),
            Produced::Event(_) => None,
        }
    }

    /// A retry that abandons "the LLM stream" cancels every stream and task
    /// under that key: an older stream that delivered its last item but is
    /// still open would otherwise go on delivering into the next attempt.
    #[tokio::test]
    async fn cancel_takes_every_task_and_stream_with_the_key() {
        let mut work: Work<&'static str> = Work::new(Handle::current(), TaskTracker::new(), 1);
        for _ in 0..2 {
            work.open_stream(
                Some("llm".into()),
                Box::pin(futures::stream::pending()),
                None,
                Box::new(|_| Some("stream cancelled")),
            );
        }
        work.open_stream(Some("other".into()), Box::pin(futures::stream::pending()), None, Box::new(|_| None));
        // With a limit of 1, one runs and one waits.
        for _ in 0..2 {
            work.spawn_task("llm".into(), Box::pin(std::future::pending()), None, Box::new(|_, _| "task cancelled"));
        }
        let cancelled = work.cancel("llm");
        assert_eq!(cancelled.len(), 4);
        assert!(cancelled.into_iter().all(|p| failure(p) == Some(super::EffectFailure::Cancelled)));
        assert!(work.cancel("llm").is_empty(), "nothing is left under the key");
        assert_eq!(work.cancel("other").len(), 1, "other keys are left alone");
        assert!(!work.busy());
    }

    /// A task busy without an `.await` until released, so that tokio's
    /// abort (which takes effect at a task's next `.await`) cannot stop
    /// it before then. Dropping the spinner releases the task, or the
    /// runtime would wait for it forever when a test ends early.
    struct Spinner {
        entered: Arc<AtomicBool>,
        release: Arc<AtomicBool>,
        stopped: Arc<AtomicBool>,
    }

    impl Spinner {
        /// Spawns the busy task under `key` in `work`.
        fn spawn(work: &mut Work<&'static str>, key: &str) -> Self {
            let spinner = Self { entered: Arc::default(), release: Arc::default(), stopped: Arc::default() };
            let (entered, release, stopped) =
                (Arc::clone(&spinner.entered), Arc::clone(&spinner.release), Arc::clone(&spinner.stopped));
            work.spawn_task(
                key.to_owned(),
                Box::pin(async move {
                    entered.store(true, Ordering::SeqCst);
                    while !release.load(Ordering::SeqCst) {
                        std::hint::spin_loop();
                    }
                    stopped.store(true, Ordering::SeqCst);
                    // The abort takes effect here.
                    tokio::task::yield_now().await;
                    "busy"
                }),
                None,
                Box::new(|_, _| "busy cancelled"),
            );
            spinner
        }

        /// Waits until the task is spinning on another worker thread.
        async fn entered(&self) {
            while !self.entered.load(Ordering::SeqCst) {
                tokio::task::yield_now().await;
            }
        }

        fn release(&self) {
            self.release.store(true, Ordering::SeqCst);
        }
    }

    impl Drop for Spinner {
        fn drop(&mut self) {
            self.release();
        }
    }

    /// A cancelled task that has not stopped yet keeps its concurrency
    /// slot: the next task starts only once it has stopped.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancelled_task_keeps_its_slot_until_it_stops() {
        let mut work: Work<&'static str> = Work::new(Handle::current(), TaskTracker::new(), 1);
        let busy = Spinner::spawn(&mut work, "busy");
        busy.entered().await;
        let cancelled: Vec<_> = work.cancel("busy").into_iter().map(failure).collect();
        assert_eq!(cancelled, [Some(super::EffectFailure::Cancelled)]);
        let stopped = Arc::clone(&busy.stopped);
        work.spawn_task(
            "next".into(),
            Box::pin(async move {
                if stopped.load(Ordering::SeqCst) { "next after busy stopped" } else { "next beside busy" }
            }),
            None,
            Box::new(|_, _| "next failed"),
        );
        // Had `next` been started beside `busy`, the free worker would run
        // it before these later probes (tasks spawned from outside the
        // runtime are taken in order).
        for _ in 0..3 {
            tokio::spawn(async {}).await.expect("the probe runs");
        }
        busy.release();
        assert_eq!(event(poll_fn(|cx| work.poll_next(cx)).await), "next after busy stopped");
    }

    /// A task spawned while another waits for a cancelled one to stop
    /// goes behind it: tasks start in spawn order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tasks_start_in_spawn_order_after_a_cancelled_one_stops() {
        let mut work: Work<&'static str> = Work::new(Handle::current(), TaskTracker::new(), 1);
        let busy = Spinner::spawn(&mut work, "busy");
        busy.entered().await;
        assert_eq!(work.cancel("busy").len(), 1);
        let started = Arc::new(Mutex::new(Vec::new()));
        let task = |name: &'static str| {
            let started = Arc::clone(&started);
            Box::pin(async move {
                started.lock().expect("not poisoned").push(name);
                name
            })
        };
        work.spawn_task("b".into(), task("b"), None, Box::new(|_, _| "b failed"));
        busy.release();
        while !work.aborted.iter().all(tokio::task::JoinHandle::is_finished) {
            tokio::task::yield_now().await;
        }
        // A slot is free now, but `b` was there first.
        work.spawn_task("c".into(), task("c"), None, Box::new(|_, _| "c failed"));
        let delivered = [event(poll_fn(|cx| work.poll_next(cx)).await), event(poll_fn(|cx| work.poll_next(cx)).await)];
        assert_eq!(delivered, ["b", "c"]);
        assert_eq!(*started.lock().expect("not poisoned"), ["b", "c"]);
    }
}
