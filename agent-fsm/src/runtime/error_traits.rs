//! `Debug`, `Clone`, `PartialEq` and `Eq` for the runtime's error enums
//! (in [`error`](super::error)), written out: those enums are generic over
//! the machine, and a derive would ask the machine type itself for each
//! trait, where only its kinds (always `Copy + Eq + Debug`) and, for a
//! [`SendError`], its event need them.

use std::fmt;

use super::error::{ConfigError, ReplayError, RequestError, SendError, WorkerError};
use crate::StateMachine;

impl<M: StateMachine> fmt::Debug for WorkerError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MachinePanicked { event, message } => {
                f.debug_struct("MachinePanicked").field("event", event).field("message", message).finish()
            }
            Self::MachinePoisoned { event } => f.debug_struct("MachinePoisoned").field("event", event).finish(),
            Self::SpawnedPoisoned => f.write_str("SpawnedPoisoned"),
            Self::EffectsPanicked { performing, key, message } => f
                .debug_struct("EffectsPanicked")
                .field("performing", performing)
                .field("key", key)
                .field("message", message)
                .finish(),
            Self::EventClonePanicked { event, message } => {
                f.debug_struct("EventClonePanicked").field("event", event).field("message", message).finish()
            }
            Self::ConfigPanicked { callback, message } => {
                f.debug_struct("ConfigPanicked").field("callback", callback).field("message", message).finish()
            }
            Self::NoRuntime => f.write_str("NoRuntime"),
            Self::NoTimers => f.write_str("NoTimers"),
            Self::Config(error) => f.debug_tuple("Config").field(error).finish(),
            Self::Store(failure) => f.debug_tuple("Store").field(failure).finish(),
        }
    }
}

impl<M: StateMachine> Clone for WorkerError<M> {
    fn clone(&self) -> Self {
        match self {
            Self::MachinePanicked { event, message } => {
                Self::MachinePanicked { event: *event, message: message.clone() }
            }
            Self::MachinePoisoned { event } => Self::MachinePoisoned { event: *event },
            Self::SpawnedPoisoned => Self::SpawnedPoisoned,
            Self::EffectsPanicked { performing, key, message } => {
                Self::EffectsPanicked { performing: *performing, key: key.clone(), message: message.clone() }
            }
            Self::EventClonePanicked { event, message } => {
                Self::EventClonePanicked { event: *event, message: message.clone() }
            }
            Self::ConfigPanicked { callback, message } => Self::ConfigPanicked { callback, message: message.clone() },
            Self::NoRuntime => Self::NoRuntime,
            Self::NoTimers => Self::NoTimers,
            Self::Config(error) => Self::Config(error.clone()),
            Self::Store(failure) => Self::Store(failure.clone()),
        }
    }
}

impl<M: StateMachine> PartialEq for WorkerError<M> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::MachinePanicked { event: a, message: m }, Self::MachinePanicked { event: b, message: n })
            | (Self::EventClonePanicked { event: a, message: m }, Self::EventClonePanicked { event: b, message: n }) => {
                a == b && m == n
            }
            (Self::MachinePoisoned { event: a }, Self::MachinePoisoned { event: b }) => a == b,
            (
                Self::EffectsPanicked { performing: a, key: k, message: m },
                Self::EffectsPanicked { performing: b, key: l, message: n },
            ) => a == b && k == l && m == n,
            (Self::ConfigPanicked { callback: a, message: m }, Self::ConfigPanicked { callback: b, message: n }) => {
                a == b && m == n
            }
            (Self::Config(a), Self::Config(b)) => a == b,
            (Self::Store(a), Self::Store(b)) => a == b,
            (Self::SpawnedPoisoned, Self::SpawnedPoisoned)
            | (Self::NoRuntime, Self::NoRuntime)
            | (Self::NoTimers, Self::NoTimers) => true,
            _ => false,
        }
    }
}

impl<M: StateMachine> Eq for WorkerError<M> {}

impl<M: StateMachine> fmt::Debug for ConfigError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InterruptEventUnhandled { event, states } => {
                f.debug_struct("InterruptEventUnhandled").field("event", event).field("states", states).finish()
            }
            Self::InterruptEventMismatch { configured, built } => {
                f.debug_struct("InterruptEventMismatch").field("configured", configured).field("built", built).finish()
            }
        }
    }
}

impl<M: StateMachine> Clone for ConfigError<M> {
    fn clone(&self) -> Self {
        match self {
            Self::InterruptEventUnhandled { event, states } => {
                Self::InterruptEventUnhandled { event: *event, states: states.clone() }
            }
            Self::InterruptEventMismatch { configured, built } => {
                Self::InterruptEventMismatch { configured: *configured, built: *built }
            }
        }
    }
}

impl<M: StateMachine> PartialEq for ConfigError<M> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Self::InterruptEventUnhandled { event: a, states: s },
                Self::InterruptEventUnhandled { event: b, states: t },
            ) => a == b && s == t,
            (
                Self::InterruptEventMismatch { configured: a, built: x },
                Self::InterruptEventMismatch { configured: b, built: y },
            ) => a == b && x == y,
            _ => false,
        }
    }
}

impl<M: StateMachine> Eq for ConfigError<M> {}

impl<M: StateMachine> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Closed(event) => f.debug_tuple("Closed").field(event).finish(),
            Self::Full(event) => f.debug_tuple("Full").field(event).finish(),
            Self::Failed(event, error) => f.debug_tuple("Failed").field(event).field(error).finish(),
        }
    }
}

impl<M: StateMachine> fmt::Debug for RequestError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Closed => f.write_str("Closed"),
            Self::Failed(error) => f.debug_tuple("Failed").field(error).finish(),
            Self::Poisoned => f.write_str("Poisoned"),
            Self::InspectPanicked(message) => f.debug_tuple("InspectPanicked").field(message).finish(),
            Self::NoInterruptEvent => f.write_str("NoInterruptEvent"),
            Self::Full => f.write_str("Full"),
        }
    }
}

impl<M: StateMachine> Clone for RequestError<M> {
    fn clone(&self) -> Self {
        match self {
            Self::Closed => Self::Closed,
            Self::Failed(error) => Self::Failed(std::sync::Arc::clone(error)),
            Self::Poisoned => Self::Poisoned,
            Self::InspectPanicked(message) => Self::InspectPanicked(message.clone()),
            Self::NoInterruptEvent => Self::NoInterruptEvent,
            Self::Full => Self::Full,
        }
    }
}

impl<M: StateMachine> PartialEq for RequestError<M> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Failed(a), Self::Failed(b)) => a == b,
            (Self::InspectPanicked(a), Self::InspectPanicked(b)) => a == b,
            (Self::Closed, Self::Closed)
            | (Self::Poisoned, Self::Poisoned)
            | (Self::NoInterruptEvent, Self::NoInterruptEvent)
            | (Self::Full, Self::Full) => true,
            _ => false,
        }
    }
}

impl<M: StateMachine> Eq for RequestError<M> {}

impl<M: StateMachine> fmt::Debug for ReplayError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Diverged { index, expected_action, actual_action, expected_state, actual_state } => f
                .debug_struct("Diverged")
                .field("index", index)
                .field("expected_action", expected_action)
                .field("actual_action", actual_action)
                .field("expected_state", expected_state)
                .field("actual_state", actual_state)
                .finish(),
        }
    }
}

impl<M: StateMachine> Clone for ReplayError<M> {
    fn clone(&self) -> Self {
        match self {
            Self::Diverged { index, expected_action, actual_action, expected_state, actual_state } => Self::Diverged {
                index: *index,
                expected_action: *expected_action,
                actual_action: *actual_action,
                expected_state: *expected_state,
                actual_state: *actual_state,
            },
        }
    }
}

impl<M: StateMachine> PartialEq for ReplayError<M> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Self::Diverged { index: i, expected_action: a, actual_action: b, expected_state: s, actual_state: t },
                Self::Diverged { index: j, expected_action: c, actual_action: d, expected_state: u, actual_state: v },
            ) => i == j && a == c && b == d && s == u && t == v,
        }
    }
}

impl<M: StateMachine> Eq for ReplayError<M> {}
