// Rule: the machine type's generated methods are the macro's; an `impl` of
// the user's may add others, not define these again.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[context]
    #[derive(Default)]
    pub struct Limits {
        pub max: u32,
    }

    impl Machine {
        /// A machine with the default limits.
        pub fn new() -> Self {
            Self::with_state(State::Idle, Limits::default())
        }

        /// Fine: the macro has no method of this name.
        pub fn fresh() -> Self {
            Self::with_state(State::Idle, Limits::default())
        }
    }

    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
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
