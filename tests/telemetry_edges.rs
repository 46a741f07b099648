//! The spans at a turn's and a tool call's edges, exported to
//! OpenTelemetry's in-memory exporter: a turn whose first event the table
//! does not handle ends with it, a turn the worker's failure ends says
//! so, a tool call or a model call cut short says so, and a tool name the
//! model made up does not name a span.

use std::time::Duration;

use agent_fsm::llm::{AssistantMessage, ProviderError, Request, StopReason, StreamEvent, ToolCall, Usage};
use agent_fsm::runtime::{self, EffectContext, ExecutorConfig};
use agent_fsm::telemetry::{AgentTurns, opentelemetry};
use agent_fsm::tool::{Tool, ToolSet, schemars};
use opentelemetry::trace::SpanId;
use opentelemetry_sdk::trace::SpanData;
use serde::Deserialize;

#[path = "support/otel.rs"]
mod otel;
use otel::exporter;

#[agent_fsm::state_machine(fallback = Nothing, name = Desk)]
mod desk {
    #[states]
    #[derive(Debug)]
    pub(crate) enum State {
        #[initial]
        Idle,
        Thinking,
        Paused,
    }

    #[events]
    #[derive(Debug)]
    pub(crate) enum Event {
        Input,
        Done,
        Pause,
        Resume,
        Crash,
    }

    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
        Boom,
    }

    transitions! {
        Idle + Input => Thinking / Nothing,
        Thinking + Done => Idle / Nothing,
        Idle + Pause => Paused / Nothing,
        Paused + Resume => Idle / Nothing,
        Thinking + Crash => Thinking / Boom,
    }
}

/// `Boom` panics; every other action does nothing.
fn effects() -> impl runtime::Effects<desk::Desk, Output = ()> {
    runtime::from_fn(|action, _: &mut EffectContext<'_, desk::Desk, ()>| {
        assert!(!matches!(action, desk::Action::Boom), "boom");
    })
}

/// The attribute `key` of `span`, as text.
fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_turn_whose_first_event_is_not_handled_ends_with_it() {
    let (exporter, provider, _guard) = exporter();
    let turns = AgentTurns::new("desk").starts_on([desk::EventKind::Input]).ends_in([desk::StateKind::Idle]);
    let handle = runtime::spawn(desk::Desk::new(), effects(), ExecutorConfig::new().agent_turns(turns));
    // Paused, outside a turn; the input it has no row for; resumed; then a
    // turn that runs.
    for event in [desk::Event::Pause, desk::Event::Input, desk::Event::Resume, desk::Event::Input, desk::Event::Done] {
        handle.send(event).await.expect("sent");
    }
    tokio::time::timeout(Duration::from_secs(60), handle.shutdown()).await.expect("in time").expect("stopped");
    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("spans");

    let mut turns: Vec<&SpanData> = spans.iter().filter(|s| s.name == "invoke_agent desk").collect();
    turns.sort_by_key(|s| s.start_time);
    assert_eq!(turns.len(), 2, "{spans:#?}");
    let hops_under = |turn: &SpanData| -> Vec<String> {
        let mut hops: Vec<&SpanData> =
            spans.iter().filter(|s| s.parent_span_id == turn.span_context.span_id()).collect();
        hops.sort_by_key(|s| s.start_time);
        hops.iter().map(|s| s.name.to_string()).collect()
    };
    // The refused input's turn: ended at once, saying why, with nothing in it.
    assert_eq!(attr(turns[0], "error.type").as_deref(), Some("no_row"));
    assert_eq!(hops_under(turns[0]), Vec::<String>::new());
    // The resume is outside every turn.
    let resume = spans.iter().find(|s| s.name == "transition Paused -> Idle").expect("the resume's hop");
    assert_eq!(resume.parent_span_id, SpanId::INVALID, "the resume belongs to no turn");
    // The next input opens a turn of its own, which ends well.
    assert_eq!(attr(turns[1], "error.type"), None);
    assert_eq!(hops_under(turns[1]), ["transition Idle -> Thinking", "transition Thinking -> Idle"]);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_turn_the_workers_failure_ends_says_so() {
    let (exporter, provider, _guard) = exporter();
    let turns = AgentTurns::new("desk").starts_on([desk::EventKind::Input]).ends_in([desk::StateKind::Idle]);
    let handle = runtime::spawn(desk::Desk::new(), effects(), ExecutorConfig::new().agent_turns(turns));
    for event in [desk::Event::Input, desk::Event::Crash] {
        handle.send(event).await.expect("sent");
    }
    let stopped = tokio::time::timeout(Duration::from_secs(60), handle.wait_finished()).await.expect("in time");
    assert!(stopped.is_err(), "the effects' panic fails the worker: {stopped:?}");
    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("spans");
    let turns: Vec<&SpanData> = spans.iter().filter(|s| s.name == "invoke_agent desk").collect();
    assert_eq!(turns.len(), 1, "{spans:#?}");
    assert_eq!(attr(turns[0], "error.type").as_deref(), Some("effects_panicked"));
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

#[tokio::test(flavor = "current_thread")]
async fn a_model_call_cut_short_has_an_error_type() {
    use futures::StreamExt as _;
    let (exporter, provider, _guard) = exporter();
    // A reply that has begun and then waits, read once, then dropped (an
    // interrupt, a timeout); and one read to its end.
    let begun = futures::stream::iter([Ok(StreamEvent::TextDelta("Hel".into()))]).chain(futures::stream::pending());
    let mut cut = agent_fsm::llm::observe("test", &Request::new("cut-model"), Box::pin(begun));
    assert!(cut.next().await.is_some(), "the first delta");
    drop(cut);
    let message = AssistantMessage { text: "Hi".into(), ..AssistantMessage::default() };
    let whole: Vec<Result<StreamEvent, ProviderError>> = vec![
        Ok(StreamEvent::TextDelta("Hi".into())),
        Ok(StreamEvent::Completed { message, stop_reason: StopReason::EndTurn, usage: Usage::default() }),
    ];
    let read = agent_fsm::llm::observe("test", &Request::new("whole-model"), Box::pin(futures::stream::iter(whole)));
    assert_eq!(read.count().await, 2);
    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("spans");
    let span = |name: &str| spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no {name}: {spans:#?}"));
    assert_eq!(attr(span("chat cut-model"), "error.type").as_deref(), Some("cancelled"));
    assert_eq!(attr(span("chat whole-model"), "error.type"), None);
}

#[tokio::test(flavor = "current_thread")]
async fn a_made_up_tool_name_does_not_name_the_span() {
    let (exporter, provider, _guard) = exporter();
    let tools = ToolSet::new().with(Forever);
    let made_up = ToolCall { id: "c1".into(), name: "made_up_4711".into(), arguments: serde_json::json!({}) };
    let result = tokio::time::timeout(Duration::from_secs(10), tools.call(&made_up)).await.expect("in time");
    assert!(result.is_error, "{result:?}");
    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("spans");
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, ["execute_tool (unknown)"], "one name for every name made up");
    assert_eq!(attr(&spans[0], "gen_ai.tool.name").as_deref(), Some("made_up_4711"), "the name is kept");
    assert_eq!(attr(&spans[0], "error.type").as_deref(), Some("unknown_tool"));
}

/// Panics when called.
struct Panics;

impl Tool for Panics {
    const NAME: &'static str = "panics";
    type Args = NoArgs;
    type Output = String;
    type Error = String;

    fn description(&self) -> String {
        "Panics".to_owned()
    }

    async fn call(&self, _: NoArgs) -> Result<String, String> {
        panic!("the tool broke")
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_failed_tool_calls_span_says_how_it_failed() {
    let (exporter, provider, _guard) = exporter();
    let tools = ToolSet::new().with(Forever).with(Panics).with_timeout(Duration::from_secs(5));
    let calls =
        [("forever", serde_json::json!({})), ("panics", serde_json::json!({})), ("panics", serde_json::json!(7))]
            .into_iter()
            .enumerate()
            .map(|(n, (name, arguments))| ToolCall { id: format!("c{n}"), name: name.into(), arguments })
            .collect::<Vec<_>>();
    let results = tokio::time::timeout(Duration::from_secs(60), tools.call_all(&calls)).await.expect("in time");
    assert!(results.iter().all(|r| r.is_error), "{results:?}");
    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("spans");
    let mut types: Vec<(String, String)> = spans
        .iter()
        .map(|s| (attr(s, "gen_ai.tool.call.id").unwrap_or_default(), attr(s, "error.type").unwrap_or_default()))
        .collect();
    types.sort();
    let expected = [("c0", "timeout"), ("c1", "panicked"), ("c2", "invalid_arguments")];
    assert_eq!(types, expected.map(|(id, kind)| (id.to_owned(), kind.to_owned())));
}
