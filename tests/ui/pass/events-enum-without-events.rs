// A machine without events: one state, initial and terminal, an empty
// events enum and an empty table. Its generated code (names, kinds, the
// step function, the typed view, serde) matches an event that cannot
// exist, and compiles.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Nothing, typestate, strict)]
mod m {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        #[terminal]
        Only,
    }

    #[events]
    pub enum Event {}

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
    }

    transitions! {}
}

fn main() {
    use m::{Event, Machine, State};
    let m = Machine::new();
    assert_eq!(m.state(), &State::Only);
    assert!(m.state().is_terminal());
    assert!(Event::NAMES.is_empty());
    assert!(Machine::DESCRIPTION.transitions.is_empty());
    let m::typed::Any::Only(only) = m.into_typed().expect("not poisoned");
    assert_eq!(only.state(), &State::Only);
}
