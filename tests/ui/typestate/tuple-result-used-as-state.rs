// A step with one landing state returns `(State, RunnerAction)`: the next
// state is `.0`, not the tuple itself.
use agent_fsm_examples::bob::{answer, call_tools, RunnerContext, ToolCall, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let call = ToolCall { id: "1".into(), name: "write_note".into(), arguments: serde_json::json!({ "input": "milk" }) };
    let typed::ReadyAfterInfer::AwaitingToolCall(awaiting, _) = ready.infer(call_tools(vec![call])) else {
        return;
    };
    let next = awaiting.provide_tool_results(Vec::new());
    let _ = next.infer(answer("done"));
}
