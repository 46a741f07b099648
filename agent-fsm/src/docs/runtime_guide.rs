//! The runtime guide: how the worker of [`runtime`](crate::runtime) runs a
//! machine, its effects and the work they start, and what a handle's
//! requests do meanwhile. The [runtime module](crate::runtime) shows the
//! pieces at work; this page is the rules they keep.
//!
//! A machine runs on one *worker* task that owns it and the user's
//! [`Effects`]; the rest of the program talks to it through cloneable
//! [`MachineHandle`]s. The machine stays synchronous and pure: the worker
//! feeds it one event at a time, hands each returned action to
//! [`Effects::perform`], and turns the work that schedules (streams, tasks,
//! timers) back into events.
//!
//! | section | what it answers |
//! | --- | --- |
//! | [Ordering](#ordering) | in what order events reach `handle_event`, and when input sent through a handle is let in |
//! | [Status and notifications](#status-and-notifications) | when `status`, `steps` and subscribers see a step |
//! | [Tracing](#tracing) | the span each event is handled in |
//! | [Tasks and timers](#tasks-and-timers) | concurrency limits, timeouts, cancellation, and the two kinds of timer |
//! | [Cancellation: interrupt](#cancellation-interrupt) | what an interrupt cancels and delivers |
//! | [Shutdown](#shutdown) | how a worker stops, and what the handles read afterwards |
//! | [Snapshots](#snapshots) | when to take one |
//! | [Failure](#failure) | what a panic in the machine or the effects does |
//!
//! What the rest of the crate promises is on the
//! [guarantees](super::guarantees) page.
//!
//! An interrupt, for instance, is carried out between two steps: the tool
//! still running is cancelled and still answers, then the interrupt event
//! comes.
//!
//! ```
//! use agent_fsm::runtime::{EffectContext, EffectFailure, ExecutorConfig, from_fn, spawn};
//! use std::time::Duration;
//!
//! #[agent_fsm::state_machine(fallback = Nothing)]
//! mod agent {
//!     #[states]
//!     #[carry(log: Vec<String>)]
//!     #[derive(Debug, Clone, PartialEq)]
//!     pub enum State {
//!         #[initial]
//!         Idle,
//!         Running,
//!     }
//!     #[events]
//!     #[derive(Debug, Clone)]
//!     pub enum Event { Go, ToolDone(String), Interrupted(String) }
//!     #[actions]
//!     #[derive(Debug)]
//!     pub enum Action { Nothing, RunTool }
//!     transitions! {
//!         Idle + Go => Running / RunTool,
//!         Running + ToolDone(result) => { log.push(result); } Idle / Nothing,
//!         // The interrupt event, handled in every state the agent can rest in.
//!         * + Interrupted(cause) => { log.push(cause); } Idle / Nothing,
//!     }
//! }
//! use agent::{Action, Event, EventKind, Machine, State};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let effects = from_fn(|action, cx: &mut EffectContext<'_, Machine, ()>| {
//!     if let Action::RunTool = action {
//!         cx.spawn_task(
//!             "slow-tool",
//!             async {
//!                 tokio::time::sleep(Duration::from_secs(600)).await;
//!                 Event::ToolDone("done".into())
//!             },
//!             |key, why: EffectFailure| Event::ToolDone(format!("{key}: {why}")),
//!         );
//!     }
//! });
//! let config = ExecutorConfig::new().interrupt_event(EventKind::Interrupted, |cause| Event::Interrupted(cause.into()));
//! let handle = spawn(Machine::new(), effects, config);
//!
//! handle.call(Event::Go).await?; // handled, and the tool started
//! handle.interrupt("the user pressed Esc").await?;
//! handle.wait_idle().await?;
//! let log = vec!["slow-tool: cancelled".to_owned(), "the user pressed Esc".to_owned()];
//! assert_eq!(handle.state().await?, State::Idle { log });
//! # Ok(())
//! # }
//! ```
//!
//! # Ordering
//! There is one path into `handle_event`, so events never race:
//!
//! 1. **Immediate events** ([`EffectContext::send`]) are delivered right
//!    after the step whose action sent them, in call order, before
//!    anything else, depth first: what the step of a sent event sends
//!    comes before the earlier sends still waiting, so each is taken in
//!    the state its own step left. A chain of sends that never ends (an
//!    action whose send leads back to it) is still stopped: each time the
//!    chain's own steps have sent 1,024 more events, the worker serves a
//!    waiting control request (point 4) or its cancellation token, or
//!    yields to the other tasks of its thread. What one action sends at
//!    once, however much, is delivered as one burst. An interrupt or a
//!    shutdown served at such a pause cuts the chain: the sent events
//!    still waiting are dropped (a `debug` trace counts them), while a
//!    result still owed by a task or stream the effects cancelled
//!    ([`cancel_task`](EffectContext::cancel_task)) is delivered first.
//! 2. **Effect events** — stream items, task results, fired timers — are
//!    delivered in the order the worker sees them arrive. Items of one
//!    stream keep their order. Task results arrive in *completion* order,
//!    not spawn order (a machine that needs call order, such as tool
//!    messages for an LLM, orders them itself, by key). When several are
//!    ready at the same poll the worker takes timers, then tasks, then
//!    streams. Open streams take turns, so one that is always ready
//!    starves no other, and every stream's timeout is checked before its
//!    items: a stream that is always ready still times out, and an item
//!    due at the deadline's very instant comes too late. A task is held to
//!    the same rule: one that finishes at or after its deadline (one that
//!    blocked its thread past it, say) has timed out, whatever it returned.
//!    A task's result is ready only once the task itself has run
//!    on its own tokio task, so a task and a stream item due at the same
//!    instant may come in either order.
//! 3. **External events** ([`MachineHandle::send`], [`try_send`](MachineHandle::try_send),
//!    [`call`](MachineHandle::call)) wait in a bounded inbox and are
//!    delivered, in the order received, only when *no effect work is in
//!    flight*: no open stream, no running or queued task, no pending
//!    [`pause`](EffectContext::pause) timer. So user input sent while
//!    tools run is delivered after every tool result, never interleaved
//!    and never dropped. A pause holds the inbox back until it
//!    fires or its state is left (right for a retry's backoff); a
//!    [`deadline`](EffectContext::deadline) lets it through, for a
//!    state that waits for input with a deadline ("nudge the user after
//!    60 s" must not delay the user's reply). The table can say which: a
//!    timer of an event marked `#[deadline]` is a deadline whether
//!    [`timer`](EffectContext::timer) or [`pause`](EffectContext::pause)
//!    armed it, and `timer` arms a pause for the rest. A stream that never ends
//!    holds the inbox back for good: give streams a timeout.
//!
//!    **Input during work.** The events the table marks `#[during_work]`
//!    (on the variant of its `#[events]` enum), or the configuration lists
//!    ([`ExecutorConfig::during_work`]), are the exception: while effect
//!    work is in flight they are delivered from the inbox as they arrive,
//!    in order with the effect events (the worker takes effect work first
//!    when both are ready at one poll). A message typed while three tools
//!    run reaches the machine between their results. To reach such an
//!    event, the worker takes the events in the inbox before it and holds
//!    them back, in order, until the work is done; they are then
//!    delivered first, before anything received later (an interrupt, which
//!    ends the work, lets them through too). So a marked event overtakes
//!    the unmarked ones sent before it, never another marked one. At most
//!    [`inbox_capacity`](ExecutorConfig::inbox_capacity) events are held
//!    back; past that the inbox is not read until the work ends, and
//!    senders wait on it as before.
//!
//!    A consequence: an effect's task or stream must never wait on its own
//!    agent's handle ([`call`](MachineHandle::call),
//!    [`wait_idle`](MachineHandle::wait_idle), or
//!    [`send`](MachineHandle::send) on a full inbox). It is itself work in
//!    flight, so the inbox is not read while it waits (or, for a
//!    `#[during_work]` event, not past the events held back): it waits
//!    forever.
//!    Report progress with the events the task returns or the stream
//!    yields instead.
//! 4. **Control requests** (interrupt, shutdown, [`state`](MachineHandle::state),
//!    [`inspect`](MachineHandle::inspect), waits) bypass the inbox and are
//!    served between two steps, ahead of effect and external events; a
//!    chain of immediate events (point 1) runs first, up to one of its
//!    pauses.
//!
//! # Status and notifications
//! [`MachineHandle::status`] and [`MachineHandle::steps`] read a status
//! the worker publishes when it pauses, before it serves any request or
//! reply, and every 64 events of a long burst, so they are current whenever
//! a `call`, `interrupt`, `wait_idle` or query returns. The
//! [`Notification`]s for subscribers are handed over on the same schedule,
//! in one batch, in order, and also whenever the buffer holds
//! [`notification_capacity`](ExecutorConfig::notification_capacity) of
//! them; on a current-thread runtime a subscriber never runs before they
//! are there. A batch that wakes a waiting subscriber makes the worker
//! yield to it before its next input, with the status published first (a
//! subscriber that reads `status` or `steps` as it takes the batch
//! finds every transition in it counted), so a subscriber task waiting in
//! [`recv`](Subscription::recv) on the worker's current-thread runtime
//! never lags unless one step publishes more than the capacity (a reader
//! on another thread gets no such promise: it needs a log as big as the
//! bursts it follows). A reader task just spawned is not waiting yet: let
//! it start (`tokio::task::yield_now().await`) before sending the input
//! it is to follow. A subscription names its [`Topics`]
//! ([`subscribe_to`](MachineHandle::subscribe_to)); a notification no live
//! subscription wants is never built. Notifications name states, events
//! and actions by kind; a subscription made with
//! [`subscribe_with_states`](MachineHandle::subscribe_with_states) also
//! receives the whole state after each step a row accepted
//! ([`Notification::State`]). The history's timestamps are read on the
//! same schedule too (once per burst): the hops of one burst share a
//! timestamp. All of this keeps locks, wake-ups and clock reads off the
//! per-event path.
//!
//! An [`Observer`](crate::Observer) attached with
//! [`ExecutorConfig::observer`] is different: it is called synchronously,
//! inside each step, on every hop and refused event, before the step's
//! action is performed; it costs one call per hop and no other task, so it
//! suits metrics and logs. Subscriptions suit consumers on other tasks (a
//! UI).
//!
//! # Tracing
//! Every event is delivered inside a `debug` span named `step`, with the
//! fields `machine`, `agent` (set with [`ExecutorConfig::agent_id`]),
//! `event` (its name) and `step` (its number). The tasks and streams the
//! step's action starts run inside that span: a task is instrumented with
//! it ([`tracing::Instrument`]), and a stream is polled inside it. So what
//! a tool logs names the agent and the step that started it, even after
//! the machine has moved on.
//!
//! # Tasks and timers
//! Tasks run on the configured [`TaskTracker`](tokio_util::task::TaskTracker),
//! at most [`concurrency_limit`](ExecutorConfig::concurrency_limit) at once
//! per agent (agents spawned from one configuration each get that many;
//! later ones wait, in spawn order; a limit of 1 runs them one by one),
//! each with its own timeout (counted from when it starts) and its own
//! cancellation. A task that panics, times out or is cancelled yields its
//! `on_failure(key, why)` event, for that task only: every task yields
//! exactly one event.
//!
//! Cancelling a task is tokio's abort, which takes effect at the task's
//! next `.await`: one in the middle of blocking work (a computation, a
//! synchronous call) runs on to the end of that stretch, whose side
//! effects happen, although its result is dropped and the machine has
//! already heard `Cancelled`. It keeps its concurrency slot until it has
//! stopped, so the limit holds for the tasks actually running; a task
//! that never reaches an `.await` again keeps its slot for good. Blocking
//! work awaited through `tokio::task::spawn_blocking` lets the task stop
//! at once (the blocking call itself still runs to its end).
//!
//! There are two timers, named for what they do with input meanwhile: a
//! [`deadline`](EffectContext::deadline) lets external events through (a
//! reply window: the reply is applied as soon as it comes), a
//! [`pause`](EffectContext::pause) holds them back until it fires (a
//! retry's backoff). The table has no mark of its own for deadline events:
//! whether input may pass is decided where the timer is set, in one word
//! (`cx.pause(window, Event::Timeout)` in a state that waits for a reply
//! reads wrong), and the same event can serve both (a `Timeout` that ends a
//! backoff in one state and a reply window in another).
//!
//! A timer belongs to the *visit* of the state
//! it was set in: the worker counts changes of state (self-transitions do
//! not count), and a timer whose state was left before it fired is
//! dropped. So a deadline whose reply came in time is cancelled with the
//! state the reply left: its event is never delivered, and a late one
//! cannot reach a later visit of the same state.
//! A hop through a transient state counts, even one that comes back to
//! the same state (`Waiting → Checking → Waiting`): the state was left,
//! so a backoff timer set in it is gone. Keep such a check out of states
//! that wait on a timer, or set the timer again in the row that returns.
//!
//! Streams and tasks, on the contrary, outlive the state that started
//! them: a stream is read until it ends, times out or is cancelled, and a
//! task runs until it returns, whatever the machine does meanwhile. An
//! action that abandons one (a retry while the failed stream is still
//! open) cancels it by key ([`EffectContext::stream_keyed`],
//! [`EffectContext::cancel_task`]), so that nothing of it reaches the next
//! attempt.
//!
//! # Cancellation: interrupt
//! [`MachineHandle::interrupt`] is a protocol, carried out between two steps:
//! open streams are dropped (items already delivered stay delivered) and
//! yield their `on_failure(Cancelled)` event if they have one; every
//! running or queued task is cancelled and yields `on_failure(key,
//! Cancelled)`, in spawn order, so every pending call gets a result (but
//! for the tasks spawned with [`TaskOptions::survive_interrupt`], which
//! run on and deliver their result when it comes, after the interrupt
//! event: the tool that should finish through an interrupt); timers
//! are dropped; the cause is recorded; then the configured interrupt event
//! is delivered. The actions returned by the cancellation events are *not
//! performed* — an interrupt starts no new work except what the machine
//! asks for in response to the interrupt event itself. Queued external
//! events stay queued.
//!
//! So a cancelled tool's failure may move the machine to a state whose
//! work (the next model call) nobody started, and only the interrupt event
//! can move it on. An interrupt therefore needs one
//! ([`ExecutorConfig::interrupt_event`]), and the table must handle it in
//! every state the machine can rest in (a row without guard, a `*` row, or
//! an `=> ignore` for a state that waits for input): the worker checks
//! this before its first step and fails with
//! [`ConfigError::InterruptEventUnhandled`] otherwise, handling no event.
//! An agent configured without an interrupt event cannot be interrupted:
//! [`interrupt`](MachineHandle::interrupt) answers
//! [`RequestError::NoInterruptEvent`] and cancels nothing (shutdown still
//! stops it).
//!
//! # Shutdown
//! The worker stops on [`MachineHandle::shutdown`] (or the configured
//! cancellation token), when the machine enters a terminal state, or when
//! every handle is dropped and nothing is left in flight. Dropping the
//! handles cancels nothing: the work in flight finishes first (pending
//! timers of both kinds fire), so a stream or task that never ends, or a
//! state that sets a timer again each time one fires, keeps the worker
//! alive. Give streams and tasks
//! timeouts, or stop agents with [`shutdown`](MachineHandle::shutdown) or
//! a token ([`ExecutorConfig::cancel_on`]). In every case:
//!
//! 1. in-flight work is cancelled as for an interrupt, its events
//!    delivered, their actions not performed;
//! 2. on shutdown, the configured shutdown event is delivered and its action
//!    performed as a *final* action (as is the action that entered a
//!    terminal state): it may publish outputs, but any work it schedules is
//!    discarded;
//! 3. the inbox is closed (later sends fail with [`SendError::Closed`]) and
//!    the events already queued are delivered, without performing their
//!    actions, so no accepted event is silently lost;
//! 4. every cancelled task is awaited, then the worker exits:
//!    [`MachineHandle::wait_finished`] returns the final state and no task
//!    of the machine is left running;
//! 5. the worker leaves the machine and its history to the handles:
//!    [`state`](MachineHandle::state), [`inspect`](MachineHandle::inspect),
//!    [`history`](MachineHandle::history) and
//!    [`with_history`](MachineHandle::with_history) go on answering with
//!    the final machine (and the event log, which reproduces the run),
//!    while sends fail with [`SendError::Closed`] and `call`, `interrupt`
//!    and `wait_idle` with [`RequestError::Closed`].
//!
//! # Snapshots
//! A snapshot (the `serde` feature) holds the machine's state and context,
//! not the streams, tasks and timers in flight: resumed from a snapshot
//! taken mid-work, a machine waits for events that nothing will produce.
//! Take one when the agent is idle: [`wait_idle`](MachineHandle::wait_idle),
//! then [`inspect`](MachineHandle::inspect).
//!
//! # Failure
//! Nothing in the executor panics on bad input. If the machine or the
//! effects panic (a broken contract), the event's `Clone` does while
//! the event log copies it, or a row's code leaves the row early without
//! a panic (a macro of the user's that returns, which poisons the
//! machine), the worker stores a [`WorkerError`] once,
//! aborts its tasks and exits; every later call on any handle returns
//! that error (`Failed`), which is distinct from `Closed` (the worker
//! stopped normally), and so does the `call` whose event caused it. A
//! panic in the `Drop` of the effects, the observer or a stream is caught
//! and logged (a stream's, at its normal end, is that stream's failure);
//! it never unwinds through the worker's future.

// The links of the text above name the runtime's items as the runtime
// module's own page did, so the text reads the same in both places. Used
// only by those links, which rustc does not count as uses.
#[allow(unused_imports)]
use crate::runtime::{
    ConfigError, EffectContext, Effects, ExecutorConfig, MachineHandle, Notification, RequestError, SendError,
    Subscription, TaskOptions, Topics, WorkerError,
};
