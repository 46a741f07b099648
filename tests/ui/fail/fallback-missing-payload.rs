// Rule: the fallback action needs its payload (rustc's error, at the argument).
#[agent_fsm::state_machine(fallback = Show)]
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
        Idle + Go => Done / Show(String::new()),
    }
}

fn main() {}
