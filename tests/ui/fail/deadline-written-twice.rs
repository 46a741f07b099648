// Rule: an event is marked `#[deadline]` once; a second mark says nothing
// more and is reported.
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
        #[deadline]
        #[deadline]
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
