// A states enum without variants: the error says the machine needs at
// least one state.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {

    }

    #[events]
    pub enum Event {
        Go,
        Failed,
    }

    #[actions]
    pub enum Action {
        Wait,
        GiveUp,
    }

    transitions! {
        Idle + Go => Idle / Wait,
    }
}

fn main() {}
