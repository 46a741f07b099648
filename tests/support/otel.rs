//! The OpenTelemetry side of the telemetry tests: an in-memory exporter
//! fed by this thread's `tracing` dispatch. Included with `#[path]`.

use agent_fsm::telemetry::layer;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing_subscriber::prelude::*;

/// An exporter, and the `tracing` dispatch that feeds it, for this
/// thread (a current-thread runtime runs the worker here).
pub(crate) fn exporter() -> (InMemorySpanExporter, SdkTracerProvider, tracing::subscriber::DefaultGuard) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let subscriber = tracing_subscriber::registry()
        .with(layer(&provider).with_filter(tracing_subscriber::filter::LevelFilter::INFO));
    let guard = tracing::subscriber::set_default(subscriber);
    (exporter, provider, guard)
}
