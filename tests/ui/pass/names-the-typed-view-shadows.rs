// Field types that the typed view would otherwise misread: `Self`, a state
// named like a prelude type (`Option`) or like a user type, `dyn Any`
// (the view has its own `Any`), and a context named like nothing special.
#![deny(warnings)]

use std::any::Any;

#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    use super::Any;

    /// Shared with a state's name.
    #[derive(Debug, PartialEq)]
    pub struct Error(pub u8);

    #[states]
    #[derive(Debug)]
    pub enum State {
        #[initial]
        Idle,
        Option { pick: Option<u32> },
        Nested { prev: Option<Box<Self>>, depth: u8 },
        Error { last: Error },
        Holding { thing: Box<dyn Any + Send> },
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Pick(Option<u32>),
        Batch(Vec<Self>),
        Fail(Error),
        Hold(Box<dyn Any + Send>),
        Reset,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Count(usize),
    }

    transitions! {
        Idle + Pick(pick) => Option { pick } / Nothing,
        Option + Batch(events) => Nested { prev: None, depth: 1 } / Count(events.len()),
        Nested + Fail(e) => Error { last: e } / Nothing,
        Error + Hold(thing) => Holding { thing } / Nothing,
        * + Reset => Idle / Nothing,
    }
}

fn main() {
    use m::{Action, Error, Event, typed};
    let idle = typed::Idle::new();
    let (option, _) = idle.pick(Some(3));
    assert_eq!(option.pick(), &Some(3));
    let (nested, action) = option.batch(vec![Event::Reset, Event::Reset]);
    assert_eq!(action, Action::Count(2));
    assert!(nested.prev().is_none());
    let (error, _) = nested.fail(Error(7));
    assert_eq!(error.last(), &Error(7));
    let (holding, _) = error.hold(Box::new(5_u32));
    assert_eq!(holding.thing().downcast_ref::<u32>(), Some(&5));
}
