// Rule: `remove` names a base row as written; `|` inside a field pattern
// is part of the pattern, not a second state (the error lists the rows
// the base has for `A`).
#[agent_fsm::state_machine(fallback = Nop, export = base_table)]
pub mod base {
    #[states]
    pub enum State {
        #[initial]
        A { n: u8 },
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
        A { n: 1 | 2 } + Go => B / X,
        A { n } + Go => A { n: n.wrapping_add(1) } / Nop,
        B + Back => A { n: 0 } / Nop,
    }
}

#[agent_fsm::state_machine(extends = base_table, name = Variant)]
pub mod variant {
    transitions! {
        remove A { n: 1 | 3 } + Go,
    }
}

fn main() {}
