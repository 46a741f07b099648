// Field types that the typed view would otherwise misread: `Self`, a state
// named like a prelude type (`Option`), a primitive (`str`) or a user type,
// `dyn Any` (the view has its own `Any`), and an initial state with a field
// named `context` in a machine with a context (`new` takes both).
#![deny(warnings)]

use std::any::Any;

#[agent_fsm::state_machine(fallback = Nothing, typestate)]
mod m {
    use super::Any;

    /// Shared with a state's name.
    #[derive(Debug, PartialEq)]
    pub struct Error(pub u8);

    #[context]
    #[derive(Debug, Default)]
    pub struct Settings {
        pub limit: u8,
    }

    #[states]
    #[derive(Debug)]
    #[allow(non_camel_case_types)]
    pub enum State {
        #[initial]
        Idle { context: u8 },
        str,
        Option { pick: Option<u32> },
        Nested { prev: Option<Box<Self>>, depth: u8 },
        Error { last: Error },
        Holding { thing: Box<dyn Any + Send> },
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Pick(Option<u32>),
        Text,
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
        Idle + Text => str / Nothing,
        Option + Batch(events) => Nested { prev: None, depth: 1 } / Count(events.len()),
        Nested + Fail(e) => Error { last: e } / Nothing,
        Error + Hold(thing) => Holding { thing } / Nothing,
        * + Reset => Idle { context: ctx.limit } / Nothing,
    }
}

fn main() {
    use m::{Action, Error, Event, Settings, typed};
    let idle = typed::Idle::new(Settings { limit: 4 }, 9);
    assert!(matches!(idle.state(), m::State::Idle { context: 9 }));
    assert_eq!(idle.context().limit, 4);
    let (text, _) = idle.text();
    assert_eq!(typed::Any::str(text).name(), "str");
    let idle = typed::Idle::new(Settings::default(), 1);
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
