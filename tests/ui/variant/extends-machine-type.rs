// Rule: `extends` names the base's `export = ..` name, not its machine type.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom::Loom, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {}
}

fn main() {}
