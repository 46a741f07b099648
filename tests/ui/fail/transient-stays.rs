// Rule: an eventless row may not keep a `#[transient]` state where it is.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        #[transient]
        Check,
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
        Idle + Go => Check,
        Check [false] => Check,
        Check => Done / Finish,
    }
}

fn main() {}
