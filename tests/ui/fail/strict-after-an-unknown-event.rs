// Rule: an unknown event is reported once; strict mode does not then list
// the pairs of the row's state as undecided (the row meant one of them).
#[agent_fsm::state_machine(fallback = Nop, strict)]
mod machine {
    #[states]
    pub enum State {
        #[initial]
        A,
        B,
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
        A + Go => B / X,
        B + Bakc => A / X,
        B + Go => ignore,
        A + Back => ignore,
    }
}

fn main() {}
