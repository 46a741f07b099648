// Rule: `#[carry(..)]` names data every state carries: it goes on the
// `#[states]` enum, not on the events.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    #[carry(trace: u64)]
    pub enum Event {
        Go,
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Stop => Idle / Wait,
    }
}

fn main() {}
