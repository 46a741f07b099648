// A `*` or `A | B` row whose target is one of the states it stands for
// moves out of every one of them when its code names a carried field, so
// that field is a value in the block and the action wherever the row
// fires (in place in `Idle` alone it would be `&mut`).
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Nop)]
mod m {
    #[states]
    #[carry(hits: u32, log: Vec<String>)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy { n: u32 },
        Paused,
    }

    #[events]
    pub enum Event {
        Go,
        Pause,
        Hit(String),
        Tick,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nop,
        Went,
        Count(u32),
    }

    transitions! {
        Idle + Go => Busy { n: 1 } / Went,
        Busy + Pause => Paused / Nop,
        * + Hit(s) => { log.push(s); hits += 1; } Idle / Count(hits),
        Idle | Paused + Tick => { hits += 10; } Paused / Count(hits),
    }
}

fn main() {
    use m::{Action, Event, Machine, State};
    let mut machine = Machine::new();
    assert_eq!(machine.handle_event(Event::Hit("a".into())), Action::Count(1));
    assert_eq!(machine.handle_event(Event::Go), Action::Went);
    assert_eq!(machine.handle_event(Event::Pause), Action::Nop);
    assert_eq!(machine.handle_event(Event::Tick), Action::Count(11));
    assert_eq!(machine.handle_event(Event::Hit("b".into())), Action::Count(12));
    assert_eq!(machine.handle_event(Event::Tick), Action::Count(22));
    assert_eq!(machine.state(), &State::Paused { hits: 22, log: vec!["a".into(), "b".into()] });
}
