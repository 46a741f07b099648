//! The runtime's public error enums, one per domain: sending an event
//! ([`SendError`]), any other request to the worker ([`RequestError`]), the
//! worker's own failure ([`WorkerError`]), a configuration that does not
//! fit its machine ([`ConfigError`], inside `WorkerError`), a replay that diverged
//! ([`ReplayError`]) and a subscription with nothing to read
//! ([`TryRecvError`]).
//!
//! A worker failure is stored once, behind an `Arc`, by the worker
//! ([`executor`](super::executor)) and handed out by every later handle call
//! ([`handle`](super::handle)), so `Failed` is always distinguishable from a
//! plain `Closed` (the worker stopped normally, or its future was dropped).
//!
//! The errors that come from a machine's worker are generic over the
//! machine `M`, and name its events, actions and states by kind
//! ([`EventKindOf<M>`](crate::EventKindOf) and the others), never by string.
//!
//! They convert toward the wider one, so that `?` keeps the cause: a
//! [`SendError`], a [`WorkerError`] (or the `Arc` the handles share) into a
//! [`RequestError`], and a [`ConfigError`] into a [`WorkerError`]. A
//! function that sends, calls and waits returns `Result<_, RequestError<M>>`:
//!
//! ```
//! # use agent_fsm::StateMachine;
//! # use agent_fsm::runtime::{MachineHandle, RequestError};
//! async fn turn<M: StateMachine + 'static>(handle: &MachineHandle<M, ()>, input: M::Event) -> Result<(), RequestError<M>>
//! where
//!     M::Event: Send + 'static,
//! {
//!     handle.send(input).await?; // a SendError, its worker failure kept
//!     handle.wait_idle().await
//! }
//! ```

use std::fmt;
use std::sync::Arc;

use crate::{ActionKindOf, EventKindOf, Kind, StateKindOf, StateMachine, Status};

/// Why the worker of machine `M` stopped abnormally. Stored once and
/// returned, shared, by every later call on any handle.
///
/// Its fields name events and actions by kind, so a test or a supervisor
/// matches them with the compiler's help:
/// `WorkerError::MachinePanicked { event: EventKind::UserInput, .. }`.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError<M: StateMachine> {
    /// Handling the event panicked: code of the table's rows (a guard, a
    /// block, a payload expression), a hand-written machine's
    /// `handle_event`, or the configured
    /// [`observer`](super::ExecutorConfig::observer). The machine is not
    /// touched again.
    #[error("the machine panicked while handling `{}`: {message}", event.name())]
    MachinePanicked {
        /// The event being handled.
        event: EventKindOf<M>,
        /// The panic payload, if it was a string.
        message: String,
    },
    /// Handling the event left the machine poisoned without a panic: its
    /// row's code left the row early (a macro of the user's that returns
    /// from it). The action returned is not performed, and the machine is
    /// not touched again.
    #[error("the machine was left poisoned while handling `{}`: its row's code left the row early", event.name())]
    MachinePoisoned {
        /// The event being handled.
        event: EventKindOf<M>,
    },
    /// The machine was poisoned before the worker started: a step of it
    /// failed before it was handed to [`spawn`](super::spawn) or
    /// [`pair`](super::pair). No event was handled.
    #[error("the machine was already poisoned when the worker started: a step failed before it was spawned")]
    SpawnedPoisoned,
    /// The effects panicked while performing an action, or a callback the
    /// effects registered (an `on_failure` closure) panicked.
    #[error("the effects panicked while performing `{performing}`{}: {message}", whose(key.as_deref(), *performing))]
    EffectsPanicked {
        /// The action being performed, or the failure callback.
        performing: Performing<ActionKindOf<M>>,
        /// For a failure callback run by the worker: the key of the task
        /// or stream it belongs to (`None` for a stream opened without
        /// one, and for an action).
        key: Option<String>,
        /// The panic payload, if it was a string.
        message: String,
    },
    /// The event's `Clone` panicked while the worker copied it into the
    /// event log ([`record_events`](super::ExecutorConfig::record_events)).
    /// The event was not handled.
    #[error("cloning `{}` for the event log panicked: {message}", event.name())]
    EventClonePanicked {
        /// The event being cloned.
        event: EventKindOf<M>,
        /// The panic payload, if it was a string.
        message: String,
    },
    /// A closure from the executor's configuration (the interrupt or
    /// shutdown event, or the observer's constructor) panicked.
    #[error("the configured `{callback}` callback panicked: {message}")]
    ConfigPanicked {
        /// Which callback, as its setter on
        /// [`ExecutorConfig`](super::ExecutorConfig) is named
        /// (`"interrupt_event"`, `"shutdown_event"`, `"observer"`).
        callback: &'static str,
        /// The panic payload, if it was a string.
        message: String,
    },
    /// The worker future was polled outside a tokio runtime, so it could not
    /// spawn tasks or start timers.
    #[error("the worker was polled outside a tokio runtime")]
    NoRuntime,
    /// The worker's tokio runtime has no time driver, so it could not start
    /// timers: build the runtime with `enable_time()` (or `enable_all()`).
    #[error("the worker's tokio runtime has timers disabled: build it with `enable_time()` or `enable_all()`")]
    NoTimers,
    /// The configuration does not fit the machine (see [`ConfigError`]).
    #[error("the executor's configuration does not fit the machine")]
    Config(#[from] ConfigError<M>),
    /// A durable agent's checkpoint store refused a step (a full disk, a
    /// second writer), or could not rebuild the agent when it started. The
    /// machine has moved past its store, so the agent stops; the store still
    /// holds its last good checkpoint, to spawn it again from.
    #[error("the checkpoint store failed: {0}")]
    Store(StoreFailure),
}

/// A checkpoint store's error inside a [`WorkerError`]: the store's own
/// error type (`agent_fsm::store::StoreError`, feature `store`) is reached
/// with [`StoreFailure::error`] and a downcast.
#[derive(Clone)]
pub struct StoreFailure(pub(crate) Arc<dyn std::error::Error + Send + Sync>);

impl StoreFailure {
    /// The store's error.
    #[must_use]
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl std::fmt::Debug for StoreFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for StoreFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&*self.0, f)
    }
}

/// Two failures are equal when they say the same (the store's errors are
/// not comparable themselves).
impl PartialEq for StoreFailure {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for StoreFailure {}

/// What the effects were running when they panicked
/// ([`WorkerError::EffectsPanicked`]): an action, by kind, or a failure
/// callback they registered. Displays as the action's name, or
/// `on_failure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Performing<A> {
    /// [`Effects::perform`](super::Effects::perform) on an action of this kind.
    Action(A),
    /// The `on_failure` closure of a task or stream, which the worker runs
    /// when the work fails.
    OnFailure,
}

impl<A: Kind> fmt::Display for Performing<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Action(kind) => f.write_str(kind.name()),
            Self::OnFailure => f.write_str("on_failure"),
        }
    }
}

/// A configuration that does not fit its machine `M`. Found before the
/// worker's first step (no event is handled), except where a variant
/// says otherwise, and reported as [`WorkerError::Config`] by every
/// handle call.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError<M: StateMachine> {
    /// The configured
    /// [`interrupt_event`](super::ExecutorConfig::interrupt_event) has no
    /// unguarded row, and no `=> ignore`, in these states: an interrupt
    /// there would cancel the work in flight and leave the machine where
    /// nothing moves it on.
    #[error(
        "the interrupt event `{}` has no unguarded row (nor `=> ignore`) in {}: an interrupt there would leave \
         the agent waiting with nothing in flight; add the rows (a `*` row covers every state)",
        event.name(),
        list(states)
    )]
    InterruptEventUnhandled {
        /// The interrupt event.
        event: EventKindOf<M>,
        /// The states without a row for it, in declaration order.
        states: Vec<StateKindOf<M>>,
    },
    /// The interrupt event's closure built an event of another kind than
    /// the one configured (found at the interrupt, which then fails the
    /// worker).
    #[error(
        "the interrupt event was configured as `{}`, but its closure built a `{}`",
        configured.name(),
        built.name()
    )]
    InterruptEventMismatch {
        /// The configured kind.
        configured: EventKindOf<M>,
        /// The built event's kind.
        built: EventKindOf<M>,
    },
}

/// `A`, `A and B`, `A, B and C`, each in backquotes.
fn list<K: Kind>(kinds: &[K]) -> String {
    let quoted: Vec<String> = kinds.iter().map(|k| format!("`{}`", k.name())).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// Sending an event to machine `M` failed; the event is handed back.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum SendError<M: StateMachine> {
    /// The worker has stopped (shutdown, terminal state or dropped worker);
    /// nothing will handle the event.
    #[error("the machine's worker has stopped")]
    Closed(M::Event),
    /// Only from [`try_send`](super::MachineHandle::try_send): the bounded
    /// inbox is full right now.
    #[error("the machine's inbox is full")]
    Full(M::Event),
    /// The worker failed earlier; every later call reports the same cause.
    #[error("the machine's worker failed")]
    Failed(M::Event, #[source] Arc<WorkerError<M>>),
}

impl<M: StateMachine> SendError<M> {
    /// The event that was not sent.
    pub fn into_event(self) -> M::Event {
        match self {
            Self::Closed(event) | Self::Full(event) | Self::Failed(event, _) => event,
        }
    }
}

/// A request to the worker of machine `M` (a query, an interrupt, a wait)
/// failed.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum RequestError<M: StateMachine> {
    /// The worker is gone without an answer to this request: it stopped
    /// normally and the request needs a running worker (an interrupt, a
    /// wait for idle), or its future was dropped before it finished, so
    /// not even the final machine is left to
    /// [`inspect`](super::MachineHandle::inspect).
    #[error("the machine's worker has stopped")]
    Closed,
    /// The worker failed earlier; every later call reports the same cause.
    #[error("the machine's worker failed")]
    Failed(#[source] Arc<WorkerError<M>>),
    /// The machine is poisoned, so it has no state to report.
    #[error("the machine is poisoned")]
    Poisoned,
    /// The closure passed to [`inspect`](super::MachineHandle::inspect)
    /// panicked; the worker caught it and carries on.
    #[error("the inspect closure panicked: {0}")]
    InspectPanicked(String),
    /// [`interrupt`](super::MachineHandle::interrupt) on an agent whose
    /// configuration has no
    /// [`interrupt_event`](super::ExecutorConfig::interrupt_event): nothing
    /// was cancelled, the agent goes on as it was.
    #[error("the machine has no interrupt event configured, so it cannot be interrupted")]
    NoInterruptEvent,
    /// Only from a [`SendError::Full`] converted into a request error:
    /// the inbox had no room.
    #[error("the machine's inbox is full")]
    Full,
}

/// A failed worker, as any request reports it.
impl<M: StateMachine> From<Arc<WorkerError<M>>> for RequestError<M> {
    fn from(error: Arc<WorkerError<M>>) -> Self {
        Self::Failed(error)
    }
}

impl<M: StateMachine> From<WorkerError<M>> for RequestError<M> {
    fn from(error: WorkerError<M>) -> Self {
        Self::Failed(Arc::new(error))
    }
}

/// A failed send as a request error, for code that sends and then waits
/// or queries in one function (`handle.send(e).await?; handle.wait_idle().await?`).
/// The event is dropped; keep [`SendError::into_event`] to retry it.
impl<M: StateMachine> From<SendError<M>> for RequestError<M> {
    fn from(error: SendError<M>) -> Self {
        match error {
            SendError::Closed(_) => Self::Closed,
            SendError::Full(_) => Self::Full,
            SendError::Failed(_, cause) => Self::Failed(cause),
        }
    }
}

/// Why [`Subscription::try_recv`](super::Subscription::try_recv) returned
/// no notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TryRecvError {
    /// Nothing to read right now; more may come.
    #[error("no notification is ready")]
    Empty,
    /// The worker has exited and every notification was read: nothing
    /// more will come.
    #[error("the machine's worker has stopped and every notification was read")]
    Closed,
}

/// Replaying an event log into a fresh machine did not reproduce the
/// recorded run of machine `M` (see [`replay`](super::replay)).
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError<M: StateMachine> {
    /// The event at `index` produced another action or state than recorded.
    #[error(
        "replay diverged at event {index}: recorded `{}` into `{}`, replayed `{}` into `{}`",
        expected_action.name(),
        status_name(*expected_state),
        actual_action.name(),
        status_name(*actual_state)
    )]
    Diverged {
        /// Position of the event in the log.
        index: usize,
        /// The recorded action.
        expected_action: ActionKindOf<M>,
        /// The replayed action.
        actual_action: ActionKindOf<M>,
        /// The recorded state after the event.
        expected_state: Status<StateKindOf<M>>,
        /// The replayed state after the event.
        actual_state: Status<StateKindOf<M>>,
    },
}

/// A status's name for [`ReplayError`]'s message.
fn status_name<S: Kind>(status: Status<S>) -> &'static str {
    match status {
        Status::In(kind) => kind.name(),
        Status::Poisoned => "(poisoned)",
    }
}

/// Drops `value` under `catch_unwind`: user code in its `Drop` (a stream,
/// the effects, an observer) must not unwind through the worker. Returns
/// the panic's message, if it panicked.
pub(crate) fn drop_caught<T>(value: T) -> Option<String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(value)))
        .err()
        .map(|payload| panic_message(&*payload))
}

pub(crate) use crate::panics::panic_message;

impl<M: StateMachine> WorkerError<M> {
    /// Whether the machine's own step failed (a panic inside it, or a
    /// row left halfway, now or before it was spawned): the machine reads
    /// as poisoned from then on.
    pub(crate) fn is_step_failure(&self) -> bool {
        matches!(self, Self::MachinePanicked { .. } | Self::MachinePoisoned { .. } | Self::SpawnedPoisoned)
    }
}

/// " of `key`" for a failure callback, so that the error says which of
/// several tasks it was; nothing for an action.
fn whose<A>(key: Option<&str>, performing: Performing<A>) -> String {
    match (key, performing) {
        (Some(key), _) => format!(" of `{key}`"),
        (None, Performing::OnFailure) => " of a stream opened without a key".to_owned(),
        (None, Performing::Action(_)) => String::new(),
    }
}

#[cfg(test)]
mod tests;
