// A variant's guarded row for a pair the base ignores: when its guard
// refuses, the base's `*` row, which the ignore kept out of that state,
// stays out (the base's ignore takes the event: the fallback action).
// `replace .. => ignore` beside a base `*` ignore, and `remove state` of
// a raw name, work too.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Nothing, export = dust_table)]
pub mod base {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        A,
        B,
        C,
        r#D,
    }
    #[events]
    pub enum Event {
        Go,
        Dust(u32),
        Sweep,
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Ok,
        Swept,
    }
    transitions! {
        A + Go => B / Ok,
        B + Go => C / Ok,
        C + Go => A / Ok,
        C + Sweep => D / Ok,
        D + Go => A / Ok,
        A + Dust => ignore,
        * + Dust(_) => B / Swept,
        A + Sweep => A / Ok,
        * + Sweep => ignore,
    }
}

#[agent_fsm::state_machine(extends = dust_table, name = Careful)]
pub mod careful {
    transitions! {
        A + Dust(n) [*n > 5] => C / Ok,
        replace A + Sweep => ignore,
        remove C + Sweep,
        remove state r#D,
    }
}

fn main() {
    let mut m = careful::Careful::new();
    assert_eq!(m.handle_event(careful::Event::Dust(1)), careful::Action::Nothing);
    assert_eq!(m.state(), &careful::State::A);
    assert_eq!(m.handle_event(careful::Event::Dust(9)), careful::Action::Ok);
    assert_eq!(m.state(), &careful::State::C);
    assert_eq!(careful::Careful::new().handle_event(careful::Event::Sweep), careful::Action::Nothing);
    assert_eq!(careful::State::NAMES, ["A", "B", "C"]);
    assert!(careful::Careful::DESCRIPTION.ignored.contains(&("A", "Sweep")));
    assert!(!careful::Careful::DESCRIPTION.transitions.iter().any(|t| t.from == "A" && t.action == Some("Swept")));
}
