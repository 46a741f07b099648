// Rule: a variant adds new states only; `ExecutingTools` is already Loom's.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    #[states]
    pub enum Added {
        ExecutingTools { executions: Executions },
    }

    transitions! {}
}

fn main() {}
