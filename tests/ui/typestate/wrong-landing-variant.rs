// `Ready` + `Infer` lands in `AwaitingToolCall` or `Finished`, never back in
// `Ready`: `ReadyAfterInfer` has no `Ready` variant.
use agent_fsm_examples::bob::{answer, RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    match ready.infer(answer("a")) {
        typed::ReadyAfterInfer::Ready(_, _) => {}
        typed::ReadyAfterInfer::AwaitingToolCall(_, _) => {}
        typed::ReadyAfterInfer::Finished(_, _) => {}
    }
}
