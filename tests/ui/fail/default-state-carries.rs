// Rule: `derive(Default)` on the states builds the `#[default]` variant
// as a unit; a state that gets the `#[carry]` fields is not one.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(log: Vec<String>)]
    #[derive(Default)]
    pub enum State {
        #[initial]
        #[default]
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
        Start,
    }

    transitions! {
        Idle + Go => Busy / Start,
        Busy + Stop => Idle / Wait,
    }
}

fn main() {}
