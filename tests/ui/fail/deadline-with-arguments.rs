// Rule: `#[deadline]` takes no arguments: the delay is the effects'.
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
        Go,
        #[deadline(secs = 30)]
        Timeout,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Timeout => Idle / Wait,
    }
}

fn main() {}
