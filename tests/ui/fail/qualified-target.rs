// Rule: a row's target is written by its bare variant name, as its source is.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy { n: u32 },
        #[terminal]
        Done,
    }

    #[events]
    pub enum Event {
        Go,
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
        Finish(u32),
    }

    transitions! {
        Idle + Go => State::Busy { n: 1 } / Wait,
        Busy { n } + Stop => Done / Finish(n),
    }
}

fn main() {}
