//! A tool call judged by when its result came, against the set's timeout
//! ([`ToolSet::with_timeout`]): a call whose result comes at the timeout or
//! after it (a tool that blocked its thread past it, then returned) has
//! timed out, whatever it returned, as the executor judges its tasks. On
//! paused tokio time: the clock jumps as a blocked thread would see it.
//! A call the timeout drops whose future panics as it is dropped is an
//! error result too, not a panic of the caller.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use agent_fsm::llm::ToolCall;
use agent_fsm::tool::{RawTool, ToolSet};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

/// A tool that takes `took` of the runtime's clock and then succeeds:
/// by sleeping it, or (`blocks`) by jumping the clock at once, as a thread
/// blocked in synchronous code finds it when it gets back.
struct Slow {
    took: Duration,
    blocks: bool,
}

impl RawTool for Slow {
    fn definition(&self) -> agent_fsm::llm::ToolDefinition {
        agent_fsm::llm::ToolDefinition {
            name: "slow".into(),
            description: "Takes its time".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }

    fn call(self: Arc<Self>, _arguments: Value) -> BoxFuture<'static, Result<String, agent_fsm::tool::CallError>> {
        async move {
            if self.blocks {
                tokio::time::advance(self.took).await;
            } else {
                tokio::time::sleep(self.took).await;
            }
            Ok("done".to_owned())
        }
        .boxed()
    }
}

/// The result of one call of `slow` under a one-second set timeout.
async fn call_slow(took: Duration, blocks: bool) -> agent_fsm::llm::ToolResult {
    let mut tools = ToolSet::new().with_timeout(Duration::from_secs(1));
    tools.add_raw(Arc::new(Slow { took, blocks }));
    let call = ToolCall { id: "call_0".into(), name: "slow".into(), arguments: json!({}) };
    tokio::time::timeout(Duration::from_secs(60), tools.call(&call)).await.expect("the call ends")
}

#[tokio::test(start_paused = true)]
async fn a_call_done_before_the_timeout_keeps_its_result() {
    let result = call_slow(Duration::from_millis(999), false).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.content, "done");
}

/// Done at the timeout's very instant: too late, as a task of the executor
/// finishing at its deadline is.
#[tokio::test(start_paused = true)]
async fn a_call_done_at_the_timeout_has_timed_out() {
    let result = call_slow(Duration::from_secs(1), false).await;
    assert!(result.is_error, "a result at the deadline was taken as on time: {result:?}");
    assert_eq!(result.content, "`slow` timed out after 1s");
}

/// A tool that blocked ten times its timeout and then returned: its late
/// result is not handed to the model as if it had come in time.
#[tokio::test(start_paused = true)]
async fn a_call_that_blocked_past_the_timeout_has_timed_out_whatever_it_returned() {
    let start = tokio::time::Instant::now();
    let result = call_slow(Duration::from_secs(10), true).await;
    assert!(start.elapsed() >= Duration::from_secs(10), "the tool took its time");
    assert!(result.is_error, "a result ten seconds late was taken as on time: {result:?}");
    assert_eq!(result.content, "`slow` timed out after 1s");
}

/// A timeout too far off to ever come (past what tokio's clock counts) is
/// none: the call runs to its result rather than failing on the clock.
#[tokio::test(start_paused = true)]
async fn a_timeout_past_the_end_of_the_clock_is_none() {
    for after in [Duration::from_secs(1 << 40), Duration::MAX] {
        let mut tools = ToolSet::new().with_timeout(after);
        tools.add_raw(Arc::new(Slow { took: Duration::from_secs(5), blocks: false }));
        let call = ToolCall { id: "call_0".into(), name: "slow".into(), arguments: json!({}) };
        let result = tokio::time::timeout(Duration::from_secs(60), tools.call(&call)).await.expect("the call ends");
        assert!(!result.is_error, "{after:?}: {result:?}");
        assert_eq!(result.content, "done");
    }
}

/// Panics when dropped before its call finished (a guard asserting that
/// an operation was not left halfway).
struct Unfinished;

impl Drop for Unfinished {
    fn drop(&mut self) {
        panic!("dropped halfway");
    }
}

/// A tool that never ends and panics when its future is dropped.
struct PanicsWhenDropped;

impl RawTool for PanicsWhenDropped {
    fn definition(&self) -> agent_fsm::llm::ToolDefinition {
        agent_fsm::llm::ToolDefinition {
            name: "stuck".into(),
            description: "Never ends".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }

    fn call(self: Arc<Self>, _arguments: Value) -> BoxFuture<'static, Result<String, agent_fsm::tool::CallError>> {
        async move {
            let guard = Unfinished;
            std::future::pending::<()>().await;
            std::mem::forget(guard);
            Ok("never".to_owned())
        }
        .boxed()
    }
}

/// `call` and `call_all` promise an error result for whatever goes wrong:
/// a tool the timeout drops, and that panics as it is dropped, is one.
#[tokio::test(start_paused = true)]
async fn a_call_that_panics_as_the_timeout_drops_it_is_an_error_result() {
    let mut tools = ToolSet::new().with_timeout(Duration::from_secs(1));
    tools.add_raw(Arc::new(PanicsWhenDropped));
    let call = ToolCall { id: "call_0".into(), name: "stuck".into(), arguments: json!({}) };
    let run = AssertUnwindSafe(tools.call_all(std::slice::from_ref(&call))).catch_unwind();
    let results = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the call ends")
        .expect("the caller is handed an error result, not the tool's panic");
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error, "{:?}", results[0]);
    assert_eq!(results[0].call_id, "call_0");
    assert!(results[0].content.contains("dropped halfway"), "{:?}", results[0]);
}
