// A `*` row stands for the states whose rows leave its event undecided. A
// state with an unguarded row for the same event pattern already decides
// it, even when the pattern is refutable (`Go(0)`): the `*` row is not
// expanded there, and `DESCRIPTION` and the diagram show no edge that can
// never fire.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
        Done,
    }

    #[events]
    pub enum Event {
        Go(u32),
        Stop,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Start,
        Finish,
    }

    transitions! {
        Idle + Go(0) => Busy / Start,
        Busy + Stop => Done / Finish,
        Done + Stop => Idle / Wait,
        * + Go(0) => Done / Finish,
    }
}

fn main() {
    use m::{Action, Event, Machine, State};
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Go(0)), Action::Start);
    assert_eq!(m.state(), &State::Busy);
    assert_eq!(m.handle_event(Event::Go(0)), Action::Finish);
    let from: Vec<&str> =
        Machine::DESCRIPTION.transitions.iter().filter(|t| t.to == "Done" && t.event == Some("Go")).map(|t| t.from).collect();
    assert_eq!(from, ["Busy", "Done"], "{:#?}", Machine::DESCRIPTION.transitions);
    assert!(!Machine::DESCRIPTION.mermaid.contains("Idle --> Done"), "{}", Machine::DESCRIPTION.mermaid);
}
