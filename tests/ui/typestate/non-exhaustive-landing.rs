// Every landing state must be handled: `infer` may finish the run (an answer
// or the step guard), and the match forgets it.
use agent_fsm_examples::bob::{answer, RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    match ready.infer(answer("a")) {
        typed::ReadyAfterInfer::AwaitingToolCall(_, _) => {}
    }
}
