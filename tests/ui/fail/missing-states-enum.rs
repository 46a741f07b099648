// Rule: the module holds a `#[states]` enum.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    pub enum State {
        Idle,
        Done,
    }

    #[events]
    pub enum Event {
        Go,
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
