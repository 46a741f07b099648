// The kind enums (`StateKind`, `EventKind`, `ActionKind`) go into the
// module: their names must be free there, for the machine type too.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    pub struct StateKind;

    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }
    #[events]
    pub enum EventKind {
        Go,
    }
    #[actions]
    pub enum Action {
        Nothing,
    }
    transitions! {
        Idle + Go => Busy / Nothing,
        Busy + Go => Idle / Nothing,
    }
}

#[agent_fsm::state_machine(fallback = Nothing, name = ActionKind)]
mod n {
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
    }
    transitions! {
        Idle + Go => Busy / Nothing,
        Busy + Go => Idle / Nothing,
    }
}

fn main() {}
