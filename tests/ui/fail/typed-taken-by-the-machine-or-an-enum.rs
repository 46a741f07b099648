// Rule: with `typestate`, the view is generated as `mod typed`, so nothing
// else in the module may take that name: not the machine type
// (`name = typed`), and not one of the machine's own enums. Each is
// reported at the name, not as rustc's clash at the attribute.
#![allow(non_camel_case_types)]

#[agent_fsm::state_machine(fallback = Wait, name = typed, typestate)]
pub mod named {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
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
        Idle + Go => Busy / Wait,
        Busy + Go => Idle / Wait,
    }
}

#[agent_fsm::state_machine(fallback = Wait, typestate)]
pub mod events {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub enum typed {
        Go,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Go => Idle / Wait,
    }
}

fn main() {}
