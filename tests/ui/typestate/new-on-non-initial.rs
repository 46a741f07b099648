// Only the initial state has a constructor: a run cannot start in
// `AwaitingToolCall`.
use agent_fsm_examples::bob::{RunnerContext, typed};

fn main() {
    let _ = typed::AwaitingToolCall::new(RunnerContext::new("task", 3));
}
