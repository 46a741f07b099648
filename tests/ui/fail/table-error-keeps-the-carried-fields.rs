// A table with a mistake still gives its states the carried fields a good
// build gives them: code that builds or matches states with them adds no
// error to the real one.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    #[carry(log: Vec<String>)]
    pub enum State {
        #[initial]
        Idle,
        Busy { n: u32 },
        #[no_carry]
        #[terminal]
        Off,
    }
    #[events]
    pub enum Event {
        Go,
        Back,
        Stop,
    }
    #[actions]
    pub enum Action {
        Wait,
        Work,
    }

    transitions! {
        Idle + Go => Busy { n: 1 } / Wrk,
        Busy + Back => Idle / Wait,
        * + Stop => Off / Wait,
    }
}

fn main() {
    let state = m::State::Busy { n: 1, log: vec!["hi".to_owned()] };
    if let m::State::Busy { log, .. } | m::State::Idle { log } = &state {
        drop(log.len());
    }
    let _ = m::State::Off;
}
