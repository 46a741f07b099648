//! The OpenTelemetry status of the spans, exported to the in-memory
//! exporter: a span whose `error.type` says the operation failed (a tool
//! call, a model call, a turn) has status `Error`, which backends read to
//! show it failed; one that went well keeps status `Unset`.

use std::time::Duration;

use agent_fsm::llm::{AssistantMessage, ErrorKind, ProviderError, Request, StopReason, StreamEvent, ToolCall, Usage};
use agent_fsm::runtime::{self, ExecutorConfig};
use agent_fsm::telemetry::{AgentTurns, opentelemetry};
use agent_fsm::tool::{Tool, ToolSet, schemars};
use futures::StreamExt as _;
use opentelemetry::trace::Status;
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
    }

    #[events]
    #[derive(Debug)]
    pub(crate) enum Event {
        Input,
        Done,
    }

    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
    }

    transitions! {
        Idle + Input => Thinking / Nothing,
        Thinking + Done => Idle / Nothing,
    }
}

/// The span named `name` among `spans`.
fn span<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no {name}: {spans:#?}"))
}

/// Whether `span` has status `Error`.
fn is_error(span: &SpanData) -> bool {
    matches!(span.status, Status::Error { .. })
}

/// The arguments of the tools here: none.
#[derive(Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// Fails or answers, as its name says.
struct Fails;

impl Tool for Fails {
    const NAME: &'static str = "fails";
    type Args = NoArgs;
    type Output = String;
    type Error = String;

    fn description(&self) -> String {
        "Fails".to_owned()
    }

    async fn call(&self, _: NoArgs) -> Result<String, String> {
        Err("no".to_owned())
    }
}

/// Answers.
struct Answers;

impl Tool for Answers {
    const NAME: &'static str = "answers";
    type Args = NoArgs;
    type Output = String;
    type Error = String;

    fn description(&self) -> String {
        "Answers".to_owned()
    }

    async fn call(&self, _: NoArgs) -> Result<String, String> {
        Ok("yes".to_owned())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_tool_calls_span_has_status_error() {
    let (exporter, provider, _guard) = exporter();
    let tools = ToolSet::new().with(Fails).with(Answers);
    let calls: Vec<ToolCall> = ["fails", "answers", "made_up"]
        .iter()
        .map(|name| ToolCall { id: format!("id-{name}"), name: (*name).into(), arguments: serde_json::json!({}) })
        .collect();
    let results = tokio::time::timeout(Duration::from_secs(10), tools.call_all(&calls)).await.expect("in time");
    assert_eq!(results.iter().map(|r| r.is_error).collect::<Vec<_>>(), [true, false, true]);
    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("spans");
    assert!(is_error(span(&spans, "execute_tool fails")), "{spans:#?}");
    assert!(is_error(span(&spans, "execute_tool (unknown)")), "{spans:#?}");
    assert_eq!(span(&spans, "execute_tool answers").status, Status::Unset);
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_or_cut_model_calls_span_has_status_error() {
    let (exporter, provider, _guard) = exporter();
    let failing: Vec<Result<StreamEvent, ProviderError>> = vec![Err(ProviderError::new(ErrorKind::Timeout, "slow"))];
    let failed =
        agent_fsm::llm::observe("test", &Request::new("failed-model"), Box::pin(futures::stream::iter(failing)));
    assert_eq!(failed.count().await, 1);
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
    // A stream that ends with neither its reply nor an error failed too.
    let ended = futures::stream::iter([Ok(StreamEvent::TextDelta("Hi".into()))]);
    let ended = agent_fsm::llm::observe("test", &Request::new("ended-model"), Box::pin(ended));
    assert_eq!(ended.count().await, 1);
    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("spans");
    assert!(is_error(span(&spans, "chat failed-model")), "{spans:#?}");
    assert!(is_error(span(&spans, "chat cut-model")), "{spans:#?}");
    assert!(is_error(span(&spans, "chat ended-model")), "{spans:#?}");
    assert_eq!(span(&spans, "chat whole-model").status, Status::Unset);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_refused_turns_span_has_status_error() {
    let (exporter, provider, _guard) = exporter();
    // A turn ends on entering `Thinking`: the second input, which `Thinking`
    // has no row for, opens a turn of its own that the table refuses.
    let turns = AgentTurns::new("desk").starts_on([desk::EventKind::Input]).ends_in([desk::StateKind::Thinking]);
    let config = ExecutorConfig::new().agent_turns(turns);
    let handle = runtime::spawn(desk::Desk::new(), runtime::from_fn(|_, _| {}), config);
    for event in [desk::Event::Input, desk::Event::Input, desk::Event::Done] {
        handle.send(event).await.expect("sent");
    }
    tokio::time::timeout(Duration::from_secs(60), handle.shutdown()).await.expect("in time").expect("stopped");
    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("spans");
    let mut turns: Vec<&SpanData> = spans.iter().filter(|s| s.name == "invoke_agent desk").collect();
    turns.sort_by_key(|s| s.start_time);
    assert_eq!(turns.len(), 2, "{spans:#?}");
    assert_eq!(turns[0].status, Status::Unset, "the turn that ran");
    assert!(is_error(turns[1]), "the refused turn: {:#?}", turns[1]);
}
