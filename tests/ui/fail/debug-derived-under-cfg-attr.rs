// Rule: `Debug` is derived in every build or not by the user at all; under
// `cfg_attr` the macro cannot tell whether to derive it itself.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[cfg_attr(test, derive(Debug))]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub enum Event {
        Go,
        Back,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Back => Idle / Wait,
    }
}

fn main() {}
