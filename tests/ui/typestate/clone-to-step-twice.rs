// Typed states are not `Clone`: a state cannot be copied to take two
// different steps from it.
use agent_fsm_examples::bob::{RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let _ = ready.clone();
}
