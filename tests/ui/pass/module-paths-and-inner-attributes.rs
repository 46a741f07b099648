// A module as people write them: `//!` docs and `#![..]` inside it stay
// inside it; field types reach out with `super::` and `self::` (in types,
// array lengths and qualified paths) and name their enum with `Self`, in
// `new` and in the typed view alike; a private machine whose user ignores
// one landing of a step builds without warnings.
#![deny(warnings)]

#[derive(Debug, Clone, PartialEq)]
pub struct Thing(pub u8);

/// An array length the fields read from the crate root.
pub const N: usize = 4;

/// A trait the fields reach through a qualified path.
pub trait Wider {
    /// The wider type.
    type Of;
}

impl Wider for u8 {
    type Of = u16;
}

#[agent_fsm::state_machine(fallback = Wait, typestate)]
mod m {
    //! A machine that holds a thing.
    #![allow(clippy::large_enum_variant)]

    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle { prev: Option<Box<Self>> },
        Holding { thing: super::Thing, buf: [u8; super::N], tag: self::Tag, wide: <u8 as super::Wider>::Of },
    }

    /// A module-local name the fields reach with `self::`.
    pub type Tag = u8;

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
        Idle + Take(thing) [thing.0 > 0] => Holding { thing: thing.clone(), buf: [thing.0; super::N], tag: 7, wide: 300 } / Held(thing.0),
        Idle + Take(_) => Idle { prev: None } / Wait,
        Holding + Drop => Idle { prev: None } / Wait,
    }
}

fn main() {
    use m::{Action, Event, Machine, State};
    let mut machine = Machine::new(None);
    assert_eq!(machine.handle_event(Event::Take(Thing(2))), Action::Held(2));
    assert_eq!(machine.state(), &State::Holding { thing: Thing(2), buf: [2; N], tag: 7, wide: 300 });

    let idle = m::typed::Idle::new(Some(Box::new(State::Idle { prev: None })));
    match idle.take(Thing(3)) {
        m::typed::IdleAfterTake::Holding(holding, action) => {
            assert_eq!(action, Action::Held(3));
            assert_eq!(holding.thing(), &Thing(3));
            assert_eq!((holding.buf(), holding.tag(), holding.wide()), (&[3; N], &7, &300));
            let (idle, _) = holding.drop();
            assert_eq!(idle.prev(), &None);
        }
        m::typed::IdleAfterTake::Idle(..) => unreachable!("a thing of 3 is held"),
    }
}
