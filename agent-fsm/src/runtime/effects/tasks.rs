//! The long-running work an action schedules through its
//! [`EffectContext`]: streams and keyed tasks, opened, spawned and
//! cancelled, and the events cancelled work owes the machine.

use super::*;

impl<M, O> EffectContext<'_, M, O>
where
    M: StateMachine,
    M::Event: Send + 'static,
    O: Clone + Send + fmt::Debug + 'static,
{
    /// Opens a stream whose items are delivered in order, as they arrive.
    ///
    /// The stream is read until it ends, times out or is cancelled,
    /// whatever state the machine is in meanwhile: items that come after
    /// the machine has moved on (an error item sent it to a retry, say) are
    /// still delivered. To be able to drop it early, open it with
    /// [`stream_keyed`](Self::stream_keyed) and cancel it with
    /// [`cancel_task`](Self::cancel_task), for example when performing the
    /// retry.
    ///
    /// While it is open, external events wait (but for those the table
    /// marks `#[during_work]`; see the module docs). If it
    /// times out, panics or is cancelled (interrupt, shutdown,
    /// `cancel_task`), it is dropped and `on_failure` says what the machine
    /// receives, if anything; items already delivered stay delivered.
    ///
    /// A stream that simply ends produces nothing more. If it ends without
    /// the event that would move the machine on (a connection closed before
    /// the end of the reply), the machine stays where it is; if the table
    /// needs to hear of it, wrap the stream to append an event of your own,
    /// such as `stream.chain(futures::stream::iter([Event::StreamClosed]))`,
    /// which the states the final event already left ignore.
    pub fn stream<S, F>(&mut self, stream: S, on_failure: F)
    where
        S: Stream<Item = M::Event> + Send + 'static,
        F: FnOnce(EffectFailure) -> Option<M::Event> + Send + 'static,
    {
        self.push_stream(None, stream, on_failure);
    }

    /// Like [`stream`](Self::stream), for a stream that must be awaited
    /// before it exists (an HTTP request whose reply body is the stream):
    /// `open` is awaited first, as part of the stream, on the worker; then
    /// the stream it gives is read, or, if it gives `Err(event)`, that one
    /// event is delivered and the stream ends. Everything `stream` says
    /// holds from the call on: the external events it holds back, its
    /// timeout (which covers the opening too), its `on_failure`. See the
    /// [`Effects`](Effects#effects-that-must-await) docs for an example.
    pub fn open_stream<Open, S, F>(&mut self, open: Open, on_failure: F)
    where
        Open: Future<Output = Result<S, M::Event>> + Send + 'static,
        S: Stream<Item = M::Event> + Send + 'static,
        F: FnOnce(EffectFailure) -> Option<M::Event> + Send + 'static,
    {
        self.push_stream(None, opened(open), on_failure);
    }

    /// [`open_stream`](Self::open_stream) under a `key`, as
    /// [`stream_keyed`](Self::stream_keyed): cancelling the key while the
    /// stream is still being opened drops the opening future too.
    pub fn open_stream_keyed<Open, S, F>(&mut self, key: impl Into<String>, open: Open, on_failure: F)
    where
        Open: Future<Output = Result<S, M::Event>> + Send + 'static,
        S: Stream<Item = M::Event> + Send + 'static,
        F: FnOnce(EffectFailure) -> Option<M::Event> + Send + 'static,
    {
        self.push_stream(Some(key.into()), opened(open), on_failure);
    }

    /// Like [`stream`](Self::stream), with a `key` by which
    /// [`cancel_task`](Self::cancel_task) can cancel it; the key is also
    /// reported in [`Notification::EffectFailed`](crate::runtime::Notification::EffectFailed)
    /// if the stream fails (panics, times out, or is cancelled by an
    /// interrupt or a shutdown). Keys are the caller's to choose, and
    /// shared with tasks.
    ///
    /// ```
    /// # use agent_fsm::runtime::EffectContext;
    /// # #[derive(Debug)] enum Event { Delta(String), RetryFired }
    /// # enum Action { CallLlm, ScheduleRetry(std::time::Duration) }
    /// # fn llm() -> impl futures::Stream<Item = Event> + Send + 'static { futures::stream::empty() }
    /// # fn perform<M: agent_fsm::StateMachine<Action = Action, Event = Event>>(action: Action, cx: &mut EffectContext<'_, M, ()>) {
    /// match action {
    ///     Action::CallLlm => cx.stream_keyed("llm", llm(), |_failure| None),
    ///     Action::ScheduleRetry(delay) => {
    ///         // The failed attempt's stream may still be open: nothing
    ///         // more of it may reach the next attempt.
    ///         cx.cancel_task("llm");
    ///         cx.pause(delay, Event::RetryFired);
    ///     }
    /// }
    /// # }
    /// ```
    pub fn stream_keyed<S, F>(&mut self, key: impl Into<String>, stream: S, on_failure: F)
    where
        S: Stream<Item = M::Event> + Send + 'static,
        F: FnOnce(EffectFailure) -> Option<M::Event> + Send + 'static,
    {
        self.push_stream(Some(key.into()), stream, on_failure);
    }

    pub(super) fn push_stream<S, F>(&mut self, key: Option<String>, stream: S, on_failure: F)
    where
        S: Stream<Item = M::Event> + Send + 'static,
        F: FnOnce(EffectFailure) -> Option<M::Event> + Send + 'static,
    {
        let (timeout, _) = self.settings.timeouts_for(self.action);
        if !self.discarding("stream")
            && let Some(work) = self.env.work()
        {
            work.open_stream(key, Box::pin(stream), timeout, Box::new(on_failure));
        }
    }

    /// Spawns a task (on the configured [`TaskTracker`]) whose output is
    /// delivered when it completes.
    ///
    /// Tasks run concurrently up to the configured limit, later ones
    /// waiting in spawn order; results are delivered in completion order.
    /// A task that panics, outlives its timeout or is cancelled yields
    /// `on_failure(key, why)` instead, for that task only, so every task
    /// produces exactly one event. The task runs to its end whatever state
    /// the machine is in meanwhile (cancel it by key to stop it early), and
    /// it must not wait on its own agent's handle (see the module docs).
    pub fn spawn_task<T, F>(&mut self, key: impl Into<String>, task: T, on_failure: F)
    where
        T: Future<Output = M::Event> + Send + 'static,
        F: FnOnce(String, EffectFailure) -> M::Event + Send + 'static,
    {
        self.spawn_task_with(key, task, on_failure, TaskOptions::new());
    }

    /// [`spawn_task`](Self::spawn_task) with [`TaskOptions`]: a task that
    /// an [`interrupt`](crate::runtime::MachineHandle::interrupt) does not cancel,
    /// say, so that the tool running when the user interrupts finishes and
    /// its result reaches the machine after the interrupt event.
    ///
    /// ```
    /// # use agent_fsm::runtime::{EffectContext, TaskOptions};
    /// # #[derive(Debug)] enum Event { ToolDone(Result<String, String>) }
    /// # async fn run_tool() -> Result<String, String> { Ok(String::new()) }
    /// # fn perform<M: agent_fsm::StateMachine<Event = Event>>(cx: &mut EffectContext<'_, M, ()>) {
    /// cx.spawn_task_with(
    ///     "tool-1",
    ///     async { Event::ToolDone(run_tool().await) },
    ///     |_key, failure| Event::ToolDone(Err(failure.to_string())),
    ///     TaskOptions::new().survive_interrupt(),
    /// );
    /// # }
    /// ```
    pub fn spawn_task_with<T, F>(&mut self, key: impl Into<String>, task: T, on_failure: F, options: TaskOptions)
    where
        T: Future<Output = M::Event> + Send + 'static,
        F: FnOnce(String, EffectFailure) -> M::Event + Send + 'static,
    {
        let (_, timeout) = self.settings.timeouts_for(self.action);
        if !self.discarding("spawn_task")
            && let Some(work) = self.env.work()
        {
            // The task runs in the span of the step that spawned it.
            let task = tracing::Instrument::instrument(task, tracing::Span::current());
            let (key, on_failure) = (key.into(), Box::new(on_failure));
            work.spawn_task_with(key, Box::pin(task), timeout, on_failure, options.survive_interrupt);
        }
    }

    /// Cancels every task and stream with `key`: running or queued tasks
    /// ([`spawn_task`](Self::spawn_task)) and open streams
    /// ([`stream_keyed`](Self::stream_keyed)). Every one, so that a retry
    /// that abandons "the LLM stream" also stops an earlier stream under
    /// the same key that delivered its last item but is not closed yet.
    ///
    /// A task yields `on_failure(key, Cancelled)` right after the current
    /// step (or its real result, if it had already finished). A stream is
    /// dropped at once, so nothing more of it is delivered, and its
    /// `on_failure(Cancelled)` event, if it returns one, is delivered right
    /// after the current step. These events come in this order: running
    /// tasks (spawn order), queued tasks, streams (opening order). Returns
    /// whether any such task or stream existed. Being the effects' own decision, the cancellation is not
    /// published as a
    /// [`Notification::EffectFailed`](crate::runtime::Notification::EffectFailed)
    /// (a cancellation by an interrupt or a shutdown is); a task found to
    /// have already failed on its own (panicked, timed out) is published
    /// as that failure.
    ///
    /// Only the effects cancel one task. An event sent from a handle waits
    /// in the inbox while work is in flight (see the
    /// [ordering](crate::runtime#ordering)), so it would arrive after the task it
    /// means to stop, unless the table marks it `#[during_work]`: such an
    /// event (a user's "cancel") reaches the machine while the task runs,
    /// and the action its row returns can cancel the task here. From
    /// outside, [`interrupt`](crate::runtime::MachineHandle::interrupt) cancels all
    /// of them.
    pub fn cancel_task(&mut self, key: &str) -> bool {
        let Some(work) = self.env.work.as_deref_mut() else {
            return false;
        };
        // A step replayed after a restart: what it cancelled ended before.
        if work.replaying() {
            return false;
        }
        let cancelled = work.cancel(key);
        let found = !cancelled.is_empty();
        for produced in cancelled {
            self.owe(produced);
        }
        found
    }

    /// Queues what a task or stream the effects cancelled owes, after the
    /// current step.
    pub(super) fn owe(&mut self, produced: crate::runtime::work::Produced<M::Event>) {
        let Some(work) = self.env.work.as_deref_mut() else {
            return;
        };
        // A failure callback is user code; it runs here, inside `perform`'s
        // own `catch_unwind`.
        let event = match produced {
            crate::runtime::work::Produced::Event(event) => Some(event),
            crate::runtime::work::Produced::TaskFailed { key, on_failure, failure } => {
                // The task had already failed on its own (panicked, timed
                // out): that failure is not the effects' decision, and is
                // reported as any other.
                if failure != crate::runtime::EffectFailure::Cancelled {
                    tracing::warn!(key = %key, failure = %failure, "effect failed");
                    let (k, f) = (key.clone(), failure.clone());
                    notice_subscribers(self.notifier, self.shared);
                    self.notifier.publish(crate::runtime::Topics::FAULTS, || {
                        crate::runtime::Notification::EffectFailed { key: Some(k), failure: f }
                    });
                }
                let owner = key.clone();
                Some(naming_the_owner(Some(&owner), || on_failure(key, failure)))
            }
            crate::runtime::work::Produced::StreamFailed { key, on_failure, failure } => {
                naming_the_owner(key.as_deref(), || on_failure(failure))
            }
        };
        if let Some(event) = event {
            work.push_ready(event, true);
        }
    }
}
