// Carried data starts from `Default` in `new`; with a carried type that has
// none, the machine has no `new`, and a call says so where it is written.
#[agent_fsm::state_machine(fallback = Nothing)]
mod m {
    #[derive(Debug)]
    pub struct Conversation(pub Vec<String>);

    #[states]
    #[carry(conversation: Conversation)]
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

fn main() {
    let _resumed = m::Machine::with_state(m::State::Idle { conversation: m::Conversation(Vec::new()) });
    let _fresh = m::Machine::new();
}
