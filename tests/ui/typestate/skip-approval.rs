// While approvals are pending the tools may not run: `AwaitingApproval` has
// no `provide_tool_results`.
use agent_fsm_examples::bob::{call_tools, RunnerContext, ToolCall, ToolResult, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let call = ToolCall { id: "1".into(), name: "write_note".into(), arguments: serde_json::json!({ "input": "milk" }) };
    let typed::ReadyAfterInfer::AwaitingToolCall(awaiting, _) = ready.infer(call_tools(vec![call])) else {
        return;
    };
    let typed::AwaitingToolCallAfterRequireApproval::AwaitingApproval(approving, _) = awaiting.require_approval() else { return };
    let results = vec![ToolResult { call_id: "1".into(), content: "ok".into(), is_error: false }];
    let _ = approving.provide_tool_results(results);
}
