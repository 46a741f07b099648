// Rule: `#[carry]` gives every state fields, and Rust takes explicit
// discriminants on such an enum only under a `#[repr(..)]`.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(count: u32)]
    pub enum State {
        #[initial]
        Idle = 1,
        Busy = 2,
    }

    #[events]
    pub enum Event {
        Go,
        Back,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Back => Idle / Wait,
    }
}

fn main() {}
