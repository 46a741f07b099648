// `Self` in a carried field's type means the state enum, in the bound
// that decides whether `new` exists as everywhere else: `Box<Self>` is
// `Default` because the state enum is.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait)]
pub mod m {
    #[states]
    #[carry(last: Box<Self>)]
    #[derive(Debug, Default, PartialEq)]
    pub enum State {
        #[default]
        #[no_carry]
        Blank,
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Go,
        Back,
        Clear,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Back => Idle / Wait,
        Busy + Clear => Blank / Wait,
        Blank + Go => Idle { last: Box::new(State::Blank) } / Wait,
    }
}

fn main() {
    use m::{Event, Machine, State};
    let mut machine = Machine::new();
    assert_eq!(machine.state(), &State::Idle { last: Box::new(State::Blank) });
    machine.handle_event(Event::Go);
    assert_eq!(machine.state(), &State::Busy { last: Box::new(State::Blank) });
}
