// Rule: a row from a `#[no_carry]` state into a carrying state has no
// carried data to move along; its target sets it. Tuple states, which
// must be `#[no_carry]`, are held to it too.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    #[carry(log: Vec<String>)]
    pub enum State {
        #[initial]
        Idle,
        #[no_carry]
        Paused,
        #[no_carry]
        Held(u8),
    }

    #[events]
    pub enum Event {
        Pause,
        Hold,
        Resume,
    }

    #[actions]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Pause => Paused / Wait,
        Idle + Hold => Held(1) / Wait,
        Paused + Resume => Idle / Wait,
        Held + Resume => Idle / Wait,
    }
}

fn main() {}
