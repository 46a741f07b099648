// Rule: `#[during_work]` marks an event variant and takes no arguments;
// on a state, an action or the events enum itself, or with arguments, it
// is reported where it is written.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        #[during_work]
        Busy,
    }

    #[events]
    #[during_work]
    pub enum Event {
        Go,
        #[during_work(always)]
        Stop,
    }

    #[actions]
    pub enum Action {
        #[during_work]
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Stop => Idle / Wait,
    }
}

fn main() {}
