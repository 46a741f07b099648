// Rule: `A | B` rows cannot destructure fields, on the last state either;
// the error points at the fields.
#[agent_fsm::state_machine(fallback = Nop)]
mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy { n: u8 },
        Other { n: u8 },
    }
    #[events]
    pub enum Event {
        Go,
        Back,
    }
    #[actions]
    pub enum Action {
        Nop,
        X,
    }
    transitions! {
        Idle + Go => Busy { n: 0 } / X,
        Busy | Other { n } + Back => Idle / X,
    }
}

fn main() {}
