// Rule: a row from a `#[no_carry]` state into a carrying state has no
// carried data to move along; its target sets it.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(log: Vec<String>)]
    pub enum State {
        #[initial]
        Idle,
        #[no_carry]
        Paused,
    }

    #[events]
    pub enum Event {
        Pause,
        Resume,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Pause => Paused / Wait,
        Paused + Resume => Idle / Wait,
    }
}

fn main() {}
