// Rule: with `serde`, the macro derives the form snapshots read back; the
// enums may not derive serde themselves or rename their variants.
#[agent_fsm::state_machine(fallback = Wait, serde)]
pub mod machine {
    #[states]
    #[derive(Debug, PartialEq, serde::Serialize)]
    pub enum State {
        #[initial]
        Idle,
        #[serde(rename = "working")]
        Busy,
    }

    #[events]
    pub enum Event {
        Go,
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Stop => Idle / Wait,
    }
}

fn main() {}
