// Generated code names the prelude by full path: a module without the
// implicit prelude compiles, and so does one that imports its own `Ok`,
// `Err`, `Some`, `None`, `Option`, `Result`, `Box` and `Default`, in a crate
// with its own `matches!`. A state enum with its own serde form (internally
// tagged) snapshots and resumes.
#![deny(warnings)]

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Status {
    Ok,
    Err,
    Some,
    None,
}

#[allow(dead_code)]
pub struct Option;
#[allow(dead_code)]
pub struct Result;
#[allow(dead_code)]
pub struct Box;
#[allow(dead_code)]
pub struct Default;
#[allow(unused_macros)]
macro_rules! matches {
    ($($t:tt)*) => {
        compile_error!("the user's own matches!")
    };
}

#[agent_fsm::state_machine(fallback = Wait, typestate)]
mod shadowed {
    #[allow(unused_imports)]
    use super::{Box, Default, Option, Result};
    use super::Status::{self, *};

    #[context]
    #[derive(Debug, serde::Serialize, serde::Deserialize)]
    pub struct Ctx {
        pub seen: u32,
    }

    #[states]
    #[carry(log: ::std::vec::Vec<Status>)]
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    #[serde(tag = "state")]
    pub enum State {
        #[initial]
        Idle,
        Busy { s: Status },
        #[transient]
        Checking { s: Status },
        #[terminal]
        #[no_carry]
        Done,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Go(Status),
        Back,
        Stop,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Work,
        Halt,
    }

    transitions! {
        Idle + Go(s) [*s == Ok] => { log.push(s); } Checking { s },
        Checking { s } [*s == Err] => Idle / Wait,
        Checking { s } => Busy { s } / Work,
        Busy + Back => Idle / Wait,
        * + Stop => Done / Halt,
    }
}

#[agent_fsm::state_machine(fallback = Nothing, typestate)]
mod bare {
    #![no_implicit_prelude]

    #[states]
    #[carry(count: u32)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Off,
        On { level: u8 },
        #[transient]
        Deciding { level: u8 },
        #[terminal]
        Gone,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Flip(u8),
        Off,
        Burn,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Light(u8),
        Crackle,
    }

    transitions! {
        Off + Flip(level) [*level > 0] => { count += 1; } Deciding { level },
        Deciding { level } [*level > 9] => Off / Nothing,
        Deciding { level } => On { level } / Light(level),
        On + Off => Off / Nothing,
        * + Burn => Gone / Crackle,
    }
}

fn main() {
    use shadowed::{Action, Event, Machine, State};
    let mut m = Machine::new(shadowed::Ctx { seen: 0 });
    assert_eq!(m.handle_event(Event::Go(Status::Ok)), Action::Work);
    assert!(m.state().is_busy());
    assert_eq!(m.state().log(), ::core::option::Option::Some(&vec![Status::Ok]));
    let json = agent_fsm::snapshot::to_json(&m).unwrap();
    ::core::assert!(json.contains(r#"{"state":"Busy","s":"Ok","log":["Ok"]}"#), "{json}");
    let back: Machine = agent_fsm::snapshot::from_json(&json).unwrap();
    assert_eq!(back.state(), m.state());
    let typed = m.into_typed().unwrap();
    let shadowed::typed::Any::Busy(busy) = typed else { panic!("not busy") };
    let (idle, action) = busy.back();
    assert_eq!(action, Action::Wait);
    assert!(::core::matches!(idle.state(), State::Idle { .. }));
    let _ = (Status::Err, Status::Some, Status::None);
    let mut m = idle.into_machine();
    assert_eq!(m.handle_event(Event::Stop), Action::Halt);

    let mut b = bare::Machine::new();
    assert_eq!(b.handle_event(bare::Event::Flip(3)), bare::Action::Light(3));
    assert_eq!(b.handle_event(bare::Event::Off), bare::Action::Nothing);
    assert_eq!(b.handle_event(bare::Event::Burn), bare::Action::Crackle);
    assert!(b.state().is_terminal());
    let _ = b.into_typed().unwrap();
}
