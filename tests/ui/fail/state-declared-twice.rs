// A state declared twice is rustc's own error at the second one, with no
// follow-on errors at the attribute.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Calling,
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
        Calling + Failed => Idle / GiveUp,
    }
}

fn main() {}
