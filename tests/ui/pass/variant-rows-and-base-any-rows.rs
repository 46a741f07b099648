// A variant's guarded row in a state where the base's `*` ignore did not
// stand (a base `*` row took the event there) leaves that `*` row in
// place: a refused guard still reaches it. And `replace .. => ignore` of a
// row the base wrote after its `*` ignore is accepted, the pair listed once.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Nothing, export = dust_rows)]
pub mod base {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        A,
        B,
        C,
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
        * except (A) + Dust => C / Swept,
        * + Dust => ignore,
        * + Sweep => ignore,
        A + Sweep => A / Ok,
    }
}

#[agent_fsm::state_machine(extends = dust_rows, name = Careful)]
pub mod careful {
    transitions! {
        B + Dust(n) [*n > 5] => A / Ok,
        replace A + Sweep => ignore,
    }
}

fn main() {
    use careful::{Action, Careful, Event, State};
    let mut m = Careful::new();
    assert_eq!(m.handle_event(Event::Go), Action::Ok);
    assert_eq!(m.handle_event(Event::Dust(1)), Action::Swept);
    assert_eq!(m.state(), &State::C);
    let mut m = Careful::new();
    let _ = m.handle_event(Event::Go);
    assert_eq!(m.handle_event(Event::Dust(9)), Action::Ok);
    assert_eq!(m.state(), &State::A);
    assert_eq!(m.handle_event(Event::Sweep), Action::Nothing);
    let mut sweep: Vec<&str> =
        Careful::DESCRIPTION.ignored.iter().filter(|(_, e)| *e == "Sweep").map(|(s, _)| *s).collect();
    sweep.sort_unstable();
    assert_eq!(sweep, ["A", "B", "C"]);
}
