// A variant's rows decide a pair its base ignores: an added row wins over
// the base's `ignore`, and a `replace` of an `ignore` wins over the base's
// `*` row, as the ignore did. `replace` and `remove` name base rows with or
// without `r#`, as they were written or not.
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

#[agent_fsm::state_machine(extends = crate::job::job_table, name = Raw)]
pub mod raw {
    transitions! {
        replace r#Busy + r#Stop => r#Idle / Halt,
        remove Busy + r#Go,
    }
}

fn main() {
    {
        use raw::{Action, Event, Raw, State};
        let mut r = Raw::new();
        r.handle_event(Event::Go);
        assert_eq!(r.handle_event(Event::Go), Action::Nop, "removed");
        assert_eq!(r.state(), &State::Busy);
        assert_eq!(r.handle_event(Event::Stop), Action::Halt, "replaced");
        assert_eq!(r.state(), &State::Idle);
    }
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
