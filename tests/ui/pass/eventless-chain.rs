// Two transient states in a row: one event runs `First` then `Second`
// inside the same `handle_event` call; the row leaving the last transient
// state returns the action, and the machine never rests in a transient
// state.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        #[transient]
        First { x: u32 },
        #[transient]
        Second { y: u32 },
        #[terminal]
        Done,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Input(u32),
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Action {
        Wait,
        Zero,
        Big(u32),
        Small(u32),
    }

    transitions! {
        Idle + Input(x) => First { x },
        First { x } [*x == 0] => Done / Zero,
        First { x } => Second { y: x * 2 },
        Second { y } [*y > 10] => Idle / Big(y),
        Second { y } => Idle / Small(y),
    }
}

use machine::{Action, Event, Machine, State};

fn main() {
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Input(3)), Action::Small(6));
    assert_eq!(m.state(), &State::Idle);
    assert_eq!(m.handle_event(Event::Input(6)), Action::Big(12));
    assert_eq!(m.state(), &State::Idle);
    assert!(!m.state().is_transient());
    assert_eq!(m.handle_event(Event::Input(0)), Action::Zero);
    assert_eq!(m.state(), &State::Done);
    // Terminal: the fallback, and the state stays.
    assert_eq!(m.handle_event(Event::Input(1)), Action::Wait);
    assert_eq!(m.state(), &State::Done);
}
