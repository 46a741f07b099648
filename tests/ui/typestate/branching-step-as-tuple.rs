// `infer` can land in two states, so it returns `ReadyAfterInfer`, not a
// `(State, RunnerAction)` pair to destructure.
use agent_fsm_examples::bob::{answer, RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let (_next, _action) = ready.infer(answer("a"));
}
