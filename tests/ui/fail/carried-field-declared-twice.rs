// Rule: a state does not redeclare a `#[carry]` field.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(log: Vec<String>)]
    pub enum State {
        #[initial]
        Idle,
        Busy {
            log: Vec<String>,
        },
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
        Busy + Go => Done / Finish,
    }
}

fn main() {}
