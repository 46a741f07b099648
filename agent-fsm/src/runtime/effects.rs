//! The user's side of the executor: [`Effects`] performs each action the
//! machine returns, through an [`EffectContext`] that turns I/O into events.
//!
//! `perform` is synchronous and should return quickly: it does not do the
//! I/O itself but *schedules* it, and the worker
//! ([`executor`](super::executor)) delivers what the scheduled work
//! produces, one event at a time, into the machine. An action may produce:
//!
//! | it produces | call |
//! | --- | --- |
//! | nothing | return |
//! | one event, right away | [`send`](EffectContext::send) |
//! | a stream of events (an LLM response) | [`stream`](EffectContext::stream), [`stream_keyed`](EffectContext::stream_keyed) |
//! | concurrent keyed tasks, one event each (tool calls) | [`spawn_task`](EffectContext::spawn_task) |
//! | an event after a delay (a retry timer) | [`after`](EffectContext::after) |
//! | something for subscribers (text to display) | [`output`](EffectContext::output) |
//! | stop a task or keyed stream it started earlier | [`cancel_task`](EffectContext::cancel_task) |
//!
//! Scheduled work lives until it ends, whatever the machine does meanwhile:
//! a stream is read until it ends, times out or is cancelled, and a task
//! runs until it returns, times out or is cancelled, even after the
//! machine has left the state that started them; their events then reach
//! whatever state the machine is in. An action that gives up on earlier
//! work (a retry after an error item, while the failed stream is still
//! open) should cancel it by key first, so that none of its late events
//! reach the new attempt. Only timers are tied to the state that set them.
//!
//! Work scheduled here must never wait on its own agent's
//! [`MachineHandle`](super::MachineHandle) (`call`, `wait_idle`, or `send`
//! on a full inbox): the inbox is read only once no work is in flight, and
//! the work waiting *is* in flight, so it waits forever. Report progress
//! with the events the stream yields or the task returns instead.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use futures::Stream;
use tokio::runtime::Handle;
use tokio_util::task::TaskTracker;

use super::config::Settings;
use super::feed::Notifier;
use super::work::Work;
use crate::{ActionKindOf, Kind, StateMachine};

/// Performs the actions of machine `M`.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use agent_fsm::StateMachine;
/// use agent_fsm::runtime::{EffectContext, Effects, RetryPolicy};
///
/// # struct Turn; struct Tool; impl Tool { fn call_id(&self) -> &str { "" } async fn run(self) -> Outcome { Outcome } }
/// # struct Outcome;
/// # enum Event { Llm(Turn), ToolCompleted { call_id: String, outcome: Result<Outcome, String> }, RetryTimeoutFired }
/// # enum Action { SendLlmRequest, ExecuteTools(Vec<Tool>), ScheduleRetry { attempt: u32 }, DisplayMessage(String), WaitForInput }
/// # fn llm_stream() -> impl futures::Stream<Item = Event> + Send + 'static { futures::stream::empty() }
/// struct LoomEffects {
///     retry: RetryPolicy,
/// }
///
/// # fn perform<M: StateMachine<Action = Action, Event = Event>>(this: &mut LoomEffects, action: Action, cx: &mut EffectContext<'_, M, String>) {
/// // inside `impl Effects<Loom> for LoomEffects { type Output = String; fn perform(...) { ... } }`
/// match action {
///     Action::SendLlmRequest => cx.stream(llm_stream(), |_failure| None),
///     Action::ExecuteTools(calls) => {
///         for call in calls {
///             let id = call.call_id().to_owned();
///             cx.spawn_task(
///                 id.clone(),
///                 async move { Event::ToolCompleted { outcome: Ok(call.run().await), call_id: id } },
///                 |call_id, failure| Event::ToolCompleted { call_id, outcome: Err(failure.to_string()) },
///             );
///         }
///     }
///     Action::ScheduleRetry { attempt } => cx.after(this.retry.delay(attempt), Event::RetryTimeoutFired),
///     Action::DisplayMessage(text) => cx.output(text),
///     Action::WaitForInput => {}
/// }
/// # }
/// ```
pub trait Effects<M: StateMachine>: Send + 'static {
    /// What effects publish to subscribers with
    /// [`EffectContext::output`] (`()` if nothing).
    type Output: Clone + Send + fmt::Debug + 'static;

    /// Performs `action`, which the machine just returned, by scheduling
    /// work on `cx`. Called on the worker task: it must not block.
    ///
    /// A panic here stops the worker with
    /// [`WorkerError::EffectsPanicked`](super::WorkerError::EffectsPanicked).
    fn perform(&mut self, action: M::Action, cx: &mut EffectContext<'_, M, Self::Output>);
}

/// Effects that do nothing: every action is a no-op.
impl<M: StateMachine> Effects<M> for () {
    type Output = ();

    fn perform(&mut self, _action: M::Action, _cx: &mut EffectContext<'_, M, ()>) {}
}

/// Effects written as a closure; see [`from_fn`].
pub struct FnEffects<F>(F);

impl<F> fmt::Debug for FnEffects<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnEffects")
    }
}

/// Effects from a closure, for small machines and tests (no outputs).
pub fn from_fn<M, F>(f: F) -> FnEffects<F>
where
    M: StateMachine,
    F: FnMut(M::Action, &mut EffectContext<'_, M, ()>) + Send + 'static,
{
    FnEffects(f)
}

impl<M, F> Effects<M> for FnEffects<F>
where
    M: StateMachine,
    F: FnMut(M::Action, &mut EffectContext<'_, M, ()>) + Send + 'static,
{
    type Output = ();

    fn perform(&mut self, action: M::Action, cx: &mut EffectContext<'_, M, ()>) {
        (self.0)(action, cx);
    }
}

/// Why a stream or a task ended without its own event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum EffectFailure {
    /// The future or stream panicked; the message if it was a string.
    Panicked(String),
    /// It outlived its timeout (see [`ExecutorConfig`](super::ExecutorConfig)).
    TimedOut,
    /// It was cancelled by an interrupt, a shutdown or
    /// [`EffectContext::cancel_task`] (tasks and keyed streams).
    Cancelled,
}

impl fmt::Display for EffectFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Panicked(message) => write!(f, "panicked: {message}"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Cancelled => f.write_str("cancelled"),
        }
    }
}

impl std::error::Error for EffectFailure {}

/// Where the worker keeps what `perform` schedules.
pub(crate) struct Env<'w, E> {
    pub(crate) work: &'w mut Option<Box<Work<E>>>,
    pub(crate) tracker: &'w TaskTracker,
    pub(crate) limit: usize,
}

impl<E: Send + 'static> Env<'_, E> {
    /// The work in flight, created on first use on the current runtime
    /// (the worker checked at start that there is one).
    fn work(&mut self) -> Option<&mut Work<E>> {
        if self.work.is_none() {
            let Ok(runtime) = Handle::try_current() else {
                tracing::error!("effect work scheduled outside a tokio runtime: dropped");
                return None;
            };
            *self.work = Some(Box::new(Work::new(runtime, self.tracker.clone(), self.limit)));
        }
        self.work.as_deref_mut()
    }
}

/// What [`Effects::perform`] uses to turn an action into events.
///
/// Work scheduled here starts when `perform` returns; its events are
/// delivered one at a time by the worker (see the [module docs](super) for
/// the ordering rules).
pub struct EffectContext<'a, M: StateMachine, O> {
    pub(crate) machine: &'a M,
    pub(crate) env: Env<'a, M::Event>,
    pub(crate) notifier: &'a mut Notifier<M, O>,
    /// Where a first subscription made by the effects themselves leaves the
    /// feed, picked up before they publish.
    pub(crate) shared: &'a super::handle::Shared<M, O>,
    /// Where the timeouts are looked up, only when a stream or task starts
    /// (most actions start neither).
    pub(crate) settings: &'a Settings<M>,
    pub(crate) action: ActionKindOf<M>,
    /// The machine's visit counter, stamped on timers.
    pub(crate) visit: u32,
    /// Set while performing the final action (the one that entered a
    /// terminal state, or the shutdown event's): new work is discarded.
    pub(crate) discard: bool,
}

impl<M: StateMachine, O> fmt::Debug for EffectContext<'_, M, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EffectContext")
            .field("machine", &M::DESCRIPTION.name)
            .field("action", &self.action)
            .field("discard", &self.discard)
            .finish_non_exhaustive()
    }
}

impl<M, O> EffectContext<'_, M, O>
where
    M: StateMachine,
    M::Event: Send + 'static,
    O: Clone + Send + fmt::Debug + 'static,
{
    /// The machine, after the step that returned this action (read its
    /// state or context to decide how to perform it).
    pub fn machine(&self) -> &M {
        self.machine
    }

    /// The kind of the action being performed.
    pub fn action(&self) -> ActionKindOf<M> {
        self.action
    }

    /// Whether this is the final action (the machine entered a terminal
    /// state, or the worker is shutting down): every call below that sends
    /// or starts work is then ignored; [`cancel_task`](Self::cancel_task)
    /// still cancels (the machine gets the failure event, whose action is
    /// not performed), and [`output`](Self::output) still works.
    pub fn is_final(&self) -> bool {
        self.discard
    }

    fn discarding(&self, what: &'static str) -> bool {
        if self.discard {
            tracing::debug!(action = Kind::name(self.action), what, "final action: new work discarded");
        }
        self.discard
    }

    /// Delivers `event` right after the current step, before any other
    /// event. Several `send`s are delivered in call order, and an event
    /// sent by the step of an event sent earlier comes before the rest of
    /// the earlier sends (depth first): each event is taken in the state the
    /// step that sent it left.
    pub fn send(&mut self, event: M::Event) {
        if !self.discarding("send")
            && let Some(work) = self.env.work()
        {
            work.ready.push_back(super::work::Immediate { event, owed: false });
        }
    }

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
    /// While it is open, external events wait (see the module docs). If it
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
        self.open_stream(None, stream, on_failure);
    }

    /// Like [`stream`](Self::stream), with a `key` by which
    /// [`cancel_task`](Self::cancel_task) can cancel it; the key is also
    /// reported in [`Notification::EffectFailed`](super::Notification::EffectFailed)
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
    ///         cx.after(delay, Event::RetryFired);
    ///     }
    /// }
    /// # }
    /// ```
    pub fn stream_keyed<S, F>(&mut self, key: impl Into<String>, stream: S, on_failure: F)
    where
        S: Stream<Item = M::Event> + Send + 'static,
        F: FnOnce(EffectFailure) -> Option<M::Event> + Send + 'static,
    {
        self.open_stream(Some(key.into()), stream, on_failure);
    }

    fn open_stream<S, F>(&mut self, key: Option<String>, stream: S, on_failure: F)
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
        let (_, timeout) = self.settings.timeouts_for(self.action);
        if !self.discarding("spawn_task")
            && let Some(work) = self.env.work()
        {
            work.spawn_task(key.into(), Box::pin(task), timeout, Box::new(on_failure));
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
    /// [`Notification::EffectFailed`](super::Notification::EffectFailed)
    /// (a cancellation by an interrupt or a shutdown is); a task found to
    /// have already failed on its own (panicked, timed out) is published
    /// as that failure.
    ///
    /// Only the effects cancel one task: an event sent from a handle waits
    /// in the inbox while work is in flight (see the
    /// [ordering](super#ordering)), so it would arrive after the task it
    /// means to stop. From outside, [`interrupt`](super::MachineHandle::interrupt)
    /// cancels all of them.
    pub fn cancel_task(&mut self, key: &str) -> bool {
        let Some(work) = self.env.work.as_deref_mut() else {
            return false;
        };
        let cancelled = work.cancel(key);
        let found = !cancelled.is_empty();
        for produced in cancelled {
            self.owe(produced);
        }
        found
    }

    /// Queues what a task or stream the effects cancelled owes, after the
    /// current step.
    fn owe(&mut self, produced: super::work::Produced<M::Event>) {
        let Some(work) = self.env.work.as_deref_mut() else {
            return;
        };
        // A failure callback is user code; it runs here, inside `perform`'s
        // own `catch_unwind`.
        let event = match produced {
            super::work::Produced::Event(event) => Some(event),
            super::work::Produced::TaskFailed { key, on_failure, failure } => {
                // The task had already failed on its own (panicked, timed
                // out): that failure is not the effects' decision, and is
                // reported as any other.
                if failure != super::EffectFailure::Cancelled {
                    tracing::warn!(key = %key, failure = %failure, "effect failed");
                    let (k, f) = (key.clone(), failure.clone());
                    notice_subscribers(self.notifier, self.shared);
                    self.notifier.publish(super::Topics::FAULTS, || super::Notification::EffectFailed {
                        key: Some(k),
                        failure: f,
                    });
                }
                let owner = key.clone();
                Some(naming_the_owner(Some(&owner), || on_failure(key, failure)))
            }
            super::work::Produced::StreamFailed { key, on_failure, failure } => {
                naming_the_owner(key.as_deref(), || on_failure(failure))
            }
        };
        if let Some(event) = event {
            work.ready.push_back(super::work::Immediate { event, owed: true });
        }
    }

    /// Delivers `event` after `delay`, unless the machine has left its
    /// current state by then (the timer is then dropped) or the machine is
    /// interrupted or shut down first.
    ///
    /// A pending timer is work in flight: external events wait until it
    /// fires or its state is left (see the [module docs](super)), as suits
    /// a retry's backoff. In a state that waits for input with a deadline,
    /// use [`timeout`](Self::timeout), which lets input through.
    ///
    /// A delay of 30 years or more (`Duration::MAX`, or a
    /// [`RetryPolicy`](super::RetryPolicy) whose cap is that long) is taken
    /// to never come, as tokio's timer counts no further: such a timer is
    /// dropped, with a `debug` trace, and holds nothing back.
    pub fn after(&mut self, delay: Duration, event: M::Event) {
        self.add_timer("after", delay, true, event);
    }

    /// Delivers `event` after `delay` unless the machine leaves its current
    /// state first, like [`after`](Self::after), but lets external events
    /// through while it is pending: a wait for a reply with a deadline
    /// (`WaitingForHuman` + `Timeout`), where the reply that comes first
    /// leaves the state and so drops the timer. It does not keep the agent
    /// from being idle ([`wait_idle`](super::MachineHandle::wait_idle)
    /// answers while it is pending).
    ///
    /// ```
    /// # use agent_fsm::runtime::EffectContext;
    /// # use std::time::Duration;
    /// # #[derive(Debug)] enum Event { HumanReply(String), Timeout }
    /// # enum Action { AskHuman, Escalate }
    /// # fn perform<M: agent_fsm::StateMachine<Action = Action, Event = Event>>(action: Action, cx: &mut EffectContext<'_, M, ()>) {
    /// match action {
    ///     // The human's reply, sent through a handle, is delivered as soon
    ///     // as it comes; `Timeout` only if it has not come in 30 s.
    ///     Action::AskHuman => cx.timeout(Duration::from_secs(30), Event::Timeout),
    ///     Action::Escalate => {}
    /// }
    /// # }
    /// ```
    pub fn timeout(&mut self, delay: Duration, event: M::Event) {
        self.add_timer("timeout", delay, false, event);
    }

    fn add_timer(&mut self, what: &'static str, delay: Duration, holds: bool, event: M::Event) {
        let visit = self.visit;
        if !self.discarding(what)
            && let Some(work) = self.env.work()
        {
            work.add_timer(delay, visit, holds, event);
        }
    }

    /// Picks up the feed a first subscription made during this step (by
    /// these effects, say) created: what they publish after it reaches it.
    #[inline]
    fn notice_subscribers(&mut self) {
        notice_subscribers(self.notifier, self.shared);
    }

    /// Publishes `output` to subscribers as a
    /// [`Notification::Output`](super::Notification::Output), in order with
    /// the transitions. Free when nobody subscribed.
    pub fn output(&mut self, output: O) {
        self.notice_subscribers();
        self.notifier.publish(super::Topics::OUTPUT, || super::Notification::Output(output));
    }
}

/// [`EffectContext::notice_subscribers`], on the two fields it needs (the
/// caller may hold a borrow of the rest).
#[inline]
fn notice_subscribers<M: StateMachine, O>(notifier: &mut Notifier<M, O>, shared: &super::handle::Shared<M, O>) {
    if !notifier.attached() && shared.has_feed() {
        attach_feed(notifier, shared);
    }
}

#[cold]
fn attach_feed<M: StateMachine, O>(notifier: &mut Notifier<M, O>, shared: &super::handle::Shared<M, O>) {
    if let Some(feed) = shared.feed() {
        notifier.attach(feed);
    }
}

/// Runs a failure callback of the task or stream `key` for `cancel_task`;
/// if it panics, the panic goes on with the key in its message, so that
/// the worker's error (`EffectsPanicked` for the action being performed)
/// says whose callback it was.
fn naming_the_owner<T>(key: Option<&str>, callback: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(callback)) {
        Ok(value) => value,
        Err(payload) => {
            let owner = key.map_or_else(|| "a stream opened without a key".to_owned(), |k| format!("`{k}`"));
            let message = super::error::panic_message(&*payload);
            std::panic::resume_unwind(Box::new(format!("the `on_failure` of {owner} panicked: {message}")))
        }
    }
}
