// Rule: the `#[context]` is not generic.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[context]
    pub struct Config<T> {
        pub limit: T,
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
