// A `*` row's expansions where an earlier specific row (or an ignore)
// decides the event are left out of the table: the description, the
// diagram and the typed view show only what can fire.
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
        #[terminal]
        Done,
    }
    #[events]
    pub enum Event {
        Go,
        Pause,
        Stop,
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nop,
        Rest,
        Halt,
    }
    transitions! {
        Idle + Go => Busy / Nop,
        Busy + Pause => Paused / Nop,
        Paused + Go => Busy / Nop,
        Busy + Stop => Idle / Rest,
        Paused + Stop => ignore,
        * + Stop => Done / Halt,
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
    // `Busy` has its own row, `Paused` ignores `Stop`: `Idle` takes the `*`
    // row, and `Done` too (as a harmless self-loop on a terminal state).
    assert_eq!(stops, ["Busy", "Idle", "Done"]);
    assert!(!Machine::DESCRIPTION.mermaid.contains("Busy --> Done"));
    let mut m = Machine::new();
    m.handle_event(Event::Go);
    assert_eq!(m.handle_event(Event::Stop), Action::Rest);
    assert_eq!(m.handle_event(Event::Stop), Action::Halt);
    assert_eq!(m.state(), &State::Done);
}
