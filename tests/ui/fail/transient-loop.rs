// Rule: transient states may not lead only into each other.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        #[transient]
        A,
        #[transient]
        B,
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
        Idle + Go => A,
        A [false] => Done / Finish,
        A => B,
        B => A,
    }
}

fn main() {}
