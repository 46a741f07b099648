// `pending_calls` is a field of `AwaitingToolCall`; `Ready` has none to read.
use agent_fsm_examples::bob::{RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let _ = ready.pending_calls();
}
