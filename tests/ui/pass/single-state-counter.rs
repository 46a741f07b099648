// A machine of one state: its self-loops are the whole machine, so the
// state needs no way out (a machine of several states would).
#[agent_fsm::state_machine(fallback = Nothing)]
pub mod counter {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Counting { n: u32 },
    }

    #[events]
    pub enum Event {
        Inc,
        Dec,
        Reset,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Now(u32),
    }

    transitions! {
        Counting { n } + Inc => { *n += 1; } Counting / Now(*n),
        Counting { n } + Dec [*n > 0] => { *n -= 1; } Counting / Now(*n),
        Counting + Reset => Counting { n: 0 } / Now(0),
    }
}

use counter::{Action, Event, Machine, State};

fn main() {
    let mut m = Machine::new(0);
    // Refused by the guard: the state stays, the fallback comes back.
    assert_eq!(m.handle_event(Event::Dec), Action::Nothing);
    assert_eq!(m.handle_event(Event::Inc), Action::Now(1));
    assert_eq!(m.handle_event(Event::Inc), Action::Now(2));
    assert_eq!(m.handle_event(Event::Dec), Action::Now(1));
    assert_eq!(m.handle_event(Event::Reset), Action::Now(0));
    assert_eq!(m.state(), &State::Counting { n: 0 });
}
