// `strict`: every (state, event) pair of a state that takes events has a
// row or `=> ignore`. `* except (..)` ignores in several states at once;
// terminal states need no rows. An ignored event returns the fallback and
// leaves the state as it was.
#[agent_fsm::state_machine(fallback = Nothing, strict)]
pub mod machine {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy {
            ticks: u32,
        },
        #[terminal]
        Done,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Go,
        Tick,
        Stop,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Action {
        Nothing,
        Start,
        Count(u32),
        Finish,
    }

    transitions! {
        Idle + Go => Busy { ticks: 0 } / Start,
        Busy + Go => ignore,
        Busy { ticks } + Tick => { *ticks += 1; } Busy / Count(*ticks),
        * except (Busy) + Tick => ignore,
        * + Stop => Done / Finish,
    }
}

use machine::{Action, Event, Machine, State};

fn main() {
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Tick), Action::Nothing);
    assert_eq!(m.state(), &State::Idle);
    assert_eq!(m.handle_event(Event::Go), Action::Start);
    assert_eq!(m.handle_event(Event::Go), Action::Nothing);
    assert_eq!(m.handle_event(Event::Tick), Action::Count(1));
    assert_eq!(m.handle_event(Event::Tick), Action::Count(2));
    assert_eq!(m.state(), &State::Busy { ticks: 2 });
    assert_eq!(m.handle_event(Event::Stop), Action::Finish);
    assert_eq!(m.state(), &State::Done);
}
