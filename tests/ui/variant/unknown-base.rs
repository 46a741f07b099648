// Rule: `extends` names a base machine's exported table; nothing is at
// `some::missing_path`.
#[agent_fsm::state_machine(extends = some::missing_path, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {}
}

fn main() {}
