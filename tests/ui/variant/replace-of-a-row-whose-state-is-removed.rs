// Rule: `remove state C` drops every row leaving `C`; a `replace` of one
// of them would be dropped with it, silently, so it is an error.
#[agent_fsm::state_machine(fallback = Nop, export = base_table)]
pub mod base {
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
        Skip,
    }
    #[actions]
    pub enum Action {
        Nop,
        Loud,
    }
    transitions! {
        A + Go => B / Nop,
        B + Go => A / Nop,
        A + Skip => C / Nop,
        C + Go => A / Nop,
    }
}

#[agent_fsm::state_machine(extends = base_table, name = Variant)]
pub mod variant {
    transitions! {
        remove A + Skip,
        replace C + Go => B / Loud,
        remove state C,
    }
}

fn main() {}
