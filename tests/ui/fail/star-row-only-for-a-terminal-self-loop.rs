// Rule: a `*` row must stand for some state that takes events; one left
// with only a terminal state's self-loop stands for none.
#[agent_fsm::state_machine(fallback = Nop)]
mod machine {
    #[states]
    pub enum State {
        #[initial]
        A,
        B,
        #[terminal]
        Z,
    }
    #[events]
    pub enum Event {
        Go,
        Quit,
    }
    #[actions]
    pub enum Action {
        Nop,
        X,
    }
    transitions! {
        A + Go => B / X,
        B + Go => A / X,
        * + Quit => Z / X,
        * except (A | B) + Go => Z / X,
    }
}

fn main() {}
