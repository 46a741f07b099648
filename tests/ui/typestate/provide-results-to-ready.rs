// Tool results are only awaited in `AwaitingToolCall`; `Ready` has no
// `provide_tool_results`.
use agent_fsm_examples::bob::{RunnerContext, ToolResult, typed};

fn main() {
    let ready = typed::Ready::new(RunnerContext::new("task", 3));
    let results = vec![ToolResult { call_id: "1".into(), content: "ok".into(), is_error: false }];
    let _ = ready.provide_tool_results(results);
}
