// A `*` row below a specific row for the same event, and `* + E => ignore`
// beside specific rows: the specific rows win in their states, the `*` row
// and the ignore stand for the rest.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Nothing, strict)]
mod bell {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Quiet,
        Ringing,
        #[terminal]
        Stopped,
    }

    #[events]
    pub enum Event {
        Press,
        Dust,
        Stop,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Ring,
        Sneeze,
        Hush,
        Halt,
    }

    transitions! {
        Quiet + Press => Ringing / Ring,
        Ringing + Dust => Ringing / Sneeze,
        Ringing + Stop => Quiet / Hush,
        * + Stop => Stopped / Halt,
        * + Dust => ignore,
        * + Press => ignore,
    }
}

fn main() {
    use bell::{Action, Event, Machine, State};
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Dust), Action::Nothing); // ignored in Quiet
    assert_eq!(m.handle_event(Event::Press), Action::Ring);
    assert_eq!(m.handle_event(Event::Dust), Action::Sneeze); // the specific row
    assert_eq!(m.handle_event(Event::Stop), Action::Hush); // the specific row wins
    assert_eq!(m.state(), &State::Quiet);
    assert_eq!(m.handle_event(Event::Stop), Action::Halt); // the `*` row
    assert_eq!(m.state(), &State::Stopped);
}
