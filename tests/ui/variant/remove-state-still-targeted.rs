// Rule: `remove state` needs every base row into the state replaced or
// removed; Loom's `ExecutingTools + ToolCompleted [mutates_with]` row still
// leads into `PostToolsHook`.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        remove state PostToolsHook,
    }
}

fn main() {}
