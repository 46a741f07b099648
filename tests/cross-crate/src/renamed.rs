//! A machine with every generated part turned on (serde, the typestate
//! view, a fallback, an exported table and a variant of it) in a crate
//! that renamed agent-fsm.

use fsm::StateMachine;

/// A door with a lock, exported so that [`alarmed`] can extend it.
#[fsm::state_machine(fallback = Nothing, serde, typestate, export = door_table, crate = ::fsm)]
pub mod door {
    /// Where the door is, and how often it was opened.
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        /// Shut.
        #[initial]
        Closed {
            /// Times opened.
            opened: u32,
        },
        /// Open.
        Open {
            /// Times opened.
            opened: u32,
        },
    }
    /// What is done to the door.
    #[events]
    #[derive(Debug, Clone)]
    pub enum Event {
        /// Pushed open.
        Push,
        /// Pulled shut.
        Pull,
    }
    /// What the door does.
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        /// It creaks.
        Creak,
        /// Nothing.
        Nothing,
    }
    transitions! {
        Closed { opened } + Push => Open { opened: opened + 1 } / Creak,
        Open { opened } + Pull => Closed { opened } / Nothing,
    }
}

/// The door with an alarm: pushing an open door rings it.
#[fsm::state_machine(extends = crate::renamed::door::door_table, name = Alarmed, crate = ::fsm)]
pub mod alarmed {
    transitions! {
        Open { .. } + Push => Open / Creak,
    }
}

/// Opens and closes `machine` once; the actions it returned.
pub fn swing<M: StateMachine<Event = door::Event>>(machine: &mut M) -> Vec<M::Action> {
    vec![machine.handle_event(door::Event::Push), machine.handle_event(door::Event::Pull)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_runs_and_serializes_through_the_renamed_crate() {
        let mut door = door::Machine::new(0);
        assert_eq!(swing(&mut door), [door::Action::Creak, door::Action::Nothing]);
        assert_eq!(door.state(), &door::State::Closed { opened: 1 });
        let json = serde_json::to_string(door.state()).expect("the state serializes");
        assert_eq!(json, r#"{"state":"closed","data":{"opened":1}}"#);
        assert_eq!(door::Machine::DESCRIPTION.name, "Machine");
        assert_eq!(door.status().to_string(), "Closed");
    }

    #[test]
    fn the_variant_of_a_renamed_crate_has_its_row() {
        let mut alarmed = alarmed::Alarmed::new(0);
        assert!(matches!(alarmed.handle_event(alarmed::Event::Push), alarmed::Action::Creak));
        let rang = alarmed.handle_event(alarmed::Event::Push);
        assert!(matches!(rang, alarmed::Action::Creak), "the variant's row rings: {rang:?}");
        let mut door = door::Machine::new(0);
        door.handle_event(door::Event::Push);
        assert_eq!(door.handle_event(door::Event::Push), door::Action::Nothing, "the base falls back");
    }
}
