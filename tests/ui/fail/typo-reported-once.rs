// Rule: a misspelt name is reported once. The rows it breaks are dropped,
// but their states are not then also reported as dead ends (`Busy` has its
// exit in the row with the misspelt event) or unreachable (`Busy` is
// reached through the row with the misspelt target).
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub enum Event {
        Go,
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
        Start,
    }

    transitions! {
        Idle + Go => Bsy / Start,
        Busy + Stpo => Idle / Wait,
    }
}

fn main() {}
