// Rule: every state of `A | B + Event` must be a variant of the `#[states]` enum.
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
        Idle | Bussy + Stop => Done / Finish,
        Busy + Go => Done / Finish,
    }
}

fn main() {}
