// Rule: a variant's `ignore` that the base's table already makes is
// reported at the variant's row, the one its author can delete (here the
// base's `* + Knock => ignore` covers the added state too).
#[agent_fsm::state_machine(fallback = Nop, export = door_table)]
pub mod door {
    #[states]
    pub enum State {
        #[initial]
        Closed,
        Open,
    }
    #[events]
    pub enum Event {
        Push,
        Pull,
        Knock,
    }
    #[actions]
    pub enum Action {
        Nop,
    }
    transitions! {
        Closed + Push => Open / Nop,
        Open + Pull => Closed / Nop,
        * + Knock => ignore,
    }
}

#[agent_fsm::state_machine(extends = door_table, name = Locked)]
pub mod locked {
    #[states]
    pub enum More {
        Jammed,
    }
    transitions! {
        Closed + Pull => Jammed / Nop,
        Jammed + Push => Closed / Nop,
        Jammed + Knock => ignore,
    }
}

fn main() {}
