// A variant's rows decide a pair its base ignores: an added row wins over
// the base's `ignore`, and a `replace` of an `ignore` wins over the base's
// `*` row, as the ignore did.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Nop, export = job_table)]
pub mod job {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
        #[terminal]
        Done,
    }
    #[events]
    pub enum Event {
        Go,
        Stop,
        Noise,
    }
    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Nop,
        Halt,
        Listen,
    }
    transitions! {
        Idle + Go => Busy / Nop,
        Busy + Go => Idle / Nop,
        * + Stop => Done / Halt,
        Busy + Stop => ignore,
        Idle + Noise => ignore,
    }
}

#[agent_fsm::state_machine(extends = crate::job::job_table, name = Careful)]
pub mod careful {
    transitions! {
        replace Busy + Stop => Idle / Halt,
        Idle + Noise => Idle / Listen,
    }
}

fn main() {
    use careful::{Action, Careful, Event, State};
    let mut c = Careful::new();
    assert_eq!(c.handle_event(Event::Noise), Action::Listen);
    c.handle_event(Event::Go);
    assert_eq!(c.handle_event(Event::Stop), Action::Halt);
    assert_eq!(c.state(), &State::Idle);
    // The base still ignores both.
    let mut j = job::Machine::new();
    assert_eq!(j.handle_event(job::Event::Noise), job::Action::Nop);
    j.handle_event(job::Event::Go);
    assert_eq!(j.handle_event(job::Event::Stop), job::Action::Nop);
    assert_eq!(j.state(), &job::State::Busy);
}
