// Rule: a state no row leaves is a dead end. The added `Reviewing` has a row
// into it and none out. (It is `#[transient]` because Loom's
// `* + ShutdownRequested` row already leaves every added waiting state.)
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    #[states]
    pub enum Added {
        #[transient]
        Reviewing,
    }

    transitions! {
        WaitingForUserInput + RetryTimeoutFired => Reviewing,
    }
}

fn main() {}
