// Rule: a syntax error in a variant's table is reported alone: the rules
// over the whole table are not run on the rows that could be read.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    #[states]
    pub enum AddedStates {
        Paused,
    }

    #[events]
    pub enum AddedEvents {
        Pause,
        Resume,
    }

    transitions! {
        WaitingForUserInput + Pause => Paused / WaitForInput
        Paused + Resume => WaitingForUserInput / WaitForInput,
    }
}

fn main() {}
