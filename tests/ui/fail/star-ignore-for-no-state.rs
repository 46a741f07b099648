// Rule: a `*` row must stand for some state; this `ignore` excludes every
// state but a terminal one, which takes no events.
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
        Noise,
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
        * except (A | B) + Noise => ignore,
    }
}

fn main() {}
