// While approvals are pending the tools may not run: `AwaitingApproval` has
// no `provide_tool_results`.
use agent_fsm_examples::bob::{ModelReply, RunnerContext, ToolCall, ToolResult, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let call = ToolCall { id: "1".into(), name: "write_note".into(), input: "milk".into() };
    let typed::ReadyAfterInfer::AwaitingToolCall(awaiting, _) = ready.infer(ModelReply::ToolCalls(vec![call])) else {
        return;
    };
    let typed::AwaitingToolCallAfterRequireApproval::AwaitingApproval(approving, _) = awaiting.require_approval() else { return };
    let results = vec![ToolResult { call_id: "1".into(), output: "ok".into() }];
    let _ = approving.provide_tool_results(results);
}
