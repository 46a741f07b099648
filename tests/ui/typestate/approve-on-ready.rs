// `Ready` accepts `infer` and `cancel` only: `approve` belongs to
// `AwaitingApproval`.
use agent_fsm_examples::bob::{RunnerContext, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let _ = ready.approve("approve-1".to_string());
}
