// Rule: `#[deadline]` on a variant of an enum of the module that is not
// the `#[events]` enum (a helper enum, the context) is reported where it
// is written, not as an unknown attribute.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub enum Event {
        Go,
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    pub enum Reason {
        #[deadline]
        Late,
        Done,
    }

    #[context]
    pub enum Mode {
        #[deadline]
        Fast,
        Slow,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Stop => Idle / Wait,
    }
}

fn main() {}
