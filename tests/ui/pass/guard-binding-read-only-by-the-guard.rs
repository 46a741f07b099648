// A name a guard's `let` binds and only the guard reads (`b` below, tested
// by the guard's next condition) is not "unused": as in Rust's own
// `if let .. && b.is_empty()`, no warning comes out, in a row that keeps
// its state and in one that moves it.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Nothing)]
pub mod machine {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy { total: u32 },
    }

    #[events]
    pub enum Event {
        Pair(Option<(u32, String)>),
        Stop,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Took(u32),
    }

    transitions! {
        Idle + Pair(p) [let Some((n, name)) = p && !name.is_empty()] => Busy { total: *n } / Took(*n),
        Busy { total } + Pair(p) [let Some((n, name)) = p && let Some(c) = name.chars().next() && c != 'x']
            => { *total += n; } Busy / Took(*total),
        Busy + Stop => Idle / Nothing,
        Idle + Stop => ignore,
    }
}

fn main() {
    use machine::{Action, Event, Machine};
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Pair(Some((1, String::new())))), Action::Nothing);
    assert_eq!(m.handle_event(Event::Pair(Some((2, "a".into())))), Action::Took(2));
    assert_eq!(m.handle_event(Event::Pair(Some((3, "x".into())))), Action::Nothing);
    assert_eq!(m.handle_event(Event::Pair(Some((4, "b".into())))), Action::Took(6));
    assert_eq!(m.handle_event(Event::Stop), Action::Nothing);
}
