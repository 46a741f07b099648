//! A tool call's `execute_tool` span and its metrics.

use std::future::Future;

use crate::llm::{ToolCall, ToolResult};
use crate::tool::CallError;

/// `run` (the call's future, the tool's text or why it failed) inside an
/// `execute_tool {tool}` span whose
/// parent is the span current now (the step that started the call), and
/// counted and timed by tool and outcome. `known`: whether the set has
/// the tool called; a name it does not have is counted as
/// `names::UNKNOWN_TOOL`, since the model writes the name and each label
/// value is a series the recorder keeps for good; its span is named
/// `execute_tool (unknown)` for the same reason (span names are meant to
/// be few: backends index them and derive metrics from them), the name
/// the model wrote kept in `gen_ai.tool.name`. A call dropped before
/// it ends (the executor's task timeout, an interrupt, a shutdown) is
/// counted too, as an `error` (the model is told it failed), its span's
/// `error.type` `cancelled`.
pub(crate) fn observe_tool(
    call: &ToolCall,
    #[cfg_attr(not(any(feature = "otel", feature = "metrics")), allow(unused_variables))] known: bool,
    run: impl Future<Output = Result<String, CallError>> + Send + 'static,
) -> impl Future<Output = ToolResult> + Send + 'static {
    let call_id = call.id.clone();
    #[cfg(feature = "otel")]
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {}", if known { call.name.as_str() } else { super::UNKNOWN_TOOL }).as_str(),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
        gen_ai.tool.type = "function",
        "error.type" = tracing::field::Empty,
        "otel.status_code" = tracing::field::Empty,
    );
    let mut ending = Ending {
        #[cfg(feature = "otel")]
        span: span.clone(),
        #[cfg(feature = "metrics")]
        name: if known { call.name.clone() } else { super::UNKNOWN_TOOL.to_owned() },
        #[cfg(feature = "metrics")]
        start: None,
        done: false,
    };
    let observed = async move {
        #[cfg(feature = "metrics")]
        {
            ending.start = Some(tokio::time::Instant::now());
        }
        let outcome = run.await;
        ending.end(outcome.as_ref().err().map(error_type));
        crate::tool::to_result(outcome, call_id)
    };
    #[cfg(feature = "otel")]
    let observed = tracing::Instrument::instrument(observed, span);
    observed
}

/// The span's `error.type` for `error`: what went wrong, in a few words
/// the model's text does not vary.
fn error_type(error: &CallError) -> &'static str {
    match error {
        CallError::UnknownTool { .. } => "unknown_tool",
        CallError::InvalidArguments { .. } => "invalid_arguments",
        CallError::Failed { .. } => "tool_error",
        CallError::Panicked { .. } => "panicked",
        CallError::TimedOut { .. } => "timeout",
        CallError::Cancelled { .. } => "cancelled",
    }
}

/// What records a call's end: once, when the call returns, or when its
/// future is dropped before that (which would otherwise leave the call
/// uncounted and its span without an error).
struct Ending {
    #[cfg(feature = "otel")]
    span: tracing::Span,
    /// The `tool` label.
    #[cfg(feature = "metrics")]
    name: String,
    /// When the call was first polled; `None` if it never was.
    #[cfg(feature = "metrics")]
    start: Option<tokio::time::Instant>,
    done: bool,
}

impl Ending {
    /// The call ended, failed with `error` (the span's `error.type`) or not.
    fn end(&mut self, error: Option<&str>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        #[cfg(feature = "otel")]
        if let Some(error) = error {
            super::failed(&self.span, error);
        }
        #[cfg(feature = "metrics")]
        {
            let outcome = if error.is_some() { "error" } else { "ok" };
            let seconds = self.start.map_or(0.0, |start| start.elapsed().as_secs_f64());
            let name = std::mem::take(&mut self.name);
            metrics::counter!(super::names::TOOL_CALLS, "tool" => name.clone(), "outcome" => outcome).increment(1);
            metrics::histogram!(super::names::TOOL_DURATION, "tool" => name, "outcome" => outcome).record(seconds);
        }
        #[cfg(not(any(feature = "otel", feature = "metrics")))]
        let _ = error;
    }
}

impl Drop for Ending {
    fn drop(&mut self) {
        // Dropped unfinished: cut short by whoever held the call.
        self.end(Some("cancelled"));
    }
}
