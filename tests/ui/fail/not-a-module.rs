// Rule: `#[state_machine]` goes on an inline module.
#[agent_fsm::state_machine(fallback = Wait)]
pub enum State {
    Idle,
    Done,
}

fn main() {}
