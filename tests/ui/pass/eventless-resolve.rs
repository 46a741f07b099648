// A `#[transient]` state entered from two sources (`Idle | Busy + Submit`)
// resolves inside the same `handle_event` call: its eventless rows are tried
// in order, the last one unguarded, and the row that leaves it returns the
// action. After the call the machine never rests in the transient state.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy {
            total: u32,
        },
        #[transient]
        Checking {
            n: u32,
        },
        #[terminal]
        Done,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Submit(u32),
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Action {
        Wait,
        Rejected,
        Accepted(u32),
        Finished,
    }

    transitions! {
        Idle | Busy + Submit(n) => Checking { n },
        Checking { n } [*n == 0] => Idle / Rejected,
        Checking { n } [*n >= 100] => Done / Finished,
        Checking { n } => Busy { total: n } / Accepted(n),
    }
}

use machine::{Action, Event, Machine, State};

fn main() {
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Submit(0)), Action::Rejected);
    assert_eq!(m.state(), &State::Idle);
    assert_eq!(m.handle_event(Event::Submit(7)), Action::Accepted(7));
    assert_eq!(m.state(), &State::Busy { total: 7 });
    assert!(!m.state().is_transient());
    assert_eq!(m.handle_event(Event::Submit(8)), Action::Accepted(8));
    assert_eq!(m.handle_event(Event::Submit(100)), Action::Finished);
    assert_eq!(m.state(), &State::Done);
    assert_eq!(m.handle_event(Event::Submit(1)), Action::Wait);
}
