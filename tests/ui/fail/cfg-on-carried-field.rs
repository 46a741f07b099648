// Rule: a carried field is in every build: every state holds it and every
// transition moves it.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(#[cfg(not(debug_assertions))] trace: Vec<u8>, count: u8)]
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
