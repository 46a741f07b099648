// Rule: a tuple state cannot hold the `#[carry]` fields.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(log: Vec<String>)]
    pub enum State {
        #[initial]
        Idle,
        Busy(u32),
        #[terminal]
        Done,
    }

    #[events]
    pub enum Event {
        Go,
        Stop,
    }

    #[actions]
    pub enum Action {
        Wait,
        Finish,
    }

    transitions! {
        Idle + Go => Busy(1) / Wait,
        Busy + Go => Done / Finish,
    }
}

fn main() {}
