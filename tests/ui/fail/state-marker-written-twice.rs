// Rule: a state's marker (`#[initial]`, `#[terminal]`, `#[transient]`,
// `#[no_carry]`) written twice on one state says nothing more, as an
// event's `#[deadline]` written twice does not; the second is reported.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(log: Vec<u32>)]
    pub enum State {
        #[initial]
        #[initial]
        Idle,
        #[transient]
        #[transient]
        Checking,
        #[terminal]
        #[no_carry]
        #[terminal]
        #[no_carry]
        Done,
    }

    #[events]
    pub enum Event {
        Go,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Go => Checking,
        Checking => Done / Wait,
    }
}

fn main() {}
