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

/// The text of a panic payload, for error messages.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

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
mod tests {
    use super::{ConfigError, Performing, ReplayError, RequestError, SendError, WorkerError};
    use crate::{Status, state_machine};
    use std::sync::Arc;

    // Only some variants are built here.
    #[allow(dead_code, unreachable_pub)]
    #[state_machine(fallback = Nothing)]
    mod lights {
        #[states]
        pub enum State {
            #[initial]
            Red,
            Amber,
            Green,
        }
        #[events]
        pub enum Event {
            Go,
            Stop,
        }
        #[actions]
        pub enum Action {
            Honk,
            Nothing,
        }
        transitions! {
            Red + Go => Green / Nothing,
            Green + Stop => Amber / Nothing,
            Amber + Go => Red / Honk,
        }
    }
    use lights::{ActionKind, Event, EventKind, Machine, StateKind};

    /// `?` on a send keeps why it failed, the shared worker failure
    /// included; a configuration error is a worker failure.
    #[test]
    fn errors_convert_toward_the_request_error_and_keep_their_cause() {
        let failure = Arc::new(WorkerError::<Machine>::NoTimers);
        let failed = RequestError::from(SendError::Failed(Event::Go, Arc::clone(&failure)));
        assert!(matches!(&failed, RequestError::Failed(e) if Arc::ptr_eq(e, &failure)));
        assert_eq!(RequestError::from(SendError::<Machine>::Closed(Event::Go)), RequestError::Closed);
        assert_eq!(RequestError::from(SendError::<Machine>::Full(Event::Go)), RequestError::Full);
        assert_eq!(
            RequestError::from(WorkerError::<Machine>::NoRuntime),
            RequestError::Failed(Arc::new(WorkerError::NoRuntime))
        );
        assert!(
            matches!(RequestError::from(Arc::clone(&failure)), RequestError::Failed(e) if Arc::ptr_eq(&e, &failure))
        );
        assert!(matches!(SendError::<Machine>::Full(Event::Stop).into_event(), Event::Stop));
        let config =
            ConfigError::<Machine>::InterruptEventMismatch { configured: EventKind::Stop, built: EventKind::Go };
        let worker = WorkerError::from(config.clone());
        assert_eq!(worker, WorkerError::Config(config.clone()));
        let source = std::error::Error::source(&worker).map(ToString::to_string);
        assert_eq!(
            source,
            Some("the interrupt event was configured as `Stop`, but its closure built a `Go`".to_owned())
        );
    }

    /// The messages name each kind as the table writes it.
    #[test]
    fn messages_name_the_kinds() {
        let panicked = WorkerError::<Machine>::MachinePanicked { event: EventKind::Go, message: "boom".to_owned() };
        assert_eq!(panicked.to_string(), "the machine panicked while handling `Go`: boom");
        let poisoned = WorkerError::<Machine>::MachinePoisoned { event: EventKind::Stop };
        assert!(poisoned.to_string().starts_with("the machine was left poisoned while handling `Stop`:"));
        let clone = WorkerError::<Machine>::EventClonePanicked { event: EventKind::Go, message: "no".to_owned() };
        assert_eq!(clone.to_string(), "cloning `Go` for the event log panicked: no");
        let effects = |performing, key: Option<&str>| WorkerError::<Machine>::EffectsPanicked {
            performing,
            key: key.map(str::to_owned),
            message: "bad".to_owned(),
        };
        let action = effects(Performing::Action(ActionKind::Honk), None);
        assert_eq!(action.to_string(), "the effects panicked while performing `Honk`: bad");
        let keyed = effects(Performing::OnFailure, Some("tool-1"));
        assert_eq!(keyed.to_string(), "the effects panicked while performing `on_failure` of `tool-1`: bad");
        let keyless = effects(Performing::OnFailure, None);
        assert_eq!(
            keyless.to_string(),
            "the effects panicked while performing `on_failure` of a stream opened without a key: bad"
        );
        let unhandled = ConfigError::<Machine>::InterruptEventUnhandled {
            event: EventKind::Stop,
            states: vec![StateKind::Red, StateKind::Amber],
        };
        assert!(
            unhandled
                .to_string()
                .starts_with("the interrupt event `Stop` has no unguarded row (nor `=> ignore`) in `Red` and `Amber`:")
        );
        let diverged = ReplayError::<Machine>::Diverged {
            index: 3,
            expected_action: ActionKind::Honk,
            actual_action: ActionKind::Nothing,
            expected_state: Status::In(StateKind::Red),
            actual_state: Status::Poisoned,
        };
        assert_eq!(
            diverged.to_string(),
            "replay diverged at event 3: recorded `Honk` into `Red`, replayed `Nothing` into `(poisoned)`"
        );
        assert_eq!(diverged.clone(), diverged);
        assert!(format!("{diverged:?}").contains("expected_action: Honk"));
    }

    /// The written-out `Debug` shows the kinds by name, as a derive would.
    #[test]
    fn errors_debug_like_a_derive() {
        let go = WorkerError::<Machine>::MachinePoisoned { event: EventKind::Go };
        assert_eq!(format!("{go:?}"), "MachinePoisoned { event: Go }");
        let failed = RequestError::<Machine>::Failed(Arc::new(go));
        assert_eq!(format!("{failed:?}"), "Failed(MachinePoisoned { event: Go })");
        assert_eq!(format!("{:?}", SendError::<Machine>::Closed(Event::Go)), "Closed(Go)");
    }

    /// Each error equals its clone and differs from the same error with
    /// any one field changed, or another variant.
    #[test]
    fn errors_differ_in_every_field() {
        fn each_differs<T: Clone + PartialEq + std::fmt::Debug>(all: &[T]) {
            for (i, a) in all.iter().enumerate() {
                for (j, b) in all.iter().enumerate() {
                    assert_eq!(i == j, a == b, "{a:?} against {b:?}");
                }
                assert_eq!(&a.clone(), a);
            }
        }
        let text = |s: &str| s.to_owned();
        let (go, stop) = (EventKind::Go, EventKind::Stop);
        let honk = Performing::Action(ActionKind::Honk);
        let unhandled = |event, states| ConfigError::<Machine>::InterruptEventUnhandled { event, states };
        let mismatch = |configured, built| ConfigError::<Machine>::InterruptEventMismatch { configured, built };
        each_differs(&[
            unhandled(go, vec![StateKind::Red]),
            unhandled(stop, vec![StateKind::Red]),
            unhandled(go, vec![StateKind::Amber]),
            mismatch(go, stop),
            mismatch(stop, stop),
            mismatch(go, go),
        ]);
        let effects = |performing, key: Option<&str>, message: &str| WorkerError::<Machine>::EffectsPanicked {
            performing,
            key: key.map(str::to_owned),
            message: text(message),
        };
        each_differs(&[
            WorkerError::<Machine>::MachinePanicked { event: go, message: text("a") },
            WorkerError::MachinePanicked { event: stop, message: text("a") },
            WorkerError::MachinePanicked { event: go, message: text("b") },
            WorkerError::EventClonePanicked { event: go, message: text("a") },
            WorkerError::EventClonePanicked { event: stop, message: text("a") },
            WorkerError::EventClonePanicked { event: go, message: text("b") },
            WorkerError::MachinePoisoned { event: go },
            WorkerError::MachinePoisoned { event: stop },
            effects(honk, None, "a"),
            effects(Performing::OnFailure, None, "a"),
            effects(honk, Some("k"), "a"),
            effects(honk, None, "b"),
            WorkerError::ConfigPanicked { callback: "observer", message: text("a") },
            WorkerError::ConfigPanicked { callback: "shutdown_event", message: text("a") },
            WorkerError::ConfigPanicked { callback: "observer", message: text("b") },
            WorkerError::Config(mismatch(go, stop)),
            WorkerError::Config(mismatch(stop, go)),
            WorkerError::SpawnedPoisoned,
            WorkerError::NoRuntime,
            WorkerError::NoTimers,
        ]);
        each_differs(&[
            RequestError::<Machine>::Closed,
            RequestError::Failed(Arc::new(WorkerError::NoRuntime)),
            RequestError::Failed(Arc::new(WorkerError::NoTimers)),
            RequestError::Poisoned,
            RequestError::InspectPanicked(text("a")),
            RequestError::InspectPanicked(text("b")),
            RequestError::NoInterruptEvent,
            RequestError::Full,
        ]);
        let diverged = |index, expected_action, actual_action, expected_state, actual_state| {
            ReplayError::<Machine>::Diverged { index, expected_action, actual_action, expected_state, actual_state }
        };
        let (red, poisoned, nothing) = (Status::In(StateKind::Red), Status::Poisoned, ActionKind::Nothing);
        each_differs(&[
            diverged(0, ActionKind::Honk, nothing, red, red),
            diverged(1, ActionKind::Honk, nothing, red, red),
            diverged(0, nothing, nothing, red, red),
            diverged(0, ActionKind::Honk, ActionKind::Honk, red, red),
            diverged(0, ActionKind::Honk, nothing, poisoned, red),
            diverged(0, ActionKind::Honk, nothing, red, poisoned),
        ]);
    }

    #[test]
    fn state_lists_read_as_prose() {
        assert_eq!(super::list(&[StateKind::Red]), "`Red`");
        assert_eq!(super::list(&[StateKind::Red, StateKind::Amber, StateKind::Green]), "`Red`, `Amber` and `Green`");
        assert_eq!(super::list::<StateKind>(&[]), "");
    }
}
