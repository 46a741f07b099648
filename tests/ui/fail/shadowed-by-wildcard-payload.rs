// Rule: an unguarded row whose event pattern accepts every payload shadows later rows for that event.
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
        Go(u32),
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
        Finish,
    }

    transitions! {
        Idle + Go(_) => Done / Finish,
        Idle + Go(1) => Done / Wait,
    }
}

fn main() {}
