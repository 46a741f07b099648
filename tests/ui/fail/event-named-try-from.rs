// Rule: an event whose typestate method would be `try_from()` would hide
// the view's `TryFrom<Machine>` conversion on the states that take it.
#[agent_fsm::state_machine(fallback = Nop, typestate)]
pub mod machine {
    #[states]
    #[derive(Debug, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        TryFrom,
        Back,
    }

    #[actions]
    #[derive(Debug)]
    pub enum Action {
        Nop,
    }

    transitions! {
        Idle + TryFrom => Busy / Nop,
        Busy + Back => Idle / Nop,
    }
}

fn main() {}
