// Rule: every state keeps a way out. With its own row and the any-state
// rows removed, `PostToolsHook` has no row leaving it; the error is at this
// variant's last change that dropped one of its exits (the base's
// `#[terminal]` is not this variant's to give). Removing `* +
// ShutdownRequested` also cuts off `ShuttingDown`: a second error, at the
// same change.
#[agent_fsm::state_machine(extends = agent_fsm_examples::loom_machine, name = Variant)]
pub mod machine {
    use agent_fsm_examples::loom::*;

    transitions! {
        remove PostToolsHook { pending_llm_request } + PostToolsHookCompleted { .. },
        remove * + Interrupted { cause },
        remove * + ShutdownRequested,
    }
}

fn main() {}
