// Two mistakes in one row, an unknown event and an unknown action: both
// are reported from one build.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Calling,
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
        Idle + Go => Calling / Wait,
        Calling + Faild => Idle / GivUp,
    }
}

fn main() {}
