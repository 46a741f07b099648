// Rule: one item is the `#[context]`.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[context]
    pub struct Config {
        pub limit: u32,
    }

    #[context]
    pub type Settings = u32;

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
