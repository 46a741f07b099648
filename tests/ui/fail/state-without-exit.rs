// Rule: a state that is not `#[terminal]` needs a row leaving it.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
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
        Finish,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Idle + Stop => Done / Finish,
        Busy + Go => Busy / Wait,
    }
}

fn main() {}
