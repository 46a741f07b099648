// Rule: the derives the macro manages are not left to `cfg_attr`: `Debug`
// is derived in every build or not by the user at all (the macro cannot
// tell whether to derive it itself), and with `serde` the macro derives
// the serde traits itself.
#[agent_fsm::state_machine(fallback = Wait, serde)]
pub mod machine {
    #[states]
    #[cfg_attr(test, derive(Debug))]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    #[cfg_attr(test, derive(serde::Serialize))]
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
