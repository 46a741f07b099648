//! Telemetry: OpenTelemetry spans in the GenAI semantic conventions
//! (feature `otel`) and metrics through the [`metrics`](https://docs.rs/metrics)
//! facade (feature `metrics`). Both are compiled out unless their feature
//! is on: the default build's executor does not change by one instruction.
//!
//! # Spans (`otel`)
//!
//! The spans are ordinary `tracing` spans at level `INFO` whose fields
//! follow the conventions; [`tracing_opentelemetry`]'s layer turns them into
//! OpenTelemetry spans (its `otel.name` and `otel.kind` fields give the
//! span's name and kind). One agent turn is one tree:
//!
//! | span | where | attributes |
//! | --- | --- | --- |
//! | `invoke_agent {agent}` | the turn, from the event that starts it to the hop that ends it ([`AgentTurns`]) | `gen_ai.operation.name`, `gen_ai.agent.name`, `gen_ai.agent.id`, `agent_fsm.machine`, `agent_fsm.turn` (its number among the worker's turns), `error.type` (the reason, when the table did not handle the event that opened it; the failure's kind, `machine_panicked`, `effects_panicked`.., when the worker failed in it) |
//! | `chat {model}` | one model call, while its stream is read (the OpenAI and Anthropic clients, and any provider that calls [`llm::observe`](crate::llm::observe)) | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `gen_ai.response.finish_reasons` (an array of strings, as the conventions type it, set on the OpenTelemetry span: not a `tracing` field), `error.type` (the error's kind in snake case, as `rate_limited` or `server_error`; `cancelled` for a call dropped before its reply or an error; `ended_without_reply` for a stream that ended with neither) |
//! | `execute_tool {tool}` | one tool call of a [`ToolSet`](crate::tool::ToolSet) (`execute_tool (unknown)` for a name the set does not have, which `gen_ai.tool.name` keeps) | `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type`, `error.type` (`tool_error` for the tool's own error, `unknown_tool`, `invalid_arguments`, `panicked`, `timeout`, or `cancelled` for a call cut short) |
//! | `transition {from} -> {to}` | one hop of the machine, from the executor | `agent_fsm.machine`, `agent_fsm.state.from`, `agent_fsm.state.to`, `agent_fsm.event`, `agent_fsm.action`, `agent_fsm.row` |
//!
//! A span given an `error.type` also gets the OpenTelemetry status
//! `Error` (through `tracing_opentelemetry`'s `otel.status_code` field),
//! as the conventions ask, so that a backend shows it failed; the others
//! keep status `Unset`.
//!
//! The parent is carried by `tracing`'s current span: the worker enters the
//! turn's span around every step of the turn, and a model call, a tool call
//! or a hop opened inside a step takes it as parent; the tasks a step
//! spawns carry it with them. Mark where a turn starts and ends with
//! [`ExecutorConfig::agent_turns`](crate::runtime::ExecutorConfig::agent_turns).
//! The hops a durable agent's restart feeds again from its log, to rebuild
//! it, open no `transition` span: the run that took them exported theirs.
//!
//! ```no_run
//! use agent_fsm::telemetry::{layer, opentelemetry_sdk::trace::SdkTracerProvider};
//! use tracing_subscriber::prelude::*;
//!
//! // Any exporter: OTLP to a collector, stdout, the in-memory one in tests.
//! let provider = SdkTracerProvider::builder().build();
//! tracing_subscriber::registry()
//!     .with(layer(&provider).with_filter(tracing_subscriber::filter::LevelFilter::INFO))
//!     .init();
//! ```
//!
//! # Metrics (`metrics`)
//!
//! Recorded through the facade; the application installs a recorder (the
//! Prometheus exporter in `examples/coding_agent_metrics.rs`), and may call
//! [`describe`] for each metric's unit and help text. The steps a durable
//! agent's restart feeds again from its log, to rebuild it, are not
//! counted again (the run that took them counted them). The names are in
//! [`names`]:
//!
//! | metric | kind | labels |
//! | --- | --- | --- |
//! | `agent_fsm_transitions_total` | counter | `machine`, `from`, `to` |
//! | `agent_fsm_state_duration_seconds` | histogram, on leaving a state | `machine`, `state` |
//! | `agent_fsm_refused_events_total` | counter (the catch-all) | `machine`, `state`, `event`, `reason` |
//! | `agent_fsm_tool_calls_total` | counter | `tool` (`(unknown)` for a name the set does not have), `outcome` (`ok`, `error`; a call cut short is an `error`) |
//! | `agent_fsm_tool_duration_seconds` | histogram | `tool`, `outcome` |
//! | `agent_fsm_llm_tokens_total` | counter | `provider`, `model`, `type` (`input`, `output`) |

#[cfg(feature = "llm")]
mod chat;
#[cfg(feature = "metrics")]
mod counters;
#[cfg(feature = "otel")]
mod spans;
#[cfg(feature = "tool")]
mod tool;

#[cfg(feature = "llm")]
pub(crate) use chat::observe_chat;
#[cfg(all(feature = "metrics", feature = "runtime"))]
pub(crate) use counters::{HopCounters, count_refused};
#[cfg(feature = "metrics")]
pub use counters::{describe, names};
#[cfg(all(feature = "otel", feature = "runtime"))]
pub(crate) use spans::TurnState;
#[cfg(feature = "otel")]
pub use spans::{AgentTurns, layer};
#[cfg(feature = "tool")]
pub(crate) use tool::observe_tool;

/// The OpenTelemetry API, at the version [`tracing_opentelemetry`] is built on.
#[cfg(feature = "otel")]
pub use opentelemetry;
/// The OpenTelemetry SDK (tracer provider, exporters), at the version of
/// [`opentelemetry`].
#[cfg(feature = "otel")]
pub use opentelemetry_sdk;
/// The `tracing` layer that exports spans to OpenTelemetry.
#[cfg(feature = "otel")]
pub use tracing_opentelemetry;

/// The reason an event was not handled, as `serde` names it: a metric's
/// label, a refused turn's `error.type`.
#[cfg(all(feature = "runtime", any(feature = "otel", feature = "metrics")))]
fn reason_label(reason: crate::UnhandledReason) -> &'static str {
    match reason {
        crate::UnhandledReason::NoRow => "no_row",
        crate::UnhandledReason::Refused => "refused",
        crate::UnhandledReason::Ignored => "ignored",
        crate::UnhandledReason::Poisoned => "poisoned",
    }
}

/// The name of a tool the set does not have, in a metric's `tool` label
/// and an `execute_tool` span's name: the model writes the name, and one
/// value per name made up would grow the series and span names without
/// bound. The value of `names::UNKNOWN_TOOL`, which exists with the
/// `metrics` feature only.
#[cfg(all(feature = "tool", any(feature = "otel", feature = "metrics")))]
const UNKNOWN_TOOL: &str = "(unknown)";

/// Marks `span` failed: `error.type` says how, and its OpenTelemetry status
/// is `Error`, which the conventions ask for alongside `error.type` and
/// which backends read to show a span as failed (without it, a failed
/// call's span reads as one that went well).
#[cfg(all(feature = "otel", any(feature = "runtime", feature = "llm")))]
fn failed(span: &tracing::Span, error_type: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "error");
}
