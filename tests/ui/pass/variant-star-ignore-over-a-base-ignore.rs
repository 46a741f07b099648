// A variant's `* + E => ignore` may cover a state the base already
// ignores `E` in: the overlap is no mistake, and the variant's enums add
// no second dead-code warning at the base's declarations.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Nop, export = door_table)]
pub mod door {
    #[states]
    pub enum State {
        #[initial]
        Closed,
        Open,
    }
    #[events]
    pub enum Event {
        Push,
        Pull,
        Knock,
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nop,
    }
    transitions! {
        Closed + Push => Open / Nop,
        Open + Pull => Closed / Nop,
        Open + Knock => ignore,
    }
}

#[agent_fsm::state_machine(extends = door_table, name = Quiet)]
pub mod quiet {
    transitions! {
        * + Knock => ignore,
    }
}

fn main() {
    let mut m = door::Machine::new();
    for e in [door::Event::Push, door::Event::Knock, door::Event::Pull] {
        assert_eq!(m.handle_event(e), door::Action::Nop);
    }
    let mut q = quiet::Quiet::new();
    assert_eq!(q.handle_event(quiet::Event::Knock), quiet::Action::Nop);
    assert_eq!(quiet::Quiet::DESCRIPTION.ignored, &[("Closed", "Knock"), ("Open", "Knock")]);
}
