// A row cut short at the end of the table: the error points at the row's
// last token, not at the attribute.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Calling,
    }

    #[events]
    pub enum Event {
        Go,
        Failed,
    }

    #[actions]
    pub enum Action {
        Wait,
        GiveUp,
    }

    transitions! {
        Idle + Go => Calling / Wait,
        Calling + Failed =>
    }
}

fn main() {}
