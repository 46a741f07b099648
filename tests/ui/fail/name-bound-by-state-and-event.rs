// The state and the event are matched apart: a name both patterns bind
// would silently take one of the two values, so it is rejected.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy { n: u32 },
    }
    #[events]
    pub enum Event {
        Go(u32),
    }
    #[actions]
    pub enum Action {
        Nothing,
        Num(u32),
    }
    transitions! {
        Idle + Go(n) => Busy { n } / Nothing,
        Busy { n } + Go(n) => Idle / Num(n),
    }
}

fn main() {}
