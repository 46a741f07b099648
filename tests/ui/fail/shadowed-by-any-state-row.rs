// Rule: an unguarded `*` row shadows later rows for the same event in every state.
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

    transitions! {
        Idle + Go => Done / Finish,
        * + Stop => Done / Finish,
        Idle + Stop [true] => Done / Wait,
    }
}

fn main() {}
