// Rule: a transient state resolves within the step that entered it and
// takes no events, so it has nothing to ignore.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        #[transient]
        Checking,
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
        Idle + Go => Checking,
        Checking => Done / Finish,
        Checking + Go => ignore,
        Done + Stop => Idle / Wait,
    }
}

fn main() {}
