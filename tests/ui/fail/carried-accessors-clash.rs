// Rule: each carried field gets `field()` and `field_mut()`; two fields
// that would give one accessor (`log_mut()` here) are an error at the
// second field.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(log: Vec<u32>, log_mut: u8)]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Go,
        Stop,
    }

    #[actions]
    #[derive(Debug)]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Stop => Idle / Wait,
    }
}

fn main() {}
