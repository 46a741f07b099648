// `* except (Paused) + Stop` applies to every state that takes events but
// `Paused`; in `Paused`, `Stop` falls back. The terminal `Done` is not a
// source of the `*` row (it would leave a terminal state).
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
        Paused,
        #[terminal]
        Done,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Go,
        Pause,
        Stop,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Action {
        Wait,
        Start,
        Hold,
        Resume,
        Finish,
    }

    transitions! {
        Idle + Go => Busy / Start,
        Busy + Pause => Paused / Hold,
        Paused + Go => Busy / Resume,
        * except (Paused) + Stop => Done / Finish,
    }
}

use machine::{Action, Event, Machine, State};

fn main() {
    // From the initial state.
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Stop), Action::Finish);
    assert_eq!(m.state(), &State::Done);

    // From `Busy`.
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Go), Action::Start);
    assert_eq!(m.handle_event(Event::Stop), Action::Finish);
    assert!(m.state().is_done());

    // `Paused` is excluded: `Stop` there returns the fallback and stays.
    let mut m = Machine::new();
    m.handle_event(Event::Go);
    assert_eq!(m.handle_event(Event::Pause), Action::Hold);
    assert_eq!(m.handle_event(Event::Stop), Action::Wait);
    assert_eq!(m.state(), &State::Paused);
    assert_eq!(m.handle_event(Event::Go), Action::Resume);
    assert_eq!(m.handle_event(Event::Stop), Action::Finish);

    // `Done` is terminal: nothing leaves it.
    assert_eq!(m.handle_event(Event::Go), Action::Wait);
    assert_eq!(m.state(), &State::Done);
    assert!(m.state().is_terminal());
}
