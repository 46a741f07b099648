// Rule: an `ignore` for several states, one of which the base already
// ignores: the error names that state, to take out of the row.
#[agent_fsm::state_machine(fallback = Nop, export = base_table)]
pub mod base {
    #[states]
    pub enum State {
        #[initial]
        A,
        B,
    }
    #[events]
    pub enum Event {
        Go,
        Dust,
    }
    #[actions]
    pub enum Action {
        Nop,
    }
    transitions! {
        A + Go => B / Nop,
        B + Go => A / Nop,
        A + Dust => ignore,
    }
}

#[agent_fsm::state_machine(extends = base_table, name = Variant)]
pub mod variant {
    transitions! {
        A | B + Dust => ignore,
    }
}

fn main() {}
