// Several rules broken at once: every error is reported from one build.
// - `Stpo` is an unknown event,
// - `Idle + Go => Busy` has no action,
// - `Orphan` cannot be reached from `Idle`,
// - `Done + Go => Idle / Wait` leaves a terminal state.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
        Orphan,
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
        Idle + Go => Busy,
        Busy + Stpo => Idle / Wait,
        Busy + Go => Done / Finish,
        Orphan + Go => Done / Finish,
        Done + Go => Idle / Wait,
    }
}

fn main() {}
