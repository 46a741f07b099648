// Rule: `#[deadline]` marks an event variant: on a state, an action or the
// events enum itself, it is reported where it is written.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        #[deadline]
        Busy,
    }

    #[events]
    #[deadline]
    pub enum Event {
        Go,
        Stop,
    }

    #[actions]
    pub enum Action {
        #[deadline]
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Stop => Idle / Wait,
    }
}

fn main() {}
