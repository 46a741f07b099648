// Rule: a target's payload fields have the types the state declares (checked by rustc).
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
        Idle + Go => Busy { attempts: "one" } / Wait,
        Busy + Go => Done / Finish,
    }
}

fn main() {}
