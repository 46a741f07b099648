// Rule: every state is reachable from the initial one; two states that
// lead only to each other are reported as such, not as states no row
// leads to.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        A,
        B,
        C,
        D,
    }

    #[events]
    pub enum Event {
        Go,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        A + Go => B / Wait,
        B + Go => A / Wait,
        C + Go => D / Wait,
        D + Go => C / Wait,
    }
}

fn main() {}
