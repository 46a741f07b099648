// A typed state is only reached by a step (or checked with `TryFrom`): its
// machine field is private, so a machine in `Ready` cannot be labelled
// `Finished`.
use agent_fsm_examples::bob::{Runner, RunnerContext, typed};

fn main() {
    let machine = Runner::new(RunnerContext::new("task", 3));
    let _ = typed::Finished { machine };
}
