//! A tool call's `execute_tool` span and its metrics.

use std::future::Future;

use crate::llm::{ToolCall, ToolResult};

/// The `tool` label of a call to a tool the set does not have (the
/// conventions' value for one outside a known set).
#[cfg(feature = "metrics")]
pub(crate) const OTHER_TOOL: &str = "_OTHER";

/// `run` (the call's future) inside an `execute_tool {tool}` span whose
/// parent is the span current now (the step that started the call), and
/// counted and timed by tool and outcome. `known`: the set has the tool;
/// other names, which the model chooses, are counted as [`OTHER_TOOL`]:
/// each label value is a series the recorder keeps for good.
pub(crate) fn observe_tool(
    call: &ToolCall,
    known: bool,
    run: impl Future<Output = ToolResult> + Send + 'static,
) -> impl Future<Output = ToolResult> + Send + 'static {
    #[cfg(feature = "otel")]
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {}", call.name).as_str(),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
        gen_ai.tool.type = "function",
        "error.type" = tracing::field::Empty,
    );
    #[cfg(feature = "metrics")]
    let name = if known { call.name.clone() } else { OTHER_TOOL.to_owned() };
    #[cfg(not(feature = "metrics"))]
    let _ = known;
    let observed = async move {
        #[cfg(feature = "metrics")]
        let start = tokio::time::Instant::now();
        let result = run.await;
        #[cfg(feature = "otel")]
        if result.is_error {
            tracing::Span::current().record("error.type", "tool_error");
        }
        #[cfg(feature = "metrics")]
        {
            let outcome = if result.is_error { "error" } else { "ok" };
            let seconds = start.elapsed().as_secs_f64();
            metrics::counter!(super::names::TOOL_CALLS, "tool" => name.clone(), "outcome" => outcome).increment(1);
            metrics::histogram!(super::names::TOOL_DURATION, "tool" => name, "outcome" => outcome).record(seconds);
        }
        result
    };
    #[cfg(feature = "otel")]
    let observed = tracing::Instrument::instrument(observed, span);
    observed
}
