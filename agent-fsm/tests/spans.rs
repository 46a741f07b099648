//! The runtime's `tracing` spans: each task and stream an action starts
//! runs inside the span of the step that started it, and that span names
//! the agent (`ExecutorConfig::agent_id`). A layer records every event
//! with the fields of the spans it happened in.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_fsm::runtime::{self, EffectContext, ExecutorConfig};
use agent_fsm::state_machine;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[state_machine(fallback = Nothing, name = Probe)]
mod probe {
    #[states]
    #[derive(Debug)]
    pub(crate) enum State {
        #[initial]
        Idle,
        Busy,
    }

    #[events]
    #[derive(Debug)]
    pub(crate) enum Event {
        Start,
        TaskDone,
        Item,
    }

    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
        Work,
    }

    transitions! {
        Idle + Start => Busy / Work,
        Busy + TaskDone => Busy / Nothing,
        Busy + Item => Busy / Nothing,
        Busy + Start => Idle / Nothing,
    }
}

/// Field name to value, `span` holding a span's name.
#[derive(Debug, Clone, Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// What was logged (its message) and the fields of each span around it,
/// outermost first.
type Logged = Vec<(String, Vec<BTreeMap<String, String>>)>;

#[derive(Clone, Default)]
struct Record(Arc<Mutex<Logged>>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Record {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        fields.0.insert("span".to_owned(), attrs.metadata().name().to_owned());
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let spans = ctx
            .event_scope(event)
            .map(|scope| {
                scope.from_root().map(|span| span.extensions().get::<Fields>().cloned().unwrap_or_default().0).collect()
            })
            .unwrap_or_default();
        let message = fields.0.remove("message").unwrap_or_default();
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push((message, spans));
    }
}

impl Record {
    /// The spans around the event logged with `message`.
    fn spans_of(&self, message: &str) -> Vec<BTreeMap<String, String>> {
        let logged = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let found = logged.iter().find(|(m, _)| m == message);
        found.unwrap_or_else(|| panic!("`{message}` was not logged: {logged:?}")).1.clone()
    }
}

/// `Work` starts a task that logs after a while and a stream that logs as
/// it is polled.
fn effects() -> impl runtime::Effects<probe::Probe, Output = ()> {
    runtime::from_fn(|action, cx: &mut EffectContext<'_, probe::Probe, ()>| {
        if let probe::Action::Work = action {
            cx.spawn_task(
                "task",
                async {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    tracing::info!("the task runs");
                    probe::Event::TaskDone
                },
                |_, _| probe::Event::TaskDone,
            );
            cx.stream(
                futures::stream::once(async {
                    tracing::info!("the stream is polled");
                    probe::Event::Item
                }),
                |_| None,
            );
        }
    })
}

/// The step span of `Start` in agent `desk-7`, with its step number.
fn start_step(spans: &[BTreeMap<String, String>]) -> Option<&BTreeMap<String, String>> {
    spans.iter().find(|s| {
        s.get("span").map(String::as_str) == Some("step")
            && s.get("event").map(String::as_str) == Some("Start")
            && s.get("agent").map(String::as_str) == Some("desk-7")
            && s.get("machine").map(String::as_str) == Some("Probe")
    })
}

#[tokio::test(start_paused = true)]
async fn tasks_and_streams_run_in_the_span_of_the_step_that_started_them() {
    let record = Record::default();
    let subscriber = tracing_subscriber::registry().with(record.clone());
    // This thread's default: the current-thread runtime runs the worker
    // and its tasks here.
    let _default = tracing::subscriber::set_default(subscriber);
    let handle = runtime::spawn(probe::Probe::new(), effects(), ExecutorConfig::new().agent_id("desk-7"));
    handle.send(probe::Event::Start).await.expect("sent");
    tokio::time::timeout(Duration::from_secs(60), handle.wait_idle())
        .await
        .expect("the work ends")
        .expect("the worker is running");
    for message in ["the task runs", "the stream is polled"] {
        let spans = record.spans_of(message);
        let step = start_step(&spans).unwrap_or_else(|| panic!("`{message}` ran outside Start's step: {spans:?}"));
        assert_eq!(step.get("step").map(String::as_str), Some("1"), "{step:?}");
    }
    // The step that delivered the task's result has a span of its own.
    let logged = record.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert!(
        logged.iter().any(|(_, spans)| spans.iter().any(|s| s.get("event").map(String::as_str) == Some("TaskDone")
            && s.get("agent").map(String::as_str) == Some("desk-7"))),
        "no event in the step of TaskDone: {logged:?}"
    );
}
