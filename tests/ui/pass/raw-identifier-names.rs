// Variants written as raw identifiers (`r#type`) are named without `r#`,
// as serde names them: `name()`, `NAMES`, the diagram and snapshots agree,
// and the typed view's methods take the raw form where the name is a
// keyword. A name that is not a keyword may be written either way in a
// row (`r#Stop` and `Stop` are one identifier to Rust).
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait, serde, typestate)]
pub mod m {
    #[states]
    #[allow(non_camel_case_types)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        r#type { n: u32 },
    }

    #[events]
    #[allow(non_camel_case_types)]
    #[derive(Debug)]
    pub enum Event {
        r#move(u32),
        Stop,
        r#Pause,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Start,
        r#Hold,
    }

    transitions! {
        Idle + r#move(n) => r#type { n } / Start,
        r#type + r#Stop => r#Idle / Wait,
        r#type + Pause => r#type / Hold,
    }
}

fn main() {
    use m::{Event, Machine, State};
    let mut machine = Machine::new();
    machine.handle_event(Event::r#move(3));
    assert_eq!(machine.state().name(), "type");
    assert_eq!(State::NAMES, ["Idle", "type"]);
    assert!(machine.state().is_type());
    assert!(Machine::DESCRIPTION.mermaid.contains("Idle --> type"));

    let json = agent_fsm::snapshot::to_json(&machine).unwrap();
    assert!(json.contains("\"state\":\"type\""), "{json}");
    let resumed: Machine = agent_fsm::snapshot::from_json(&json).unwrap();
    assert_eq!(resumed.state(), &State::r#type { n: 3 });

    assert_eq!(machine.handle_event(Event::Pause), m::Action::Hold);
    assert_eq!(machine.handle_event(Event::Stop), m::Action::Wait);
    assert_eq!(machine.state(), &State::Idle);

    let (typed, _) = m::typed::Idle::new().r#move(5);
    assert_eq!(typed.state(), &State::r#type { n: 5 });
    let (typed, action) = typed.pause();
    assert_eq!(action, m::Action::Hold);
    let (typed, _) = typed.stop();
    assert_eq!(typed.state(), &State::Idle);
}
