// Rule: state markers take no arguments; the error names the marker.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial(yes)]
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
    pub enum Action {
        Wait,
        Finish,
    }

    transitions! {
        Idle + Go => Done / Finish,
    }
}

fn main() {}
