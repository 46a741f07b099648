// Rule: each base state is removed once.
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
        Back,
    }
    #[actions]
    pub enum Action {
        Nop,
    }
    transitions! {
        A + Go => B / Nop,
        B + Go => C / Nop,
        B + Back => A / Nop,
        C + Back => A / Nop,
    }
}

#[agent_fsm::state_machine(extends = base_table, name = Variant)]
pub mod variant {
    transitions! {
        remove state C,
        replace B + Go => A / Nop,
        remove state C,
    }
}

fn main() {}
