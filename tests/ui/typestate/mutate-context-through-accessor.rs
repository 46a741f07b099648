// `context()` is read-only: the step budget changes only through a step.
use agent_fsm_examples::bob::{RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    ready.context().steps_taken = 0;
}
