//! A model call's `chat` span and its token metrics, around the reply's
//! stream.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use futures::stream::BoxStream;

#[cfg(feature = "otel")]
use crate::llm::{ErrorKind, StopReason};
use crate::llm::{ProviderError, Request, StreamEvent};

/// A reply's stream, observed: the `chat` span is entered while it is
/// polled and closed when the stream ends or is dropped; the usage of its
/// `Completed` event is recorded. Dropped before its reply or an error
/// came (an interrupt, a timeout, a shutdown), the span's `error.type` is
/// `cancelled`; ended before either, `ended_without_reply`: without them
/// the span of a call cut short reads as a call that went well.
struct Observed {
    inner: BoxStream<'static, Result<StreamEvent, ProviderError>>,
    #[cfg(feature = "otel")]
    span: tracing::Span,
    /// The reply or an error came, or the stream ended.
    #[cfg(feature = "otel")]
    settled: bool,
    #[cfg(feature = "metrics")]
    labels: [(&'static str, String); 2],
}

/// `stream`, the reply of `provider` to `request`, observed (see
/// [`crate::llm::observe`]).
pub(crate) fn observe_chat(
    provider: &'static str,
    request: &Request,
    stream: BoxStream<'static, Result<StreamEvent, ProviderError>>,
) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
    let model = request.model.as_str();
    Box::pin(Observed {
        inner: stream,
        #[cfg(feature = "otel")]
        span: tracing::info_span!(
            "chat",
            otel.name = format!("chat {model}").as_str(),
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider,
            gen_ai.request.model = model,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
            "otel.status_code" = tracing::field::Empty,
        ),
        #[cfg(feature = "otel")]
        settled: false,
        #[cfg(feature = "metrics")]
        labels: [("provider", provider.to_owned()), ("model", model.to_owned())],
    })
}

/// The `error.type` of a call whose stream ended with neither its reply
/// (`Completed`) nor an error.
#[cfg(feature = "otel")]
const ENDED_WITHOUT_REPLY: &str = "ended_without_reply";

/// The `error.type` of a failed call: its kind's name in snake case, as
/// the conventions write theirs (`rate_limited`, `server_error`), without
/// the details a kind carries (a status, a wait).
#[cfg(feature = "otel")]
fn error_type(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::RateLimited { .. } => "rate_limited",
        ErrorKind::Overloaded { .. } => "overloaded",
        ErrorKind::ServerError { .. } => "server_error",
        ErrorKind::Timeout => "timeout",
        ErrorKind::ConnectionDropped => "connection_dropped",
        ErrorKind::BadRequest => "bad_request",
        ErrorKind::Auth => "auth",
        ErrorKind::QuotaExceeded => "quota_exceeded",
        ErrorKind::ContextTooLong => "context_too_long",
        ErrorKind::MalformedStream => "malformed_stream",
        ErrorKind::InvalidConfig => "invalid_config",
        ErrorKind::Unrecognized => "unrecognized",
    }
}

/// The conventions' name of a finish reason.
#[cfg(feature = "otel")]
fn finish_reason(reason: &StopReason) -> &str {
    match reason {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::StopSequence => "stop_sequence",
        StopReason::ContentFilter => "content_filter",
        StopReason::Other(other) => other,
    }
}

impl Observed {
    /// Records what an item of the stream says about the call.
    fn record(&mut self, item: &Result<StreamEvent, ProviderError>) {
        #[cfg(feature = "otel")]
        if matches!(item, Ok(StreamEvent::Completed { .. }) | Err(_)) {
            self.settled = true;
        }
        match item {
            Ok(StreamEvent::Completed { usage, stop_reason, .. }) => {
                #[cfg(feature = "otel")]
                {
                    self.span.record("gen_ai.usage.input_tokens", usage.input_tokens);
                    self.span.record("gen_ai.usage.output_tokens", usage.output_tokens);
                    // An array of strings in the conventions, which a
                    // `tracing` field cannot hold: set on the OpenTelemetry
                    // span itself.
                    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
                    let reasons = vec![opentelemetry::StringValue::from(finish_reason(stop_reason).to_owned())];
                    self.span.set_attribute(
                        "gen_ai.response.finish_reasons",
                        opentelemetry::Value::Array(opentelemetry::Array::String(reasons)),
                    );
                }
                #[cfg(feature = "metrics")]
                {
                    let [provider, model] = &self.labels;
                    for (kind, tokens) in [("input", usage.input_tokens), ("output", usage.output_tokens)] {
                        metrics::counter!(
                            super::names::LLM_TOKENS,
                            "provider" => provider.1.clone(),
                            "model" => model.1.clone(),
                            "type" => kind,
                        )
                        .increment(tokens);
                    }
                }
                #[cfg(not(feature = "otel"))]
                let _ = stop_reason;
            }
            Err(error) => {
                #[cfg(feature = "otel")]
                super::failed(&self.span, error_type(error.kind()));
                #[cfg(not(feature = "otel"))]
                let _ = error;
            }
            Ok(_) => {}
        }
    }
}

impl Stream for Observed {
    type Item = Result<StreamEvent, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        #[cfg(feature = "otel")]
        let _entered = self.span.clone().entered();
        let polled = self.inner.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(item)) => self.record(item),
            // Ended: the span closes now, not when the stream is dropped.
            // Ended with neither the reply nor an error (a provider of
            // one's own whose stream just stops), the call did not go well.
            #[cfg(feature = "otel")]
            Poll::Ready(None) => {
                if !self.settled {
                    super::failed(&self.span, ENDED_WITHOUT_REPLY);
                }
                self.settled = true;
                self.span = tracing::Span::none();
            }
            _ => {}
        }
        polled
    }
}

#[cfg(feature = "otel")]
impl Drop for Observed {
    fn drop(&mut self) {
        if !self.settled {
            super::failed(&self.span, "cancelled");
        }
    }
}
