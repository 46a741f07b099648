// Rule: a target with fields needs its payload; so does an action with
// named fields (a macro error at the name: rustc's own would point into the
// generated path).
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy {
            attempts: u32,
        },
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
        Finish { code: u8, r#type: u8 },
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Go => Done / Finish,
        Busy + Stop => Done / Finish { code: 0, r#type: 1 },
    }
}

fn main() {}
