// Rule: only `fallback`, `strict` and `name` are arguments.
#[agent_fsm::state_machine(fallback = Wait, strcit)]
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

    transitions! {
        Idle + Go => Done / Finish,
    }
}

fn main() {}
