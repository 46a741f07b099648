// Rule: an eventless row needs a `#[transient]` source; a `*` row (the
// states that wait for events) is reported once.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
        #[terminal]
        Done,
    }

    #[events]
    pub enum Event {
        Go,
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
        Finish,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        * => Done / Finish,
    }
}

fn main() {}
