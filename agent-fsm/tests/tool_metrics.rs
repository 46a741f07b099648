//! The tool metrics' labels: the tool a call names is a label value only
//! when the set has that tool, so that the names a model makes up cannot
//! grow the recorder's series without bound.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use agent_fsm::llm::ToolCall;
use agent_fsm::telemetry::names;
use agent_fsm::tool::{Tool, ToolSet, schemars};
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use serde::Deserialize;
use serde_json::json;

/// A recorder that keeps the `tool` label value of every series of the
/// tool metrics registered with it.
#[derive(Default)]
struct ToolLabels(Mutex<BTreeSet<(String, String)>>);

impl ToolLabels {
    fn register(&self, key: &Key) {
        if let Some(tool) = key.labels().find(|l| l.key() == "tool") {
            let mut seen = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            seen.insert((key.name().to_owned(), tool.value().to_owned()));
        }
    }

    fn values(&self) -> BTreeSet<(String, String)> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl Recorder for ToolLabels {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        self.register(key);
        Counter::noop()
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        self.register(key);
        Gauge::noop()
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        self.register(key);
        Histogram::noop()
    }
}

/// Says what it is given.
struct Echo;

/// The arguments of `echo`.
#[derive(Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// What to say.
    text: String,
}

impl Tool for Echo {
    const NAME: &'static str = "echo";
    type Args = EchoArgs;
    type Output = String;
    type Error = String;

    fn description(&self) -> String {
        "Says the text".to_owned()
    }

    async fn call(&self, args: EchoArgs) -> Result<String, String> {
        Ok(args.text)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn made_up_tool_names_share_one_label_value() {
    let labels = ToolLabels::default();
    // The calls' futures run on this thread, where this recorder is set.
    let _local = metrics::set_default_local_recorder(&labels);
    let tools = ToolSet::new().with(Echo);
    let mut calls: Vec<ToolCall> = (0..200)
        .map(|n| ToolCall { id: format!("c{n}"), name: format!("made_up_{n}"), arguments: json!({}) })
        .collect();
    calls.push(ToolCall { id: "echo".into(), name: "echo".into(), arguments: json!({"text": "hi"}) });
    calls.push(ToolCall { id: "Echo".into(), name: "Echo".into(), arguments: json!({"text": "hi"}) });
    let results = tokio::time::timeout(Duration::from_secs(10), tools.call_all(&calls)).await.expect("in time");
    assert_eq!(results.iter().filter(|r| !r.is_error).count(), 1, "{results:?}");

    let expected: BTreeSet<(String, String)> = [names::TOOL_CALLS, names::TOOL_DURATION]
        .into_iter()
        .flat_map(|metric| ["echo", names::UNKNOWN_TOOL].map(|tool| (metric.to_owned(), tool.to_owned())))
        .collect();
    assert_eq!(labels.values(), expected);
}
