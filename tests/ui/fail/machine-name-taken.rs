// The machine type goes into the module: its name must be free there.
#[agent_fsm::state_machine(fallback = Nothing, name = Helper)]
mod m {
    pub struct Helper;

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

#[agent_fsm::state_machine(fallback = Nothing, typestate)]
mod n {
    pub mod typed {}

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
