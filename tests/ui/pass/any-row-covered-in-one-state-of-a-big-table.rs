// A table big enough that its step function is split over several
// functions (more than 128 arms for events several states take), with a
// `*` row that one state's own rows cover: the row still fires in every
// other state, and the split code is no more reported as unreachable than
// the code of a small table is.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        S0,
        S1,
        S2,
        S3,
        S4,
        S5,
        S6,
        S7,
        S8,
        S9,
        S10,
        S11,
        S12,
        S13,
        S14,
        S15,
        S16,
        S17,
        S18,
        S19,
        S20,
        S21,
        S22,
        S23,
        S24,
        S25,
        S26,
        S27,
        S28,
        S29,
        S30,
        S31,
        S32,
        S33,
        S34,
        S35,
        S36,
        S37,
        S38,
        S39,
        S40,
        S41,
        S42,
        S43,
        S44,
    }

    #[events]
    pub enum Event {
        Next,
        Go(Option<u32>),
        Reset,
        Stay,
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
        Step,
        Some,
        None,
        Any,
    }

    transitions! {
        S0 + Go(Some(_)) => S1 / Some,
        S0 + Go(None) => S2 / None,
        S0 + Next => S1 / Step,
        S1 + Next => S2 / Step,
        S2 + Next => S3 / Step,
        S3 + Next => S4 / Step,
        S4 + Next => S5 / Step,
        S5 + Next => S6 / Step,
        S6 + Next => S7 / Step,
        S7 + Next => S8 / Step,
        S8 + Next => S9 / Step,
        S9 + Next => S10 / Step,
        S10 + Next => S11 / Step,
        S11 + Next => S12 / Step,
        S12 + Next => S13 / Step,
        S13 + Next => S14 / Step,
        S14 + Next => S15 / Step,
        S15 + Next => S16 / Step,
        S16 + Next => S17 / Step,
        S17 + Next => S18 / Step,
        S18 + Next => S19 / Step,
        S19 + Next => S20 / Step,
        S20 + Next => S21 / Step,
        S21 + Next => S22 / Step,
        S22 + Next => S23 / Step,
        S23 + Next => S24 / Step,
        S24 + Next => S25 / Step,
        S25 + Next => S26 / Step,
        S26 + Next => S27 / Step,
        S27 + Next => S28 / Step,
        S28 + Next => S29 / Step,
        S29 + Next => S30 / Step,
        S30 + Next => S31 / Step,
        S31 + Next => S32 / Step,
        S32 + Next => S33 / Step,
        S33 + Next => S34 / Step,
        S34 + Next => S35 / Step,
        S35 + Next => S36 / Step,
        S36 + Next => S37 / Step,
        S37 + Next => S38 / Step,
        S38 + Next => S39 / Step,
        S39 + Next => S40 / Step,
        S40 + Next => S41 / Step,
        S41 + Next => S42 / Step,
        S42 + Next => S43 / Step,
        S43 + Next => S44 / Step,
        S44 + Next => S0 / Step,
        * + Go(_) => S0 / Any,
        * + Reset => S0 / Wait,
        * + Stay => S0 / Wait,
    }
}

fn main() {
    use m::{Action, Event, Machine, State};
    let mut m = Machine::new();
    assert_eq!(m.handle_event(Event::Go(None)), Action::None);
    assert_eq!(m.state(), &State::S2);
    assert_eq!(m.handle_event(Event::Next), Action::Step);
    assert_eq!(m.handle_event(Event::Go(Some(4))), Action::Any);
    assert_eq!(m.state(), &State::S0);
    assert_eq!(m.handle_event(Event::Go(Some(4))), Action::Some);
    assert_eq!(m.state(), &State::S1);
    assert_eq!(m.handle_event(Event::Stay), Action::Wait);
    assert_eq!(m.handle_event(Event::Reset), Action::Wait);
    assert_eq!(m.state(), &State::S0);
}
