//! The spans at a tool call's edges, exported to OpenTelemetry's
//! in-memory exporter: a tool call cut short says so.

use agent_fsm::llm::ToolCall;
use agent_fsm::telemetry::layer;
use agent_fsm::tool::{Tool, ToolSet, schemars};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde::Deserialize;
use tracing_subscriber::prelude::*;

/// An exporter, and the `tracing` dispatch that feeds it, for this
/// thread.
fn exporter() -> (InMemorySpanExporter, SdkTracerProvider, tracing::subscriber::DefaultGuard) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let subscriber = tracing_subscriber::registry()
        .with(layer(&provider).with_filter(tracing_subscriber::filter::LevelFilter::INFO));
    let guard = tracing::subscriber::set_default(subscriber);
    (exporter, provider, guard)
}

/// The attribute `key` of `span`, as text.
fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

/// Waits for good: a call that only ends when it is cut short.
struct Forever;

/// The arguments of `forever`: none.
#[derive(Deserialize, schemars::JsonSchema)]
struct NoArgs {}

impl Tool for Forever {
    const NAME: &'static str = "forever";
    type Args = NoArgs;
    type Output = String;
    type Error = String;

    fn description(&self) -> String {
        "Never ends".to_owned()
    }

    async fn call(&self, _: NoArgs) -> Result<String, String> {
        std::future::pending().await
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_tool_call_cut_short_has_an_error_type() {
    let (exporter, provider, _guard) = exporter();
    let tools = ToolSet::new().with(Forever);
    let call = ToolCall { id: "c1".into(), name: "forever".into(), arguments: serde_json::json!({}) };
    // Started, then dropped: what the executor does to a tool's task past
    // its timeout, on an interrupt or at a shutdown.
    let mut running = Box::pin(tools.call(&call));
    assert!(futures::poll!(running.as_mut()).is_pending(), "the call runs");
    drop(running);
    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("spans");
    let span = spans.iter().find(|s| s.name == "execute_tool forever").expect("the call's span is exported");
    assert_eq!(attr(span, "error.type").as_deref(), Some("cancelled"));
}
