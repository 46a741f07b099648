// Rule: one enum has the `#[states]` role.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
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

    #[states]
    pub enum Other {
        A,
    }

    transitions! {
        Idle + Go => Done / Finish,
    }
}

fn main() {}
