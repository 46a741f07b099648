// A terminal state has no rows, but an event can still arrive there (a
// second cancel): `=> ignore` marks it as expected, reported as ignored
// (debug) where an unlisted pair is reported as unhandled (a warning).
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        #[terminal]
        Done,
    }

    #[events]
    pub enum Event {
        Go,
        Stop,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Finish,
    }

    transitions! {
        Idle + Go => Done / Finish,
        Done + Go => ignore,
    }
}

use agent_fsm::{Recorder, UnhandledReason};
use machine::{Action, Event, Machine, State};

fn main() {
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Go), Action::Finish);
    let mut recorder = Recorder::default();
    assert_eq!(m.handle_event_with(Event::Go, &mut recorder), Action::Wait);
    assert_eq!(m.handle_event_with(Event::Stop, &mut recorder), Action::Wait);
    assert_eq!(m.state(), &State::Done);
    let reasons: Vec<UnhandledReason> = recorder.unhandled.iter().map(|u| u.reason).collect();
    assert_eq!(reasons, [UnhandledReason::Ignored, UnhandledReason::NoRow]);
    assert_eq!(Machine::DESCRIPTION.ignored, [("Done", "Go")]);
}
