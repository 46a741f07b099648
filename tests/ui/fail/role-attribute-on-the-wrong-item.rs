// Rule: `#[states]`, `#[events]` and `#[actions]` go on enums, and
// `#[context]` on a struct, an enum or a type alias; on any other item
// the error is at the attribute, not at the module that then lacks the
// role.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    pub struct Event;

    #[actions]
    pub enum Action {
        Wait,
    }

    #[context]
    pub fn context() -> u32 {
        0
    }

    transitions! {
        Idle + Go => Busy / Wait,
        Busy + Go => Idle / Wait,
    }
}

fn main() {}
