// A `*` row stands only for the states that do not decide its event
// otherwise; one left with no state can never fire, and neither can a
// `* + E => ignore` that covers no state.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
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
        Tick,
        Stop,
    }
    #[actions]
    pub enum Action {
        Nothing,
    }
    transitions! {
        Idle + Go => Busy / Nothing,
        Busy + Go => Idle / Nothing,
        Busy + Tick => Busy / Nothing,
        Idle + Tick => ignore,
        * + Tick => Idle / Nothing,
        Idle | Busy + Stop => Done / Nothing,
        * + Stop => ignore,
    }
}

fn main() {}
