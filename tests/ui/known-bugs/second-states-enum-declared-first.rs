// KNOWN BUG. Rule: one enum has the `#[states]` role.
// Expected: only the `a second #[states] enum` error. Got: the first enum
// (`Other`) wins and three cascading errors follow (unknown state `Idle`, no
// initial state, `A` has no way out).
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum Other {
        A,
    }

    #[states]
    pub enum State {
        #[initial]
        Idle,
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
        Idle + Go => Done / Finish,
    }
}

fn main() {}
