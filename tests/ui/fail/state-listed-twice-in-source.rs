// Rule: a row's `A | B` source names each state once.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub enum Event {
        Ping,
        Done,
    }

    #[actions]
    pub enum Action {
        Wait,
        Pong,
    }

    transitions! {
        Idle | Idle + Ping => Busy / Pong,
        Busy + Done => Idle / Wait,
    }
}

fn main() {}
