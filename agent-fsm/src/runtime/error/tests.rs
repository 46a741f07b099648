//! Unit tests of the runtime's errors: their messages, and how they name
//! states, events and actions.

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
    assert!(matches!(RequestError::from(Arc::clone(&failure)), RequestError::Failed(e) if Arc::ptr_eq(&e, &failure)));
    assert!(matches!(SendError::<Machine>::Full(Event::Stop).into_event(), Event::Stop));
    let config = ConfigError::<Machine>::InterruptEventMismatch { configured: EventKind::Stop, built: EventKind::Go };
    let worker = WorkerError::from(config.clone());
    assert_eq!(worker, WorkerError::Config(config.clone()));
    let source = std::error::Error::source(&worker).map(ToString::to_string);
    assert_eq!(source, Some("the interrupt event was configured as `Stop`, but its closure built a `Go`".to_owned()));
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
