// The role enums themselves may be named with raw identifiers
// (`enum r#State`): the generated code names them as written, and the
// machine works as with plain names.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait, typestate)]
pub mod m {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum r#State {
        #[initial]
        Idle,
        Busy(u32),
    }

    #[events]
    pub enum r#Event {
        Go(u32),
        Stop,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum r#Action {
        Wait,
        Start,
    }

    transitions! {
        Idle + Go(n) => Busy(n) / Start,
        Busy(_) + Stop => Idle / Wait,
    }
}

fn main() {
    use m::{Action, Event, Machine, State};
    let mut machine = Machine::new();
    assert_eq!(machine.handle_event(Event::Go(3)), Action::Start);
    assert_eq!(machine.state(), &State::Busy(3));
    assert_eq!(machine.handle_event(Event::Stop), Action::Wait);
    assert_eq!(State::NAMES, ["Idle", "Busy"]);
    assert!(Machine::DESCRIPTION.mermaid.contains("Idle --> Busy"));
}
