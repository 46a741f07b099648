// Rule: `#[carry]` names each field once (the states are then left without
// carried fields, so that rustc adds nothing of its own to the error).
#[agent_fsm::state_machine(fallback = Wait)]
mod m {
    #[states]
    #[carry(log: Vec<String>, log: u32)]
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
