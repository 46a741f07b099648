// A `*` row stands only for the states that do not decide its event
// otherwise: an earlier specific row, or a specific `ignore` above or below
// it. Those expansions are left out of the table, so the description and
// the diagram show only what can fire.
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
        Resting,
        #[terminal]
        Done,
    }
    #[events]
    pub enum Event {
        Go,
        Pause,
        Rest,
        Stop,
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nop,
        Settle,
        Halt,
    }
    transitions! {
        Resting + Stop => ignore,
        Idle + Go => Busy / Nop,
        Idle + Rest => Resting / Nop,
        Resting + Go => Idle / Nop,
        Busy + Pause => Paused / Nop,
        Paused + Go => Busy / Nop,
        Busy + Stop => Idle / Settle,
        * + Stop => Done / Halt,
        Paused + Stop => ignore,
    }
}

fn main() {
    use m::{Action, Event, Machine, State};
    let stops: Vec<&str> = Machine::DESCRIPTION
        .transitions
        .iter()
        .filter(|t| t.event == Some("Stop"))
        .map(|t| t.from)
        .collect();
    // `Busy` has its own row; `Resting` and `Paused` ignore `Stop`. `Idle`
    // takes the `*` row, and `Done` too (a harmless self-loop on a
    // terminal state).
    assert_eq!(stops, ["Busy", "Idle", "Done"]);
    assert!(!Machine::DESCRIPTION.mermaid.contains("Busy --> Done"));
    assert!(!Machine::DESCRIPTION.mermaid.contains("Paused --> Done"));

    let mut m = Machine::new();
    m.handle_event(Event::Rest);
    assert_eq!(m.handle_event(Event::Stop), Action::Nop);
    assert_eq!(m.state(), &State::Resting);
    m.handle_event(Event::Go);
    m.handle_event(Event::Go);
    m.handle_event(Event::Pause);
    assert_eq!(m.handle_event(Event::Stop), Action::Nop);
    assert_eq!(m.state(), &State::Paused);
    m.handle_event(Event::Go);
    assert_eq!(m.handle_event(Event::Stop), Action::Settle);
    assert_eq!(m.state(), &State::Idle);
    assert_eq!(m.handle_event(Event::Stop), Action::Halt);
    assert_eq!(m.state(), &State::Done);
}
