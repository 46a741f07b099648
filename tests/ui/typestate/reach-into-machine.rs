// The dynamic machine inside a typed state is private: it is handed out only
// by `into_machine`, which gives up the typed state.
use agent_fsm_examples::bob::{RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let _ = ready.machine.state();
}
