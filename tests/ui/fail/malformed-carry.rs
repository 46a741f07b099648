// Rule: `#[carry]` takes `name: Type` pairs.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(log Vec<String>)]
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
