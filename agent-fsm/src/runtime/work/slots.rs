//! The slots of a running task or open stream, a task waiting for a free
//! slot, and how a task runs (timeout, panic caught, finish stamped).

use super::*;

pub(super) struct StreamSlot<E> {
    /// Set by `EffectContext::stream_keyed`, for `cancel`.
    pub(super) key: Option<String>,
    /// A durable agent's id for it.
    pub(super) id: Option<WorkId>,
    /// The span of the step that opened the stream, entered while it is
    /// polled (tasks carry theirs through `Instrument`).
    pub(super) span: tracing::Span,
    pub(super) stream: Pin<Box<dyn Stream<Item = E> + Send>>,
    pub(super) deadline: Option<Pin<Box<Sleep>>>,
    pub(super) on_failure: StreamFailureFn<E>,
    /// Items still to drop: a durable agent's stream opened again after a
    /// restart skips those the machine took before it.
    pub(super) skip: u64,
}

pub(super) struct TaskSlot<E> {
    pub(super) key: String,
    pub(super) id: Option<WorkId>,
    /// Spawned with `TaskOptions::survive_interrupt`: an interrupt leaves
    /// it running.
    pub(super) survives_interrupt: bool,
    pub(super) handle: JoinHandle<Stamped<E>>,
    pub(super) on_failure: TaskFailureFn<E>,
    /// Joined, waiting for the results that finished before it.
    pub(super) done: Option<Joined<E>>,
}

impl<E> TaskSlot<E> {
    /// Takes a finished task's result into `done`; true once it is there.
    /// Unconstrained: once the worker's coop budget ran out, a finished
    /// handle would report `Pending`, and its result would be taken late
    /// (out of order, or reported cancelled).
    pub(super) fn join_finished(&mut self) -> bool {
        if self.done.is_none() && self.handle.is_finished() {
            self.done = tokio::task::coop::unconstrained(&mut self.handle).now_or_never();
        }
        self.done.is_some()
    }

    /// When it finished; a task the runtime stopped from outside goes
    /// after every stamped one.
    pub(super) fn finished_at(&self) -> Option<u64> {
        self.done.as_ref().map(|joined| joined.as_ref().map_or(u64::MAX, |(at, _)| *at))
    }
}

pub(super) struct QueuedTask<E> {
    pub(super) key: String,
    pub(super) id: Option<WorkId>,
    pub(super) survives_interrupt: bool,
    pub(super) future: TaskFuture<E>,
    pub(super) on_failure: TaskFailureFn<E>,
    pub(super) timeout: Option<Duration>,
}

impl<E> StreamSlot<E> {
    /// What the stream owes the machine when it ends in `failure`. The
    /// stream is dropped here; a panic in its `Drop` is logged, and the
    /// failure already owed stands.
    pub(super) fn failed(self, failure: EffectFailure) -> Produced<E> {
        let (key, on_failure) = self.discard();
        Produced::StreamFailed { key, on_failure, failure }
    }

    /// Drops the stream, logging a panic in its `Drop`; gives back what
    /// the slot held besides.
    pub(super) fn discard(self) -> (Option<String>, StreamFailureFn<E>) {
        if let Some(message) = drop_caught(self.stream) {
            tracing::error!(key = self.key.as_deref(), panic = %message, "a stream panicked while being dropped");
        }
        (self.key, self.on_failure)
    }
}

/// Drops every stream without asking for its event (see `discard`).
pub(super) fn drop_streams<E>(streams: &mut Vec<StreamSlot<E>>) {
    for slot in streams.drain(..) {
        // Nobody asks for the event: the callback goes unused.
        let _ = slot.discard();
    }
}

impl<E> QueuedTask<E> {
    /// What a task cancelled before it started owes the machine.
    pub(super) fn cancelled(self) -> Produced<E> {
        Produced::TaskFailed { key: self.key, on_failure: self.on_failure, failure: EffectFailure::Cancelled }
    }
}

/// Maps a task's join result to what the machine receives.
pub(super) fn task_outcome<E>(key: String, on_failure: TaskFailureFn<E>, result: Joined<E>) -> Produced<E> {
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
pub(super) const NEVER: Duration = Duration::from_secs(30 * 365 * 86_400);

/// The deadline `delay` from now, or `None` for a delay that never comes.
pub(crate) fn deadline_in(delay: Duration) -> Option<Instant> {
    if delay >= NEVER { None } else { Instant::now().checked_add(delay) }
}

/// The spawned body of a task: [`run_guarded`], its result stamped as it
/// comes (see [`FINISHED`]).
pub(super) async fn run_task<E>(future: TaskFuture<E>, timeout: Option<Duration>) -> Stamped<E> {
    let result = run_guarded(future, timeout).await;
    (FINISHED.fetch_add(1, Ordering::Relaxed), result)
}

/// The task's future under `catch_unwind` and its timeout, which starts
/// when the task starts running.
pub(super) async fn run_guarded<E>(future: TaskFuture<E>, timeout: Option<Duration>) -> TaskResult<E> {
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
