// Rule: a `remove` row names a state of the base; `Sleeping` is not one of
// Loom's, and the error says so rather than that no row has the key.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        remove Sleeping + UserInput(msg),
    }
}

fn main() {}
