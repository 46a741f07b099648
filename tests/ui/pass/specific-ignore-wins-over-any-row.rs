// `State + Event => ignore` wins over a `* + Event` row, above or below it,
// as a specific row does.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Nop)]
mod m {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
        Paused,
        #[terminal]
        Done,
    }
    #[events]
    pub enum Event {
        Go,
        Pause,
        Stop,
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nop,
        Halt,
    }
    transitions! {
        Idle + Stop => ignore,
        Idle + Go => Busy / Nop,
        Busy + Pause => Paused / Nop,
        Paused + Go => Busy / Nop,
        * + Stop => Done / Halt,
        Paused + Stop => ignore,
    }
}

fn main() {
    use m::{Action, Event, Machine, State};
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Stop), Action::Nop);
    assert_eq!(m.state(), &State::Idle);
    m.handle_event(Event::Go);
    m.handle_event(Event::Pause);
    assert_eq!(m.handle_event(Event::Stop), Action::Nop);
    assert_eq!(m.state(), &State::Paused);
    m.handle_event(Event::Go);
    assert_eq!(m.handle_event(Event::Stop), Action::Halt);
    assert_eq!(m.state(), &State::Done);
}
