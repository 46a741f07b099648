//! The tool metrics a `ToolSet` records, read by a recorder of the
//! application's own (the `metrics` facade's local one): a known tool is
//! labelled by its name, and the names a model makes up share one label
//! value, so that they cannot grow the recorder's series without bound.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_fsm::llm::ToolCall;
use agent_fsm::telemetry::names;
use agent_fsm::tool::{Tool, ToolSet};
use metrics::{Counter, CounterFn, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Echoes its text.
struct Echo;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// What to echo.
    text: String,
}

impl Tool for Echo {
    const NAME: &'static str = "echo";
    type Args = EchoArgs;
    type Output = String;
    type Error = String;

    fn description(&self) -> String {
        "Echoes its text".to_owned()
    }

    async fn call(&self, args: EchoArgs) -> Result<String, String> {
        Ok(args.text)
    }
}

/// One counter's total.
struct Total(AtomicU64);

impl CounterFn for Total {
    fn increment(&self, value: u64) {
        self.0.fetch_add(value, Ordering::SeqCst);
    }

    fn absolute(&self, value: u64) {
        self.0.store(value, Ordering::SeqCst);
    }
}

/// Keeps every counter registered, by its key; the rest is dropped.
#[derive(Default)]
struct Counters {
    by_key: Mutex<BTreeMap<String, Arc<Total>>>,
}

impl Counters {
    /// The totals of counter `name`, by their `tool` label.
    fn tools(&self, name: &str) -> BTreeMap<String, u64> {
        let by_key = self.by_key.lock().expect("lock");
        by_key
            .iter()
            .filter_map(|(key, total)| {
                let tool = key.strip_prefix(&format!("{name} tool="))?.split(" outcome=").next()?;
                Some((tool.to_owned(), total.0.load(Ordering::SeqCst)))
            })
            .collect()
    }
}

impl Recorder for Counters {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let mut name = key.name().to_owned();
        for label in key.labels() {
            name.push_str(&format!(" {}={}", label.key(), label.value()));
        }
        let total =
            Arc::clone(self.by_key.lock().expect("lock").entry(name).or_insert_with(|| Arc::new(Total(0.into()))));
        Counter::from_arc(total)
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

#[test]
fn made_up_tool_names_share_one_label() {
    let counters = Counters::default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
    let tools = ToolSet::new().with(Echo);
    let mut calls = vec![ToolCall { id: "call_0".into(), name: "echo".into(), arguments: json!({"text": "hi"}) }];
    // What a confused (or steered) model may call: a new name each time,
    // some of them long.
    calls.extend((1..=50).map(|n| ToolCall {
        id: format!("call_{n}"),
        name: format!("tool_{n}_{}", "x".repeat(n * 100)),
        arguments: json!({}),
    }));
    let results = metrics::with_local_recorder(&counters, || runtime.block_on(tools.call_all(&calls)));
    assert!(!results[0].is_error && results[1..].iter().all(|r| r.is_error), "{results:?}");

    let by_tool = counters.tools(names::TOOL_CALLS);
    assert_eq!(
        by_tool,
        BTreeMap::from([("_OTHER".to_owned(), 50), ("echo".to_owned(), 1)]),
        "one series for the known tool, one for every name the set does not have"
    );
}
