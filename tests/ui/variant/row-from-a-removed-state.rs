// Rule: a row of the variant may not use a state it removes; the error
// says the variant removed it.
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
        C + Go => A / Nop,
    }
}

fn main() {}
