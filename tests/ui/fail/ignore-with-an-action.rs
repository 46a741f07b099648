// An ignored pair answers with the fallback action; naming another one is
// a mistake, said as such.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }
    #[events]
    pub enum Event {
        Go,
        Tick,
    }
    #[actions]
    pub enum Action {
        Nothing,
        Wait,
    }
    transitions! {
        Idle + Go => Busy / Nothing,
        Busy + Go => Idle / Nothing,
        Idle + Tick => ignore / Wait,
    }
}

fn main() {}
