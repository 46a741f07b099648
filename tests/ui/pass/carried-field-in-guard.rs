// A moving row's guard may read a carried field.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(count: u32)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        #[terminal]
        #[no_carry]
        Done,
    }

    #[events]
    pub enum Event {
        Go,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Finish,
    }

    transitions! {
        Idle + Go [*count > 0] => Done / Finish,
        Idle + Go => { *count += 1; } Idle / Wait,
    }
}

use machine::{Action, Event, Machine};

fn main() {
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Go), Action::Wait);
    assert_eq!(m.handle_event(Event::Go), Action::Finish);
}
