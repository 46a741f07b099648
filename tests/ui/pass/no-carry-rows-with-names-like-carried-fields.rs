// A row leaving a `#[no_carry]` state may not read a carried field, but it
// may use the name otherwise: a struct's field, a closure's parameter, a
// binding of its own, a function, a macro, a path, a label, a format
// argument or text in a string.
#![allow(unused_variables, clippy::let_unit_value)]

#[agent_fsm::state_machine(fallback = Nothing)]
pub mod machine {
    pub struct S {
        pub log: u8,
    }

    pub fn log(x: u8) -> u8 {
        x
    }

    macro_rules! log {
        () => {
            7u8
        };
    }

    #[states]
    #[carry(log: Vec<u8>)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        A,
        #[no_carry]
        B,
        C,
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Go,
        Field,
        Closure(u8),
        Bindings,
        Calls,
        Text,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Msg(u8),
    }

    transitions! {
        A + Go => B / Nothing,
        B + Field => { let s = S { log: 1 }; } C { log: vec![s.log] } / Msg(S { log: 2 }.log),
        B + Closure(n) [[1u8].iter().any(|log| log == n)] => C { log: (|log: Vec<u8>| log)(vec![]) } / Msg((|log: u8| log)(n)),
        B + Bindings => {
            { let log = 1u8; }
            match Some(2u8) { Some(log) => {} None => {} }
            for log in 0..2u8 { let _ = log; }
        } C { log: vec![] } / Nothing,
        B + Calls => { let x = f64::log(8.0, 2.0); let y = self::log(1); } C { log: vec![log!(), log(3)] } / Msg(log(4)),
        B + Text => { let _ = format!("{log}", log = 1); let _ = "hello {log}"; 'log: loop { break 'log; } } C { log: vec![] } / Nothing,
        C + Go => A / Nothing,
        B + Go => A { log: vec![] } / Nothing,
    }
}

fn main() {
    use machine::{Action, Event, Machine, State};
    let mut m = Machine::new();
    m.handle_event(Event::Go);
    assert_eq!(m.handle_event(Event::Closure(1)), Action::Msg(1));
    assert_eq!(m.state(), &State::C { log: vec![] });
    m.handle_event(Event::Go);
    m.handle_event(Event::Go);
    assert_eq!(m.handle_event(Event::Calls), Action::Msg(4));
    assert_eq!(m.state(), &State::C { log: vec![7, 3] });
    m.handle_event(Event::Go);
    m.handle_event(Event::Go);
    assert_eq!(m.handle_event(Event::Field), Action::Msg(2));
    assert_eq!(m.state(), &State::C { log: vec![1] });
}
