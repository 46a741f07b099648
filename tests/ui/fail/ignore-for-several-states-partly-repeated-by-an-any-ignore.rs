// Rule: an `ignore` for several states, some of which a later `*` ignore
// also covers: the error names those to take out, not the whole row.
#[agent_fsm::state_machine(fallback = Nothing)]
mod machine {
    #[states]
    pub enum State {
        #[initial]
        A,
        B,
        C,
    }
    #[events]
    pub enum Event {
        Go,
        Dust,
    }
    #[actions]
    pub enum Action {
        Nothing,
        Ok,
    }
    transitions! {
        A + Go => B / Ok,
        B + Go => C / Ok,
        C + Go => A / Ok,
        A | B + Dust => ignore,
        * except (A) + Dust => ignore,
    }
}

fn main() {}
