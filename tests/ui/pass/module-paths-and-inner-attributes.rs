// A module as people write them: `//!` docs and `#![..]` inside it stay
// inside it; field types reach out with `super::` and name their enum
// with `Self`, in `new` and in the typed view alike; a private machine
// whose user ignores one landing of a step builds without warnings.
#![deny(warnings)]

#[derive(Debug, Clone, PartialEq)]
pub struct Thing(pub u8);

#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    //! A machine that holds a thing.
    #![allow(clippy::large_enum_variant)]

    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle { prev: Option<Box<Self>> },
        Holding { thing: super::Thing },
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Take(super::Thing),
        Drop,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Held(u8),
    }

    transitions! {
        Idle + Take(thing) [thing.0 > 0] => Holding { thing: thing.clone() } / Held(thing.0),
        Idle + Take(_) => Idle { prev: None } / Wait,
        Holding + Drop => Idle { prev: None } / Wait,
    }
}

fn main() {
    use m::{Action, Event, Machine, State};
    let mut machine = Machine::new(None);
    assert_eq!(machine.handle_event(Event::Take(Thing(2))), Action::Held(2));
    assert_eq!(machine.state(), &State::Holding { thing: Thing(2) });

    let idle = m::typed::Idle::new(Some(Box::new(State::Idle { prev: None })));
    match idle.take(Thing(3)) {
        m::typed::IdleAfterTake::Holding(holding, action) => {
            assert_eq!(action, Action::Held(3));
            assert_eq!(holding.thing(), &Thing(3));
            let (idle, _) = holding.drop();
            assert_eq!(idle.prev(), &None);
        }
        m::typed::IdleAfterTake::Idle(..) => unreachable!("a thing of 3 is held"),
    }
}
