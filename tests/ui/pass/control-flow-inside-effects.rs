// Loops, labelled blocks and closures inside a row's effects are the
// block's own: leaving them is fine, in a transient state's rows too.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        #[transient]
        Scan { items: Vec<u32> },
        Found { at: Option<usize> },
    }
    #[events]
    pub enum Event {
        Go(Vec<u32>),
        Back,
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Report(usize),
    }
    transitions! {
        Idle + Go(items) => Scan { items },
        Scan { items } => {
            let mut at = None;
            for (i, x) in items.iter().enumerate() {
                if *x == 0 { continue; }
                if *x > 10 { at = Some(i); break; }
            }
            let tries = 'count: {
                if at.is_none() { break 'count 0; }
                loop { break 1; }
            };
            let first = || -> Option<u32> { return items.first().copied(); };
            let _ = first();
        } Found { at } / Report(tries),
        Found + Back => Idle / Wait,
    }
}

fn main() {
    use m::{Action, Event, Machine, State};
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Go(vec![0, 3, 12, 40])), Action::Report(1));
    assert_eq!(m.state(), &State::Found { at: Some(2) });
}
