// Rule: `#[state_machine]` goes on an inline module, not on `mod name;`.
#[agent_fsm::state_machine(fallback = Wait)]
pub mod machine;

fn main() {}
