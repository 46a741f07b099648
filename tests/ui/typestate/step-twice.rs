// A state is consumed by its step, so it cannot be stepped twice.
use agent_fsm_examples::bob::{ModelReply, RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let _ = ready.infer(ModelReply::Answer("a".into()));
    let _ = ready.infer(ModelReply::Answer("b".into()));
}
