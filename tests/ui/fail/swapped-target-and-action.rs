// Rule: the target comes after `=>`, the action after `/`. A state where
// the action goes, and `ignored` for `ignore`, get a hint each.
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }
    #[events]
    pub enum Event {
        Go,
        Stop,
        Ping,
    }
    #[actions]
    pub enum Action {
        Wait,
        Start,
    }
    transitions! {
        Idle + Go => Busy / Start,
        Busy + Stop => Idle / Busy,
        Busy + Ping => ignored,
        Idle + Stop => Idle / Wait,
        Idle + Ping => Idle / Wait,
    }
}

fn main() {}
