// Rule: `A | B` sources cannot destructure fields.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy {
            attempts: u32,
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
        Idle + Go => Busy { attempts: 0 } / Wait,
        Busy { attempts } | Idle + Stop => Done / Finish,
        Busy + Go => Done / Finish,
    }
}

fn main() {}
