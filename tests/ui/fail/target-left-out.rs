// An action written where the target goes: the unknown state is named as
// the action it is.
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
    }
    #[actions]
    pub enum Action {
        Nothing,
        Pong(&'static str),
    }
    transitions! {
        Idle + Go => Pong("x"),
        Busy + Go => Idle / Nothing,
    }
}

fn main() {}
