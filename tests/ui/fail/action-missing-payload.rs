// Rule: an action with a payload needs it (rustc's error, at the row).
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
    pub enum DoorAction {
        Wait,
        Show(String),
    }

    transitions! {
        Idle + Go => Done / Show,
    }
}

fn main() {}
