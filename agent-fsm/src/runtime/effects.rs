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
//! | a stream that must be awaited first (a request sent, then its reply streamed) | [`open_stream`](EffectContext::open_stream), [`open_stream_keyed`](EffectContext::open_stream_keyed) |
//! | concurrent keyed tasks, one event each (tool calls) | [`spawn_task`](EffectContext::spawn_task) |
//! | an event after a time limit, input let through (a reply window) | [`deadline`](EffectContext::deadline) |
//! | an event after a delay, input held back (a retry's backoff) | [`pause`](EffectContext::pause) |
//! | an event after a delay, as the table says (`#[deadline]` or not) | [`timer`](EffectContext::timer) |
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
use super::task::{EffectFailure, TaskOptions, opened};
use super::work::Work;
use crate::{ActionKindOf, Kind, Kinded, StateMachine};

mod tasks;

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
///     Action::ScheduleRetry { attempt } => cx.pause(this.retry.delay(attempt), Event::RetryTimeoutFired),
///     Action::DisplayMessage(text) => cx.output(text),
///     Action::WaitForInput => {}
/// }
/// # }
/// ```
///
/// # Effects that must await
/// `perform` is synchronous on purpose: the worker calls it for every
/// action, and a future per action (boxed, polled, dropped) would cost
/// every event, most of whose actions schedule nothing. What must await is
/// scheduled instead, and runs as work in flight, under the action's
/// timeouts and cancellable by key:
/// - one result after awaiting: [`spawn_task`](EffectContext::spawn_task);
/// - a stream that can only be had by awaiting (send the request, read the
///   status, then stream the body): [`open_stream`](EffectContext::open_stream),
///   which awaits the opening future on the worker, as the stream's first
///   poll, and then reads the stream it gives; its timeout counts from the
///   call, so a server that never answers times out like one that stops
///   streaming;
/// - several events from awaiting code: a stream built from it
///   (`futures::stream::unfold`, or a channel's receiver).
///
/// ```
/// use agent_fsm::runtime::{EffectContext, EffectFailure};
/// use futures::Stream;
/// # #[derive(Debug)] enum Event { Delta(String), Failed(String) }
/// # enum Action { CallLlm }
/// # struct Client;
/// # impl Client {
/// #     async fn send(self: std::sync::Arc<Self>) -> Result<impl Stream<Item = Event> + Send + 'static, String> {
/// #         Ok(futures::stream::iter([Event::Delta("hi".into())]))
/// #     }
/// # }
/// # fn perform<M: agent_fsm::StateMachine<Action = Action, Event = Event>>(
/// #     client: std::sync::Arc<Client>, action: Action, cx: &mut EffectContext<'_, M, ()>) {
/// match action {
///     Action::CallLlm => cx.open_stream_keyed(
///         "llm",
///         // Awaited on the worker before the first item: no task of its own.
///         async move { client.send().await.map_err(Event::Failed) },
///         |failure: EffectFailure| Some(Event::Failed(failure.to_string())),
///     ),
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
            work.push_ready(event, false);
        }
    }

    /// A deadline: delivers `event` after `delay` unless the machine
    /// leaves its current state first, and lets external events through
    /// while it is pending. This is the timer of a reply window
    /// (`WaitingForHuman` + `Timeout`): the reply sent through a handle is
    /// delivered as soon as it comes, and if its row leaves the state, the
    /// deadline is cancelled with the state (its event is never delivered).
    /// A reply whose row keeps the state (a self-transition) keeps the
    /// deadline too. A pending deadline does not keep the agent from being
    /// idle ([`wait_idle`](super::MachineHandle::wait_idle) answers while
    /// it is pending).
    ///
    /// A timer cannot be cancelled or moved by itself: arming another adds
    /// one. A window that starts again on every self-transition (a stream
    /// that has stalled if no delta came for 30 s) arms one deadline per
    /// delta, and each fires unless the state was left. Stamp the event
    /// with what it waits for (a count of deltas kept in the state, say)
    /// and let the row that takes it check, in its guard, that nothing
    /// came since; the stale ones are then refused like any event the
    /// state does not take.
    ///
    /// To hold input back until the timer fires (a retry's backoff), use
    /// [`pause`](Self::pause).
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
    ///     Action::AskHuman => cx.deadline(Duration::from_secs(30), Event::Timeout),
    ///     Action::Escalate => {}
    /// }
    /// # }
    /// ```
    ///
    /// A delay of 30 years or more (`Duration::MAX`) is taken to never
    /// come, as tokio's timer counts no further: such a timer is dropped,
    /// with a `debug` trace.
    pub fn deadline(&mut self, delay: Duration, event: M::Event) {
        self.add_timer("deadline", delay, false, event);
    }

    /// A pause: delivers `event` after `delay`, and until then holds every
    /// external event back, as work in flight does (see the
    /// [module docs](super)). This is the timer of a retry's backoff: no
    /// input is taken while the agent waits to try again. It is dropped if
    /// the machine leaves its current state first (a step of an effect's
    /// own event, since external ones wait), or is interrupted or shut down.
    ///
    /// Not for a state that waits for input with a time limit: there a
    /// pause holds the input it waits for until the limit has passed. Use
    /// [`deadline`](Self::deadline), which lets input through.
    ///
    /// A delay of 30 years or more (`Duration::MAX`, or a
    /// [`RetryPolicy`](super::RetryPolicy) whose cap is that long) is taken
    /// to never come, as tokio's timer counts no further: such a timer is
    /// dropped, with a `debug` trace, and holds nothing back.
    ///
    /// For an event the table marks `#[deadline]`, the table's word wins:
    /// the timer lets input through, as a [`deadline`](Self::deadline)
    /// would, with a `warn` trace (a pause there would hold back the reply
    /// the deadline waits for).
    pub fn pause(&mut self, delay: Duration, event: M::Event) {
        let holds = !is_deadline::<M>(&event);
        if !holds {
            tracing::warn!(
                event = Kind::name(event.kind()),
                "a pause of an event the table marks `#[deadline]`: taken as a deadline, input is let through"
            );
        }
        self.add_timer("pause", delay, holds, event);
    }

    /// A timer that does what the table says of `event`: a
    /// [`deadline`](Self::deadline) (input let through) if the table
    /// marks it `#[deadline]`, a [`pause`](Self::pause) (input held back)
    /// otherwise. With the marks in the table, effects arm every timer this
    /// way and cannot pick the wrong kind.
    ///
    /// ```
    /// # use agent_fsm::runtime::EffectContext;
    /// # use std::time::Duration;
    /// # #[agent_fsm::state_machine(fallback = Escalate)]
    /// # mod desk {
    /// #     #[states] pub enum State { #[initial] Waiting, #[terminal] Done }
    /// #     #[events]
    /// #     pub enum Event {
    /// #         HumanReply(String),
    /// #         #[deadline]
    /// #         Timeout,
    /// #         RetryFired,
    /// #     }
    /// #     #[actions] pub enum Action { AskHuman, Retry, Escalate }
    /// #     transitions! {
    /// #         Waiting + HumanReply(_) => Done / Escalate,
    /// #         Waiting + Timeout => Done / Escalate,
    /// #         Waiting + RetryFired => Waiting / AskHuman,
    /// #     }
    /// # }
    /// # use desk::{Action, Event};
    /// # fn perform(action: Action, cx: &mut EffectContext<'_, desk::Machine, ()>) {
    /// match action {
    ///     // `Timeout` is marked `#[deadline]`: the reply is delivered as
    ///     // soon as it comes.
    ///     Action::AskHuman => cx.timer(Duration::from_secs(30), Event::Timeout),
    ///     // `RetryFired` is not: input waits for it.
    ///     Action::Retry => cx.timer(Duration::from_secs(2), Event::RetryFired),
    ///     Action::Escalate => {}
    /// }
    /// # }
    /// ```
    ///
    /// Which one it is is looked up when the timer is armed, never per
    /// event.
    pub fn timer(&mut self, delay: Duration, event: M::Event) {
        let holds = !is_deadline::<M>(&event);
        self.add_timer("timer", delay, holds, event);
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

/// Whether the table marks `event` `#[deadline]` (a scan of a list that
/// is empty for most machines, made only when a timer is armed).
fn is_deadline<M: StateMachine>(event: &M::Event) -> bool {
    !M::DEADLINES.is_empty() && M::DEADLINES.contains(&event.kind())
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
