// A `*` row with a `{ .. }` block into a terminal state does not stand for
// that terminal state: its block would run again there. A second `Stop`
// in `Stopped` goes to the catch-all and changes nothing.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[context]
    #[derive(Debug, Default)]
    pub struct Counts {
        pub stops: u32,
    }

    #[states]
    #[carry(log: Vec<&'static str>)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
        #[terminal]
        Stopped,
    }

    #[events]
    pub enum Event {
        Go,
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
        Idle + Go => Busy / Work,
        Busy + Go => Idle / Work,
        * + Stop => { ctx.stops += 1; log.push("stopped"); } Stopped / Halt,
    }
}

fn main() {
    use m::{Action, Counts, Event, Machine, State};
    let from: Vec<&str> =
        Machine::DESCRIPTION.transitions.iter().filter(|t| t.event == Some("Stop")).map(|t| t.from).collect();
    assert_eq!(from, ["Idle", "Busy"]);

    let mut machine = Machine::new(Counts::default());
    machine.handle_event(Event::Go);
    assert_eq!(machine.handle_event(Event::Stop), Action::Halt);
    assert_eq!(machine.handle_event(Event::Stop), Action::Wait);
    assert_eq!(machine.context().stops, 1);
    assert_eq!(machine.state(), &State::Stopped { log: vec!["stopped"] });
}
