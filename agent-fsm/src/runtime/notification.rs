//! [`Notification`]: what a subscriber of a running machine hears, by kind
//! (hops, refused events, actions), with the machine's state itself for a
//! subscription that asked for it, and serializable with the `serde`
//! feature, so that a UI can show an agent without keeping copies of its
//! own.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use super::task::EffectFailure;
use crate::{ActionKindOf, StateMachine, StepOf, UnhandledOf};

/// Something that happened inside machine `M` (`O`: what its effects
/// publish), for subscribers.
///
/// With the `serde` feature it serializes (and deserializes) when the
/// machine's state, its kinds and `O` do: the kinds by their snake_case
/// names, the state as its own serde form.
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(
        rename_all = "snake_case",
        bound(
            serialize = "M::State: serde::Serialize, crate::StateKindOf<M>: serde::Serialize, \
                         crate::EventKindOf<M>: serde::Serialize, ActionKindOf<M>: serde::Serialize, \
                         O: serde::Serialize",
            deserialize = "M::State: serde::Deserialize<'de> + Clone + Send + Sync + 'static, crate::StateKindOf<M>: serde::Deserialize<'de>, \
                           crate::EventKindOf<M>: serde::Deserialize<'de>, ActionKindOf<M>: serde::Deserialize<'de>, \
                           O: serde::Deserialize<'de>"
        )
    )
)]
#[non_exhaustive]
pub enum Notification<M: StateMachine, O> {
    /// A hop (transient ones included).
    Transition(StepOf<M>),
    /// The machine refused an event; its state is unchanged.
    Unhandled(UnhandledOf<M>),
    /// The state after a step that a row accepted, the whole of it: only
    /// for subscriptions made with
    /// [`subscribe_with_states`](super::MachineHandle::subscribe_with_states)
    /// ([`Topics::STATES`](super::Topics::STATES)), after that step's
    /// transitions and before its action.
    State(StateCopy<M::State>),
    /// An action the machine returned: `performed` is `false` for actions
    /// returned while the worker cancels work (interrupt, shutdown) or
    /// drains its inbox after stopping, which are not performed.
    Action {
        /// The action's kind.
        action: ActionKindOf<M>,
        /// Whether the effects performed it.
        performed: bool,
    },
    /// An output published by the effects.
    Output(O),
    /// A stream or a task failed; the machine receives the failure event
    /// its effects chose.
    EffectFailed {
        /// The task's or keyed stream's key; `None` for a stream opened
        /// without one.
        key: Option<String>,
        /// Why.
        failure: EffectFailure,
    },
    /// An interrupt was carried out.
    Interrupted {
        /// The cause given to [`MachineHandle::interrupt`](super::MachineHandle::interrupt).
        cause: Arc<str>,
    },
    /// This subscriber fell behind and missed this many notifications; the
    /// subscription goes on with the oldest one still kept. The log is
    /// shared by every subscription, so the count includes notifications
    /// of topics this subscription does not receive, and a subscription to
    /// a quiet topic can lag, having missed none of its own, while another
    /// topic is busy: size the log
    /// ([`notification_capacity`](super::ExecutorConfig::notification_capacity))
    /// for every topic subscribed.
    Lagged(u64),
}

// Written out: derives would ask `M` itself for the traits, where only its
// state, kinds and `O` need them.
impl<M: StateMachine, O: Clone> Clone for Notification<M, O> {
    fn clone(&self) -> Self {
        match self {
            Self::Transition(step) => Self::Transition(*step),
            Self::Unhandled(unhandled) => Self::Unhandled(*unhandled),
            Self::State(state) => Self::State(state.clone()),
            Self::Action { action, performed } => Self::Action { action: *action, performed: *performed },
            Self::Output(output) => Self::Output(output.clone()),
            Self::EffectFailed { key, failure } => Self::EffectFailed { key: key.clone(), failure: failure.clone() },
            Self::Interrupted { cause } => Self::Interrupted { cause: Arc::clone(cause) },
            Self::Lagged(missed) => Self::Lagged(*missed),
        }
    }
}

impl<M: StateMachine, O: fmt::Debug> fmt::Debug for Notification<M, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Transition(step) => f.debug_tuple("Transition").field(step).finish(),
            Self::Unhandled(unhandled) => f.debug_tuple("Unhandled").field(unhandled).finish(),
            Self::State(state) => f.debug_tuple("State").field(state).finish(),
            Self::Action { action, performed } => {
                f.debug_struct("Action").field("action", action).field("performed", performed).finish()
            }
            Self::Output(output) => f.debug_tuple("Output").field(output).finish(),
            Self::EffectFailed { key, failure } => {
                f.debug_struct("EffectFailed").field("key", key).field("failure", failure).finish()
            }
            Self::Interrupted { cause } => f.debug_struct("Interrupted").field("cause", cause).finish(),
            Self::Lagged(missed) => f.debug_tuple("Lagged").field(missed).finish(),
        }
    }
}

impl<M: StateMachine, O: PartialEq> PartialEq for Notification<M, O>
where
    M::State: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Transition(a), Self::Transition(b)) => a == b,
            (Self::Unhandled(a), Self::Unhandled(b)) => a == b,
            (Self::State(a), Self::State(b)) => a == b,
            (Self::Action { action: a, performed: p }, Self::Action { action: b, performed: q }) => a == b && p == q,
            (Self::Output(a), Self::Output(b)) => a == b,
            (Self::EffectFailed { key: a, failure: f }, Self::EffectFailed { key: b, failure: g }) => a == b && f == g,
            (Self::Interrupted { cause: a }, Self::Interrupted { cause: b }) => a == b,
            (Self::Lagged(a), Self::Lagged(b)) => a == b,
            _ => false,
        }
    }
}

impl<M: StateMachine, O: Eq> Eq for Notification<M, O> where M::State: Eq {}

/// A copy of a machine's state, carried by [`Notification::State`]: taken
/// once per step, and copied again for each further subscription that
/// reads it. It dereferences to the state.
///
/// It carries the state's `Clone` with it, behind a `Send + Sync` box made
/// only from a state that is all three: a notification is then `Clone`,
/// `Send` and `Sync` whatever the machine, and only a subscription that
/// asks for states needs its state to be.
pub struct StateCopy<S> {
    held: Box<dyn Held<S>>,
}

/// A state that can be copied and shared: what [`StateCopy`] boxes.
trait Held<S>: Send + Sync {
    fn get(&self) -> &S;
    fn copy(&self) -> Box<dyn Held<S>>;
    fn take(self: Box<Self>) -> S;
}

impl<S: Clone + Send + Sync + 'static> Held<S> for S {
    fn get(&self) -> &S {
        self
    }

    fn copy(&self) -> Box<dyn Held<S>> {
        Box::new(self.clone())
    }

    fn take(self: Box<Self>) -> S {
        *self
    }
}

impl<S: Clone + Send + Sync + 'static> StateCopy<S> {
    /// A copy of `state`.
    #[must_use]
    pub fn new(state: &S) -> Self {
        Self { held: Box::new(state.clone()) }
    }
}

impl<S> StateCopy<S> {
    /// The state.
    #[must_use]
    pub fn into_inner(self) -> S {
        self.held.take()
    }
}

impl<S> Deref for StateCopy<S> {
    type Target = S;

    fn deref(&self) -> &S {
        self.held.get()
    }
}

impl<S> Clone for StateCopy<S> {
    fn clone(&self) -> Self {
        Self { held: self.held.copy() }
    }
}

impl<S: fmt::Debug> fmt::Debug for StateCopy<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.held.get().fmt(f)
    }
}

impl<S: PartialEq> PartialEq for StateCopy<S> {
    fn eq(&self, other: &Self) -> bool {
        self.held.get() == other.held.get()
    }
}

impl<S: Eq> Eq for StateCopy<S> {}

/// The state's own serde form.
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<S: serde::Serialize> serde::Serialize for StateCopy<S> {
    fn serialize<Z: serde::Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        self.held.get().serialize(serializer)
    }
}

/// From the state's own serde form.
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de, S: serde::Deserialize<'de> + Clone + Send + Sync + 'static> serde::Deserialize<'de> for StateCopy<S> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self { held: Box::new(S::deserialize(deserializer)?) })
    }
}
