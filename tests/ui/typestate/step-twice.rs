// A state is consumed by its step, so it cannot be stepped twice.
use agent_fsm_examples::bob::{answer, RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let _ = ready.infer(answer("a"));
    let _ = ready.infer(answer("b"));
}
