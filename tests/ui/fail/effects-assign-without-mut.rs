// Rule: a moving row's effects may assign a binding only if it is bound `mut` (checked by rustc).
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy {
            n: u32,
        },
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
        Idle + Go => Busy { n: 0 } / Wait,
        Busy { n } + Go => { n += 1; } Done / Finish,
    }
}

fn main() {}
