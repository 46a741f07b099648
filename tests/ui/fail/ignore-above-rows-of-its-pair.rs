// Rule: an `ignore` of a pair with rows takes what they all refuse, so it
// goes below them; with a `*` ignore below, that is the one error (the `*`
// ignore does not stand for a state with rows, so it repeats nothing).
#[agent_fsm::state_machine(fallback = Nothing)]
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
        Dust(u32),
    }
    #[actions]
    pub enum Action {
        Nothing,
        Ok,
    }
    transitions! {
        A + Dust => ignore,
        A + Go => B / Ok,
        B + Go => A / Ok,
        A + Dust(n) [*n > 5] => B / Ok,
        * + Dust => ignore,
    }
}

fn main() {}
