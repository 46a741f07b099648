// Deprecated variants of every enum, used by the table and not: the
// generated code raises no deprecation warning of its own.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Nothing, typestate)]
mod door {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Closed,
        Open,
        #[deprecated(note = "doors no longer jam")]
        Jammed,
        #[deprecated(note = "unused")]
        Ajar,
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Push,
        #[deprecated(note = "send Push")]
        Shove(u8),
        Pull,
        #[deprecated(note = "unused")]
        Kick { force: u8 },
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nothing,
        Creak,
        #[deprecated(note = "use Creak")]
        Groan(u8),
        #[deprecated(note = "unused")]
        Squeak,
    }

    transitions! {
        Closed + Push => Open / Creak,
        Closed + Shove(n) [*n > 9] => Jammed / Groan(n),
        Closed + Shove(_) => Open / Creak,
        Open + Pull => Closed / Creak,
        Jammed + Pull => Closed / Nothing,
        Ajar + Push => Open / Nothing,
        Closed + Kick { force } [*force > 0] => Ajar / Nothing,
    }
}

#[allow(deprecated)]
fn main() {
    use door::{Action, Event, Machine, State};
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Shove(10)), Action::Groan(10));
    assert_eq!(m.state(), &State::Jammed);
    assert_eq!(m.handle_event(Event::Pull), Action::Nothing);
    let _ = m.handle_event(Event::Kick { force: 1 });
    assert!(m.state().is_ajar());
    let _ = Action::Squeak;
    let typed = m.into_typed().unwrap();
    let door::typed::Any::Ajar(ajar) = typed else { panic!() };
    let (open, _) = ajar.push();
    assert_eq!(open.state(), &State::Open);
}
