// KNOWN BUG. Rule: an eventless row needs a `#[transient]` source.
// Expected: one error for `* => ..`. Got: the same error three times at the
// same span, one per state, including `mark `Done` `#[transient]`` for the
// terminal target.
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
