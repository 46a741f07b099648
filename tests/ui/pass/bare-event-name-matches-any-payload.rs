// A bare event name matches the event whatever its payload, tuple or
// struct, as in `ignore` rows; a pattern still picks the payload apart.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
        #[terminal]
        Done,
    }

    #[events]
    pub enum Event {
        Go(u32),
        Reply { text: String },
        Stop,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Start,
        Finish,
        Saw(u32),
    }

    transitions! {
        Idle + Go(0) => Idle / Saw(0),
        Idle + Go => Busy / Start,
        Busy + Reply => Done / Finish,
        * + Stop => Done / Finish,
    }
}

fn main() {
    use m::{Action, Event, Machine, State};
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Go(0)), Action::Saw(0));
    assert_eq!(m.handle_event(Event::Go(7)), Action::Start);
    assert_eq!(m.handle_event(Event::Reply { text: "ok".into() }), Action::Finish);
    assert_eq!(m.state(), &State::Done);
    assert!(Machine::DESCRIPTION.mermaid.contains("Idle --> Busy : Go / Start"));
}
