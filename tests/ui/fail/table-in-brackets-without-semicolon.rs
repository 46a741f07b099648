// Rule: `transitions! [..]` needs a `;` after it, as any macro in item
// position written with brackets does. The compiler says so; the macro
// adds no second error about it, and still checks the table (here, an
// unknown state).
#[agent_fsm::state_machine(fallback = Nop)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        A,
        B,
    }

    #[events]
    pub enum Event {
        Go,
    }

    #[actions]
    pub enum Action {
        Nop,
    }

    transitions! [
        A + Go => B / Nop,
        B + Go => Z / Nop,
    ]
}

fn main() {}
