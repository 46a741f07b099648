// Rule: only a base is exported; a variant's table is the base's plus
// differences.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant, export = variant_table)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        remove CallingLlm + LlmFailed(error),
    }
}

fn main() {}
