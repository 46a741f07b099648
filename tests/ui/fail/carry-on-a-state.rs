// Rule: `#[carry(..)]` goes on the `#[states]` enum, not on one state. It
// is read as the enum's all the same, so the rows and the code below that
// use the carried field report nothing more.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        #[carry(log: Vec<String>)]
        Idle,
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
        Idle + Go => { log.push("go".to_owned()); } Busy / Wait,
        Busy + Stop => Idle / Wait,
    }
}

pub fn idle() -> machine::State {
    machine::State::Idle { log: Vec::new() }
}

fn main() {}
