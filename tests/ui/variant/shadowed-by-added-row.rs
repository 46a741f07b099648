// Rule: a row after an unguarded row for the same state and event never
// fires. The variant's rows go first, so this added unguarded
// `CallingLlm + LlmEvent(..)` row makes every Loom row for that pair dead.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        CallingLlm + LlmEvent(event) => CallingLlm / DisplayMessage(format!("{event:?}")),
    }
}

fn main() {}
