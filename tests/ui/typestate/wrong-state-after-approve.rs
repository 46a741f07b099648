// `approve` lands in `AwaitingApproval` or `AwaitingToolCall`, never in
// `Finished` (only `deny` and `cancel` finish from there).
use agent_fsm_examples::bob::{call_tools, RunnerContext, ToolCall, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let call = ToolCall { id: "1".into(), name: "write_note".into(), arguments: serde_json::json!({ "input": "milk" }) };
    let typed::ReadyAfterInfer::AwaitingToolCall(awaiting, _) = ready.infer(call_tools(vec![call])) else {
        return;
    };
    let typed::AwaitingToolCallAfterRequireApproval::AwaitingApproval(approving, _) = awaiting.require_approval() else { return };
    let typed::AwaitingApprovalAfterApprove::Finished(_done, _) = approving.approve("approve-1".to_string()) else {
        return;
    };
}
