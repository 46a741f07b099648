// A variant's `replace` of a base `*` row stands where the base's row was:
// a base ignore the variant's own guarded row took over keeps it out, as it
// kept the base's row out. A base `*` ignore whose every state the
// variant's rows take over just drops out (no "covers no state" error).
// A `replace * + E => ignore` yields to a base ignore written before it.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Nothing, export = dust_base)]
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
        Noise,
        Hum,
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Ok,
        Swept,
        Big,
    }
    transitions! {
        A + Go => B / Ok,
        B + Go => C / Ok,
        C + Go => A / Ok,
        A + Dust => ignore,
        * + Dust => C / Swept,
        * except (A) + Noise => A / Swept,
        * + Noise => ignore,
        A + Hum => B / Swept,
        B + Hum => ignore,
        * + Hum => C / Swept,
    }
}

#[agent_fsm::state_machine(extends = dust_base, name = Variant)]
pub mod variant {
    transitions! {
        A + Dust(n) [*n > 5] => B / Big,
        replace * + Dust => C / Big,
        A + Noise [ctx_free()] => B / Big,
        replace * + Hum => ignore,
    }

    fn ctx_free() -> bool {
        false
    }
}

fn main() {
    use variant::{Action, Event, State, Variant};
    let mut m = Variant::new();
    assert_eq!(m.handle_event(Event::Dust(1)), Action::Nothing);
    assert_eq!(m.state(), &State::A);
    assert_eq!(m.handle_event(Event::Dust(9)), Action::Big);
    assert_eq!(m.state(), &State::B);
    assert_eq!(m.handle_event(Event::Dust(1)), Action::Big);
    assert_eq!(m.state(), &State::C);
    assert!(!Variant::DESCRIPTION.transitions.iter().any(|t| t.from == "A" && t.action == Some("Swept")
        && t.event == Some("Dust")));
    let mut m = Variant::new();
    assert_eq!(m.handle_event(Event::Noise), Action::Nothing);
    assert_eq!(m.handle_event(Event::Hum), Action::Swept);
    assert_eq!(m.state(), &State::B);
    assert_eq!(m.handle_event(Event::Hum), Action::Nothing);
    assert_eq!(m.state(), &State::B);
}
