// Rule: a `#[transient]` state's rows must resolve every value of the
// state; a last row whose pattern can fail would leave the machine resting
// in the transient state.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine {
    #[states]
    pub enum State {
        #[initial]
        Idle,
        #[transient]
        Check { reply: Option<String> },
        #[terminal]
        Done,
    }

    #[events]
    pub enum Event {
        Reply(Option<String>),
    }

    #[actions]
    pub enum Action {
        Wait,
        Show(String),
    }

    transitions! {
        Idle + Reply(reply) => Check { reply },
        Check { reply: Some(r) } => Done / Show(r),
    }
}

fn main() {}
