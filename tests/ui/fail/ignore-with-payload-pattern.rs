// Rule: `ignore` takes the whole event, not a payload pattern.
#[agent_fsm::state_machine(fallback = Wait, strict)]
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
        Go(u32),
        Stop(u32),
    }

    #[actions]
    pub enum Action {
        Wait,
        Finish,
    }

    transitions! {
        Idle + Go(_) => Done / Finish,
        Idle + Stop(0) => ignore,
    }
}

fn main() {}
