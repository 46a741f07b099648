//! Starting tasks (in spawn order, within the concurrency limit) and
//! streams, and polling them for what they produce.

use super::*;

impl<E: Send + 'static> Work<E> {
    pub(crate) fn open_stream(
        &mut self,
        key: Option<String>,
        stream: Pin<Box<dyn Stream<Item = E> + Send>>,
        timeout: Option<Duration>,
        on_failure: StreamFailureFn<E>,
    ) {
        // Performed again after a restart, `skip` is the number of items
        // the machine took before it: they are not delivered twice.
        let Some((id, skip)) = self.identify(WorkKind::Stream) else {
            return;
        };
        let deadline = timeout.and_then(deadline_in).map(|at| Box::pin(tokio::time::sleep_until(at)));
        let span = tracing::Span::current();
        self.streams.push(StreamSlot { key, id, span, stream, deadline, on_failure, skip });
    }

    /// Tasks holding a concurrency slot: the running ones, and the
    /// cancelled ones that have not stopped yet (tokio's abort takes effect
    /// at a task's next `.await`; a task in the middle of blocking work
    /// runs on until then, and still counts).
    pub(super) fn holding_slots(&self) -> usize {
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

    pub(super) fn start(&mut self, task: QueuedTask<E>) {
        let QueuedTask { key, id, survives_interrupt, future, on_failure, timeout } = task;
        let handle = self.tracker.spawn_on(run_task(future, timeout), &self.runtime);
        self.tasks.push(TaskSlot { key, id, survives_interrupt, handle, on_failure, done: None });
    }

    /// Whether new tasks wait until their step is written.
    pub(super) fn holding(&self) -> bool {
        self.track.as_ref().is_some_and(|t| t.hold)
    }

    /// Starts queued tasks while slots are free, in spawn order.
    pub(super) fn start_queued(&mut self) {
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

    /// The result of the task that finished first among those that have.
    /// Out of line: only an agent with tasks in flight comes here, and
    /// inlined it made the worker's per-event path longer.
    #[inline(never)]
    pub(super) fn poll_tasks(&mut self, cx: &mut Context<'_>) -> Option<Produced<E>> {
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

    pub(super) fn poll_streams(&mut self, cx: &mut Context<'_>) -> Option<Produced<E>> {
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
            let StreamSlot { stream, span, id, skip, .. } = &mut self.streams[i];
            let polled = span.in_scope(|| catch_unwind(AssertUnwindSafe(|| poll_skipping(stream.as_mut(), skip, cx))));
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
                    // Opened again after a restart, it ended short of the
                    // items the machine took: what the machine waits for
                    // (the rest of a reply) will not come. Its failure tells
                    // it so, rather than an end that leaves it waiting.
                    if slot.skip > 0 {
                        let failure = EffectFailure::Diverged;
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

/// Polls `stream`, dropping the items it yields while `skip` (counted
/// down) is not zero.
fn poll_skipping<E>(
    mut stream: Pin<&mut (dyn Stream<Item = E> + Send)>,
    skip: &mut u64,
    cx: &mut Context<'_>,
) -> Poll<Option<E>> {
    loop {
        match stream.as_mut().poll_next(cx) {
            Poll::Ready(Some(_)) if *skip > 0 => *skip -= 1,
            other => return other,
        }
    }
}
