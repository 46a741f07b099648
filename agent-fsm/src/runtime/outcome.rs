//! What became of an event sent with [`call`](super::MachineHandle::call):
//! the typed answer a caller can act on (the state moved, a row kept it,
//! the table ignored the event or refused it, the machine was finished or
//! poisoned), built from what the machine reported to the worker's observer.

use crate::{ActionKindOf, StateKindOf, StateMachine, Status, UnhandledReason};

/// What the machine did with one event, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome<S, A> {
    /// A row fired and the machine is in another state now (through any
    /// transient states between).
    Moved {
        /// The state before the event.
        from: S,
        /// The state after it.
        to: S,
        /// The action the row returned.
        action: A,
    },
    /// A row fired and kept the state: a row that changes data in place or
    /// a self-transition.
    Stayed {
        /// The state, before and after.
        state: S,
        /// The action the row returned.
        action: A,
    },
    /// The table marks the pair `=> ignore`: nothing changed, the fallback
    /// action was returned.
    Ignored {
        /// The state, unchanged.
        state: S,
        /// The fallback action.
        action: A,
    },
    /// No row exists for the pair: nothing changed, the fallback action was
    /// returned.
    NoRow {
        /// The state, unchanged.
        state: S,
        /// The fallback action.
        action: A,
    },
    /// Rows exist for the pair, but every guard or payload pattern refused
    /// the event: nothing changed, the fallback action was returned.
    Refused {
        /// The state, unchanged.
        state: S,
        /// The fallback action.
        action: A,
    },
    /// The machine had already finished (a terminal state, or the worker
    /// stopped normally, by a shutdown too): the event changed nothing.
    Finished {
        /// The state the machine finished in.
        state: S,
    },
    /// The event's row left the machine without a state (its code left the
    /// row early): nothing of the step was performed and the worker has
    /// stopped with [`WorkerError::MachinePoisoned`](super::WorkerError::MachinePoisoned).
    Poisoned,
}

impl<S: Copy, A: Copy> Outcome<S, A> {
    /// The action the machine returned, `None` if it returned none
    /// ([`Finished`](Self::Finished), [`Poisoned`](Self::Poisoned)).
    #[must_use]
    pub fn action(&self) -> Option<A> {
        match *self {
            Self::Moved { action, .. }
            | Self::Stayed { action, .. }
            | Self::Ignored { action, .. }
            | Self::NoRow { action, .. }
            | Self::Refused { action, .. } => Some(action),
            Self::Finished { .. } | Self::Poisoned => None,
        }
    }

    /// The state after the event, `None` if the machine is poisoned.
    #[must_use]
    pub fn state(&self) -> Option<S> {
        match *self {
            Self::Moved { to: state, .. }
            | Self::Stayed { state, .. }
            | Self::Ignored { state, .. }
            | Self::NoRow { state, .. }
            | Self::Refused { state, .. }
            | Self::Finished { state } => Some(state),
            Self::Poisoned => None,
        }
    }

    /// Whether a row accepted the event ([`Moved`](Self::Moved) or
    /// [`Stayed`](Self::Stayed)).
    #[must_use]
    pub fn accepted(&self) -> bool {
        matches!(self, Self::Moved { .. } | Self::Stayed { .. })
    }
}

/// The outcome of an event for machine `M`.
pub type OutcomeOf<M> = Outcome<StateKindOf<M>, ActionKindOf<M>>;

/// What [`call`](super::MachineHandle::call) answers: what the machine did
/// with the event, and whether its action was performed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Delivered<S, A> {
    /// What the machine did with the event.
    pub outcome: Outcome<S, A>,
    /// Whether the action was performed (see
    /// [`Notification::Action`](super::Notification::Action)); `false`
    /// while the worker drains or cancels, and when there was no action.
    pub performed: bool,
}

impl<S: Copy, A: Copy> Delivered<S, A> {
    /// The action the machine returned, if any.
    #[must_use]
    pub fn action(&self) -> Option<A> {
        self.outcome.action()
    }

    /// The state after the event, `None` if the machine is poisoned.
    #[must_use]
    pub fn state(&self) -> Option<S> {
        self.outcome.state()
    }
}

/// What [`call`](super::MachineHandle::call) answers for machine `M`.
pub type DeliveredTo<M> = Delivered<StateKindOf<M>, ActionKindOf<M>>;

/// What a step reported to the worker's observer: enough to tell the
/// outcomes apart. One byte on the stack of a step, set by a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Nothing reported yet.
    Nothing,
    /// At least one row fired.
    Hop,
    /// The event was not accepted, for this reason.
    Unhandled(UnhandledReason),
}

/// The outcome of a step that left `machine` with a state, given the state
/// before it (`from`), whether the machine had already finished, what the
/// observer saw and the action's kind.
pub(crate) fn outcome_of<M: StateMachine>(
    from: Status<StateKindOf<M>>,
    finished: bool,
    seen: Seen,
    machine: &M,
    action: ActionKindOf<M>,
) -> OutcomeOf<M> {
    let Status::In(to) = machine.status() else {
        return Outcome::Poisoned;
    };
    let from = from.state().unwrap_or(to);
    if finished {
        return Outcome::Finished { state: to };
    }
    match seen {
        Seen::Hop if from == to => Outcome::Stayed { state: to, action },
        Seen::Hop => Outcome::Moved { from, to, action },
        Seen::Unhandled(UnhandledReason::Ignored) => Outcome::Ignored { state: to, action },
        Seen::Unhandled(UnhandledReason::Refused) => Outcome::Refused { state: to, action },
        Seen::Unhandled(UnhandledReason::Poisoned) => Outcome::Poisoned,
        // `NoRow`, and any reason added later: the fallback answered.
        Seen::Unhandled(_) | Seen::Nothing => Outcome::NoRow { state: to, action },
    }
}
