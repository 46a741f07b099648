// `Finished` is terminal: it has accessors but no step, so a finished run
// cannot ask the model again.
use agent_fsm_examples::bob::{answer, RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let (done, _) = ready.cancel();
    let _ = done.infer(answer("again"));
}
