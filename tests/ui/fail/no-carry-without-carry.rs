// Rule: `#[no_carry]` leaves a state out of the carried fields; on an enum
// without `#[carry(..)]` it does nothing, and is reported.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        #[no_carry]
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
        Idle + Go => Busy / Wait,
        Busy + Stop => Idle / Wait,
    }
}

fn main() {}
