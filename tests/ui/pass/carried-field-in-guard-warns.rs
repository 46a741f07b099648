// An in-place row's guard may read a carried field without a lint warning.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(count: u32)]
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
        Count(u32),
        Finish,
    }

    transitions! {
        Idle + Go [*count < 2] => { *count += 1; } Idle / Count(*count),
        Idle + Go => Idle / Wait,
        Idle + Stop => Done / Finish,
    }
}

use machine::{Action, Event, Machine};

fn main() {
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Go), Action::Count(1));
    assert_eq!(m.handle_event(Event::Go), Action::Count(2));
    assert_eq!(m.handle_event(Event::Go), Action::Wait);
    assert_eq!(m.handle_event(Event::Stop), Action::Finish);
}
