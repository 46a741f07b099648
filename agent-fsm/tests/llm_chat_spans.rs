//! The `chat` span of a model call, as a `tracing` layer sees it close:
//! a failed call's `error.type` is its error's kind in snake case, as the
//! OpenTelemetry GenAI conventions write it (`rate_limited`, not
//! `RateLimited`), whether the real client met the failure on a server on
//! loopback or a provider of one's own reported it; and a stream that
//! ends with neither a reply nor an error is no call that went well.
#![cfg(all(feature = "otel", feature = "openai"))]

#[path = "support/replay.rs"]
mod replay;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_fsm::llm::{
    AssistantMessage, ErrorKind, Message, OpenAiConfig, Provider, ProviderError, Request, StopReason, StreamEvent,
    Usage, observe,
};
use futures::StreamExt as _;
use replay::{ReplayServer, Reply};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// A span's fields by name.
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

/// The fields of every span closed, in the order they closed.
#[derive(Clone, Default)]
struct Closed(Arc<Mutex<Vec<BTreeMap<String, String>>>>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Closed {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
        {
            values.record(fields);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            let fields = span.extensions().get::<Fields>().cloned().unwrap_or_default();
            self.0.lock().unwrap_or_else(PoisonError::into_inner).push(fields.0);
        }
    }
}

impl Closed {
    /// The `chat` span of the model `model`, once closed.
    fn chat(&self, model: &str) -> BTreeMap<String, String> {
        let closed = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let name = format!("chat {model}");
        let found = closed.iter().find(|fields| fields.get("otel.name") == Some(&name));
        found.unwrap_or_else(|| panic!("no `{name}` span closed: {closed:#?}")).clone()
    }
}

/// A layer recording closed spans, set as this thread's dispatch.
fn record() -> (Closed, tracing::subscriber::DefaultGuard) {
    let closed = Closed::default();
    let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(closed.clone()));
    (closed, guard)
}

/// Reads `stream` to its end.
async fn drain(mut stream: futures::stream::BoxStream<'static, Result<StreamEvent, ProviderError>>) {
    tokio::time::timeout(Duration::from_secs(30), async { while stream.next().await.is_some() {} })
        .await
        .expect("the stream ends");
}

/// `error.type` of a span, and whether its status is `error`.
fn failure(span: &BTreeMap<String, String>) -> (Option<&str>, bool) {
    (span.get("error.type").map(String::as_str), span.get("otel.status_code").map(String::as_str) == Some("error"))
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_calls_error_type_is_its_kind_in_snake_case() {
    let (closed, _guard) = record();
    let limited =
        Reply::status(429, r#"{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}"#)
            .header("retry-after", "1");
    let text = json!({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": null}]});
    let error = json!({"error": {"message": "maximum context length", "type": "invalid_request_error",
        "code": "context_length_exceeded"}});
    let too_long = format!("data: {text}\n\ndata: {error}\n\n");
    let server = ReplayServer::start(vec![limited, Reply::events(&too_long)]).await;
    let client = OpenAiConfig::without_key().base_url(server.url()).build().expect("client");
    drain(client.stream(&Request::new("limited").message(Message::user("hi")))).await;
    drain(client.stream(&Request::new("too-long").message(Message::user("hi")))).await;
    assert_eq!(failure(&closed.chat("limited")), (Some("rate_limited"), true));
    assert_eq!(failure(&closed.chat("too-long")), (Some("context_too_long"), true));

    // A provider of one's own, through `observe`: each kind by its name.
    for (kind, name) in [
        (ErrorKind::ServerError { status: 503, retry_after: None }, "server_error"),
        (ErrorKind::Overloaded { retry_after: Some(Duration::from_secs(1)) }, "overloaded"),
        (ErrorKind::ConnectionDropped, "connection_dropped"),
        (ErrorKind::MalformedStream, "malformed_stream"),
        (ErrorKind::QuotaExceeded, "quota_exceeded"),
    ] {
        let failed = futures::stream::iter([Err(ProviderError::new(kind, "no"))]);
        drain(observe("own", &Request::new(name), Box::pin(failed))).await;
        assert_eq!(failure(&closed.chat(name)), (Some(name), true));
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_stream_that_ends_without_a_reply_is_no_successful_call() {
    let (closed, _guard) = record();
    // Some text, then the end: no `Completed`, no error.
    let ended = futures::stream::iter([Ok(StreamEvent::TextDelta("Hel".into()))]);
    drain(observe("own", &Request::new("ended"), Box::pin(ended))).await;
    drain(observe("own", &Request::new("empty"), Box::pin(futures::stream::empty()))).await;
    let message = AssistantMessage { text: "Hi".into(), ..AssistantMessage::default() };
    let whole = futures::stream::iter([
        Ok(StreamEvent::TextDelta("Hi".into())),
        Ok(StreamEvent::Completed { message, stop_reason: StopReason::EndTurn, usage: Usage::default() }),
    ]);
    drain(observe("own", &Request::new("whole"), Box::pin(whole))).await;
    assert_eq!(failure(&closed.chat("ended")), (Some("ended_without_reply"), true));
    assert_eq!(failure(&closed.chat("empty")), (Some("ended_without_reply"), true));
    assert_eq!(failure(&closed.chat("whole")), (None, false));
}
