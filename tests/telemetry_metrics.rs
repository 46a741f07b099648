//! The metrics of the scripted coding agent, rendered in Prometheus's text
//! format by the recorder the metrics example installs, and the same
//! session the example runs: transitions by state, time in state, tool
//! calls by tool and outcome, the model's tokens, the refused event.

use agent_fsm::telemetry::names;
use agent_fsm_examples::coding_agent::SCRIPTED_USAGE;
use agent_fsm_examples::coding_agent::observed::run_observed_session;
use metrics_exporter_prometheus::PrometheusBuilder;
use std::time::Duration;

/// The value of the sample `name{labels}` in `text`, labels as rendered.
fn sample(text: &str, name: &str, labels: &str) -> Option<f64> {
    let prefix = format!("{name}{{{labels}}} ");
    text.lines().find_map(|line| line.strip_prefix(&prefix)).and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_example_counts_transitions_tools_tokens_and_refusals() {
    let prometheus = PrometheusBuilder::new().install_recorder().expect("the recorder, once per process");
    agent_fsm::telemetry::describe();
    let session = run_observed_session("scripted-model");
    let summary = tokio::time::timeout(Duration::from_secs(60), session).await.expect("in time").expect("session");
    let text = prometheus.render();
    let count = |name: &str, labels: &str| {
        sample(&text, name, labels).unwrap_or_else(|| panic!("no {name}{{{labels}}} in:\n{text}"))
    };

    for name in [names::TRANSITIONS, names::REFUSED_EVENTS, names::TOOL_CALLS, names::LLM_TOKENS] {
        assert!(text.contains(&format!("# TYPE {name} counter")), "{name} is a counter");
        assert!(text.contains(&format!("# HELP {name} ")), "{name} is described");
    }

    // Every hop of the session (the idle agent takes none: it has no
    // shutdown event), and the ones the demo takes by name.
    let hops: f64 = text
        .lines()
        .filter(|l| l.starts_with(names::TRANSITIONS))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    #[allow(clippy::cast_precision_loss)] // a few dozen hops
    let expected_hops = summary.transitions as f64;
    assert_eq!(hops, expected_hops);
    assert_eq!(count(names::TRANSITIONS, r#"machine="Loom",from="WaitingForUserInput",to="CallingLlm""#), 1.0);
    assert_eq!(count(names::TRANSITIONS, r#"machine="Loom",from="CallingLlm",to="ProcessingLlmResponse""#), 4.0);
    assert_eq!(count(names::TRANSITIONS, r#"machine="Loom",from="WaitingForUserInput",to="ShuttingDown""#), 1.0);

    // Time in state: one observation per stay left.
    assert_eq!(count(&format!("{}_count", names::STATE_DURATION), r#"machine="Loom",state="CallingLlm""#), 4.0);

    // Each tool once, successfully, and timed.
    for tool in ["list_files", "read_file", "edit_file", "run_command"] {
        let labels = format!(r#"tool="{tool}",outcome="ok""#);
        assert_eq!(count(names::TOOL_CALLS, &labels), 1.0, "{tool}");
        assert_eq!(count(&format!("{}_count", names::TOOL_DURATION), &labels), 1.0, "{tool}");
    }

    // The scripted model's usage, summed over its four replies.
    let (input, output) = SCRIPTED_USAGE.iter().fold((0, 0), |(i, o), (a, b)| (i + a, o + b));
    #[allow(clippy::cast_precision_loss)] // a few hundred tokens
    let (input, output) = (input as f64, output as f64);
    assert_eq!(count(names::LLM_TOKENS, r#"provider="scripted",model="scripted-model",type="input""#), input);
    assert_eq!(count(names::LLM_TOKENS, r#"provider="scripted",model="scripted-model",type="output""#), output);

    // The stray timer, refused by the catch-all.
    assert_eq!(
        count(
            names::REFUSED_EVENTS,
            r#"machine="Loom",state="WaitingForUserInput",event="RetryTimeoutFired",reason="no_row""#
        ),
        1.0
    );
}
