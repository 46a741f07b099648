// `* + Cancel` covers every waiting state, not the terminal one: `Finished`
// has no `cancel`.
use agent_fsm_examples::bob::{RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let (done, _) = ready.cancel();
    let _ = done.cancel();
}
