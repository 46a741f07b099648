// Rule: a variant adds new events only; `RetryTimeoutFired` is already Loom's.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    #[events]
    pub enum AddedEvents {
        RetryTimeoutFired,
    }

    transitions! {}
}

fn main() {}
