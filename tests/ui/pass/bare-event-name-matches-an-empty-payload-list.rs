// A bare event name matches an event declared with an empty payload list,
// `Ping()` or `Pong {}`, as it matches any other payload.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub enum Event {
        Ping(),
        Pong {},
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Start,
    }

    transitions! {
        Idle + Ping => Busy / Start,
        Busy + Pong => Idle / Wait,
    }
}

fn main() {
    use m::{Action, Event, Machine, State};
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Ping()), Action::Start);
    assert_eq!(m.state(), &State::Busy);
    assert_eq!(m.handle_event(Event::Pong {}), Action::Wait);
    assert_eq!(m.state(), &State::Idle);
}
