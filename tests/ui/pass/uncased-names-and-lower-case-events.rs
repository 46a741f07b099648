// Names outside the upper/lower-case split: an identifier pattern binds
// unless it starts with a capital, so `数` binds like `n` (and guards see
// it by reference), unless the module declares an item of that name (the
// constant `零`); a unit event spelled in lower case (`r#type`) is the
// event, not a binding. Non-ASCII names survive a snapshot round trip, as
// serde (which lowers ASCII letters only) names them.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait, serde)]
pub mod m {
    #[states]
    #[allow(non_camel_case_types)]
    #[carry(r#type: u32)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Prêt,
        Étape { n: u32 },
        #[transient]
        Check { 数: u32 },
    }

    #[events]
    #[allow(non_camel_case_types)]
    #[derive(Debug)]
    pub enum Event {
        Go(u32),
        r#type,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Got(u32),
    }

    const 零: u32 = 0;

    transitions! {
        Prêt + Go(零) => Prêt / Wait,
        Prêt + Go(数) [*数 > 1] => Check { 数 },
        Prêt + Go(n) => Étape { n } / Got(n),
        Check { 数 } => Étape { n: 数 } / Got(数),
        Étape + r#type [*r#type == 0] => Prêt / Wait,
    }
}

fn main() {
    use m::{Action, Event, Machine, State};
    let mut machine = Machine::new();
    assert_eq!(machine.handle_event(Event::Go(0)), Action::Wait, "the constant");
    assert_eq!(machine.state(), &State::Prêt { r#type: 0 });
    assert_eq!(machine.handle_event(Event::Go(7)), Action::Got(7));
    assert_eq!(machine.state(), &State::Étape { n: 7, r#type: 0 });
    // Raw identifiers read without `r#` in the diagram.
    let mermaid = Machine::DESCRIPTION.mermaid;
    assert!(mermaid.contains("Étape --> Prêt : type [*type == 0] / Wait"), "{mermaid}");

    let json = agent_fsm::snapshot::to_json(&machine).unwrap();
    assert!(json.contains("\"state\":\"Étape\""), "{json}");
    let mut resumed: Machine = agent_fsm::snapshot::from_json(&json).unwrap();
    assert_eq!(resumed.state(), &State::Étape { n: 7, r#type: 0 });

    assert_eq!(resumed.handle_event(Event::r#type), Action::Wait);
    assert_eq!(resumed.state(), &State::Prêt { r#type: 0 });
    assert_eq!(resumed.handle_event(Event::Go(1)), Action::Got(1));
}
