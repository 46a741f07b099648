// Accessors are read-only: the pending calls change only through a step.
use agent_fsm_examples::bob::{call_tools, RunnerContext, ToolCall, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let call = ToolCall { id: "1".into(), name: "write_note".into(), arguments: serde_json::json!({ "input": "milk" }) };
    let typed::ReadyAfterInfer::AwaitingToolCall(awaiting, _) = ready.infer(call_tools(vec![call.clone()])) else {
        return;
    };
    awaiting.pending_calls().push(call);
}
