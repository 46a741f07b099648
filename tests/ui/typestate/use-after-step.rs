// A step consumes the state it leaves: the old state cannot be read after.
use agent_fsm_examples::bob::{RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let _ = ready.cancel();
    let _ = ready.context();
}
