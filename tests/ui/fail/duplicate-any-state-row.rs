// Rule: two identical `*` rows are a duplicate.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
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
        Idle + Go => Busy / Wait,
        Busy + Go => Idle / Wait,
        * + Stop => Done / Finish,
        * + Stop => Done / Finish,
    }
}

fn main() {}
