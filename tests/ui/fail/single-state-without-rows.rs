// Rule: a machine of one state needs no exit, but its state needs a row
// (an ignored pair is not one).
#[agent_fsm::state_machine(fallback = Nothing)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
    }

    #[events]
    pub enum Event {
        Ping,
    }

    #[actions]
    pub enum Action {
        Nothing,
    }

    transitions! {
        Idle + Ping => ignore,
    }
}

fn main() {}
