//! The tool metrics' labels: the tool a call names is a label value only
//! when the set has that tool, so that the names a model makes up cannot
//! grow the recorder's series without bound; and a call cut short (its
//! future dropped, as the executor's timeout or an interrupt does) is
//! counted all the same.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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

/// A recorder that counts the increments of each counter, by its name and
/// labels (`name{k=v,..}`).
#[derive(Default)]
struct Counts(Mutex<BTreeMap<String, Arc<AtomicU64>>>);

impl Counts {
    fn get(&self, key: &str) -> Option<u64> {
        let counts = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        counts.get(key).map(|c| c.load(Ordering::SeqCst))
    }
}

impl Recorder for Counts {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        let mut counts = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Counter::from_arc(Arc::clone(counts.entry(name).or_default()))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_cut_short_is_counted_as_an_error() {
    let counts = Counts::default();
    let _local = metrics::set_default_local_recorder(&counts);
    let tools = ToolSet::new().with(Forever);
    let call = ToolCall { id: "c1".into(), name: "forever".into(), arguments: json!({}) };
    // Started, then dropped before it ends: what the executor does to a
    // tool's task past its timeout, on an interrupt or at a shutdown.
    let mut running = Box::pin(tools.call(&call));
    assert!(futures::poll!(running.as_mut()).is_pending(), "the call runs");
    drop(running);
    let key = format!("{}{{tool=forever,outcome=error}}", names::TOOL_CALLS);
    assert_eq!(counts.get(&key), Some(1), "the call cut short is counted once, as an error");

    // A call that ends is counted once, not again when its future drops.
    let echo = ToolSet::new().with(Echo);
    let said = ToolCall { id: "c2".into(), name: "echo".into(), arguments: json!({"text": "hi"}) };
    let result = tokio::time::timeout(Duration::from_secs(10), echo.call(&said)).await.expect("in time");
    assert!(!result.is_error, "{result:?}");
    assert_eq!(counts.get(&format!("{}{{tool=echo,outcome=ok}}", names::TOOL_CALLS)), Some(1));
    assert_eq!(counts.get(&format!("{}{{tool=echo,outcome=error}}", names::TOOL_CALLS)), None);
}
