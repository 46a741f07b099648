//! The scripted coding agent with its metrics exported in Prometheus's
//! text format: installs the `metrics-exporter-prometheus` recorder, runs
//! the demo's session (and one event the table refuses), then prints what
//! a Prometheus server would scrape: transitions by state, time in each
//! state, tool calls and their durations, the model's tokens, refused
//! events.
//!
//! Run: `cargo run --example coding_agent_metrics --features metrics`.
//! An application serves the same text on its `/metrics` endpoint instead
//! (`PrometheusBuilder::with_http_listener`, the crate's `http-listener`
//! feature).

use agent_fsm_examples::coding_agent::observed::run_observed_session;
use metrics_exporter_prometheus::PrometheusBuilder;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    // Process-wide: every agent, tool and model call records through it.
    let prometheus = PrometheusBuilder::new().install_recorder()?;
    // Units and help text: the `# HELP` lines.
    agent_fsm::telemetry::describe();
    let summary = run_observed_session("scripted").await?;
    eprintln!("session over: {} hops, {} tool calls", summary.transitions, summary.tool_calls);
    print!("{}", prometheus.render());
    Ok(())
}
