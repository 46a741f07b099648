// Rule: role attributes take no arguments; one error, and the enum still
// counts as the state enum.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states(x)]
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
