// Rule: `#[initial]`, `#[terminal]`, `#[transient]` and `#[no_carry]` mark
// states; on an event (or on the enum itself) they are reported where
// they are written.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[terminal]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub enum Event {
        Go,
        #[terminal]
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
