//! Models: provider-neutral conversation types, the events a streamed
//! reply yields, classified errors, and streaming clients for
//! OpenAI-compatible servers and Anthropic.
//!
//! ```
//! use agent_fsm::llm::{Message, Provider, ProviderError, Request, StreamEvent};
//! use futures::StreamExt;
//!
//! /// Asks `model` one question and returns its whole answer. Any provider
//! /// will do: [`OpenAi`], [`Anthropic`], or a scripted one in tests.
//! async fn ask(model: &impl Provider, question: &str) -> Result<String, ProviderError> {
//!     let request = Request::new("gpt-4o-mini").system("Answer briefly.").message(Message::user(question));
//!     let mut reply = model.stream(&request);
//!     let mut answer = String::new();
//!     while let Some(event) = reply.next().await {
//!         match event? {
//!             StreamEvent::TextDelta(text) => answer.push_str(&text), // show it as it comes
//!             StreamEvent::Completed { message, .. } => answer = message.text, // the whole reply
//!             _ => {}                                                 // tool-call deltas
//!         }
//!     }
//!     Ok(answer)
//! }
//! # use agent_fsm::llm::{AssistantMessage, StopReason, Usage};
//! # use futures::stream::{self, BoxStream};
//! # /// A model that always says the same thing, in two pieces.
//! # struct Scripted;
//! # impl Provider for Scripted {
//! #     fn stream(&self, _request: &Request) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
//! #         let message = AssistantMessage { text: "2 + 2 is 4".into(), ..AssistantMessage::default() };
//! #         Box::pin(stream::iter([
//! #             Ok(StreamEvent::TextDelta("2 + 2 ".into())),
//! #             Ok(StreamEvent::TextDelta("is 4".into())),
//! #             Ok(StreamEvent::Completed { message, stop_reason: StopReason::EndTurn, usage: Usage::default() }),
//! #         ]))
//! #     }
//! # }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), ProviderError> {
//! // `OpenAi::new(key)?` or `Anthropic::new(key)?` for a real model; a
//! // scripted provider here.
//! assert_eq!(ask(&Scripted, "2 + 2?").await?, "2 + 2 is 4");
//! # Ok(())
//! # }
//! ```
//!
//! | item | feature | what it is |
//! | --- | --- | --- |
//! | [`Message`], [`AssistantMessage`], [`Reasoning`], [`ReasoningBlock`], [`ToolCall`], [`ToolResult`], [`ToolDefinition`], [`Request`] | `llm` | the conversation a model reads, and what a call sends |
//! | [`StreamEvent`], [`StopReason`], [`Usage`] | `llm` | what a streamed reply yields |
//! | [`ProviderError`], [`ErrorKind`] | `llm` | a failed call, classified |
//! | [`Provider`] | `llm` | what every client implements, so a machine's effects can be generic over it |
//! | [`OpenAi`], [`OpenAiConfig`], [`openai::StreamParser`] | `openai` | Chat Completions over any OpenAI-compatible server |
//! | [`Anthropic`], [`AnthropicConfig`], [`anthropic::StreamParser`] | `anthropic` | the Anthropic Messages API |
//!
//! `llm` needs only serde, serde_json and futures; `openai` and `anthropic`
//! add the HTTP client (reqwest on rustls with the `ring` provider).
//!
//! # A call
//! [`Provider::stream`] takes a [`Request`] and returns a stream of
//! `Result<StreamEvent, ProviderError>`: text, reasoning and tool-call
//! deltas as they arrive, then one [`StreamEvent::Completed`] with the
//! whole reply (its
//! tool calls' arguments parsed as JSON, in the order the calls began,
//! each with an id no other call of the reply has: one the server left out,
//! or gave an earlier call too, is made up), why
//! the model stopped and the tokens used; or, in place of `Completed`, one
//! error, after which the stream ends. Parallel tool calls are assembled by
//! index and id, each [`StreamEvent::ToolCallDelta`] numbered by the call's
//! position in the reply, whichever provider sent it.
//!
//! With Anthropic's extended thinking on (a `thinking` field in
//! [`Request::extra`]), the reply's thinking and redacted-thinking blocks
//! are kept, signatures included, in [`AssistantMessage::reasoning`], and
//! the Anthropic client sends them back, unchanged and first, with the
//! message that carries them, as the API requires in a tool round (see
//! [`anthropic`](crate::llm::anthropic#extended-thinking)). The
//! OpenAI-compatible client never sends them. It keeps there, instead,
//! the thought signature Gemini gives each tool call
//! ([`ReasoningBlock::CallSignature`]), and sends it back on that call,
//! which Gemini 3 requires of the next request in a tool round.
//!
//! In a machine, an action that calls the model opens the stream through
//! the effects context, mapping each item to an event:
//!
//! ```
//! # use agent_fsm::llm::{Provider, ProviderError, Request, StreamEvent};
//! # use agent_fsm::runtime::EffectContext;
//! # use futures::StreamExt;
//! # enum Event { Llm(Result<StreamEvent, ProviderError>) }
//! # fn call<M: agent_fsm::StateMachine<Event = Event>, P: Provider>(provider: &P, request: &Request, cx: &mut EffectContext<'_, M, ()>) {
//! cx.stream_keyed("llm", provider.stream(request).map(Event::Llm), |_failure| None);
//! # }
//! ```
//!
//! # Errors and retries
//! A [`ProviderError`] says what happened ([`ErrorKind`]) and whether the
//! same request may succeed later ([`ProviderError::is_retryable`]):
//!
//! | kind | from | retry? |
//! | --- | --- | --- |
//! | [`RateLimited`](ErrorKind::RateLimited) | HTTP 429, `rate_limit_error` | yes, after [`retry_after`](ProviderError::retry_after) if given |
//! | [`Overloaded`](ErrorKind::Overloaded) | HTTP 529, `overloaded_error` (as a body or an event mid-stream) | yes |
//! | [`ServerError`](ErrorKind::ServerError) | HTTP 5xx, 409 (a lock timed out), `api_error`, `server_error`, a `finish_reason` of `abort`, `error` or `insufficient_system_resource` | yes |
//! | [`Timeout`](ErrorKind::Timeout) | connect, read or total timeout, HTTP 408 | yes |
//! | [`ConnectionDropped`](ErrorKind::ConnectionDropped) | the connection failed or ended before the reply was complete (an event stream, or a whole reply a server sent in its place), or the stream's end marker came with no stop reason in the middle of a tool call whose arguments are not whole JSON | yes |
//! | [`MalformedStream`](ErrorKind::MalformedStream) | a frame that is not the JSON expected, a tool call the stream never named (no id nor name at a new index, and no name later), a 200 whose body is a web page or is said to be compressed and is not, or JSON that is not the provider's whole reply (an OpenAI-compatible server's chat completion sent whole is read as the reply, and either provider's error object sent so as the error), a stream past the limits below | yes |
//! | [`BadRequest`](ErrorKind::BadRequest) | other 4xx, a redirect to another origin, more than 10 redirects | no |
//! | [`Auth`](ErrorKind::Auth) | HTTP 401, 403 | no |
//! | [`QuotaExceeded`](ErrorKind::QuotaExceeded) | HTTP 402, `insufficient_quota`, `billing_error`, Anthropic's 400 saying the credit balance is too low | no |
//! | [`ContextTooLong`](ErrorKind::ContextTooLong) | a 400 whose message says the prompt, or the prompt and `max_tokens`, is past the window, HTTP 413 | no |
//! | [`InvalidConfig`](ErrorKind::InvalidConfig) | an invalid header, TLS setup | no |
//! | [`Unrecognized`](ErrorKind::Unrecognized) | an error inside the stream whose `code` and `type` name no kind either provider documents, or that has neither | no |
//!
//! An error inside the stream is classified by its `code` when that is an
//! HTTP status or a reason the providers document
//! (`context_length_exceeded`, `insufficient_quota`, `rate_limit_exceeded`,
//! `invalid_api_key`), else by its `type`: OpenAI's `code` may be any
//! string, and one this client does not know (`invalid_value` beside
//! `invalid_request_error`) says nothing of the kind.
//!
//! An event stream that ends without a single event is classified by what
//! it held instead: an error object sent without the `data:` framing (a
//! proxy failing after the headers) by its type, as an error event would
//! be; any other text as a `MalformedStream` that quotes it.
//!
//! What a server sends is bounded, so that a failing or hostile one cannot
//! fill the agent's memory: one event may hold at most 16 MiB while it
//! arrives (an endless line included), and one reply at most 64 MiB of
//! text, reasoning, tool names, ids and arguments, 1,024 tool calls and 4,096 other
//! blocks (thinking, Anthropic's server tools). Past a limit
//! the reply ends with a `MalformedStream` error. Of an error status's body
//! (or a web page sent in place of the stream) the first 64 KiB are read,
//! and the error is classified from them. Time is bounded by the
//! client's timeouts: the read timeout for a server that goes quiet, the
//! total timeout (none unless set) for one that trickles on. A reply
//! whose stop reason came waits at most 10 s more for its end marker
//! (Anthropic's `message_stop`, the OpenAI-compatible `[DONE]`),
//! keep-alives or not, then completes.
//!
//! The clients ask for a compressed reply (`accept-encoding: gzip,
//! deflate`, as the providers' own SDKs do) and read a body compressed so,
//! asked for or not (a proxy that compresses what it forwards), event by
//! event as the server flushes it; the limits above count the body as
//! decompressed. A header of yours named `accept-encoding` replaces the
//! request's (`identity` asks for none); brotli and zstd bodies are not
//! read, nor a gzip body of several members (each flush its own member),
//! which ends as a dropped connection; a `deflate` body
//! must have the zlib wrapper HTTP names (a raw deflate stream is a
//! `MalformedStream`), and only the lower-case names are read: a body
//! sent as `GZIP` or `x-gzip` is not decompressed.
//!
//! A redirect is followed only within the origin (scheme, host and port)
//! of the configured URL: the key headers (`x-api-key`, `api-key`, a
//! gateway's own) are never sent to a server the user did not name, nor
//! from https to http. A redirect elsewhere fails the call as a
//! `BadRequest` that names where it pointed. Nor does a config or a
//! client show a key in its `Debug` output: the key and the values of the
//! headers and query parameters added are hidden there, and an error that
//! names the URL names it without its query.
//!
//! The server's wait (`retry-after-ms`, or `retry-after` in seconds or as
//! an HTTP date) goes to
//! [`RetryPolicy::delay_for`](crate::runtime::RetryPolicy::delay_for),
//! which honours it up to the policy's cap and otherwise backs off
//! exponentially; the table's own guard (`attempt < max`) decides whether
//! to retry at all.

mod error;
mod event;
mod reasoning;
mod types;

#[cfg(any(feature = "openai", feature = "anthropic"))]
mod assemble;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod classify;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod http;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod sse;

#[cfg(feature = "anthropic")]
#[cfg_attr(docsrs, doc(cfg(feature = "anthropic")))]
pub mod anthropic;
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub mod openai;

use std::sync::Arc;

use futures::stream::BoxStream;

#[cfg(feature = "anthropic")]
#[cfg_attr(docsrs, doc(cfg(feature = "anthropic")))]
pub use anthropic::{Anthropic, AnthropicConfig};
pub use error::{ErrorKind, ProviderError};
pub use event::{StopReason, StreamEvent, Usage};
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub use openai::{OpenAi, OpenAiConfig};
pub use reasoning::{Reasoning, ReasoningBlock};
pub use types::{AssistantMessage, Message, Request, ToolCall, ToolDefinition, ToolResult};

/// A model that streams its reply: what the `OpenAi` and `Anthropic`
/// clients implement, so a machine's effects
/// can be generic over the provider (or hold a `Box<dyn Provider>`).
///
/// # Examples
/// ```
/// use agent_fsm::llm::{AssistantMessage, Provider, ProviderError, Request, StopReason, StreamEvent, Usage};
/// use futures::stream::{self, BoxStream};
///
/// /// A model that always says the same thing (for tests): the text as it
/// /// streams, then the whole reply, which every stream ends with.
/// struct Parrot(String);
///
/// impl Provider for Parrot {
///     fn stream(&self, _request: &Request) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
///         let message = AssistantMessage { text: self.0.clone(), ..AssistantMessage::default() };
///         let completed = StreamEvent::Completed { message, stop_reason: StopReason::EndTurn, usage: Usage::default() };
///         Box::pin(stream::iter([Ok(StreamEvent::TextDelta(self.0.clone())), Ok(completed)]))
///     }
/// }
/// ```
pub trait Provider: Send + Sync + 'static {
    /// Sends `request` and streams the reply (see the [module docs](self)).
    /// The request is read before this returns; the stream owns what it
    /// needs. Nothing is sent until the stream is first polled, and
    /// dropping the stream closes the connection (a cancelled call stops
    /// at once).
    fn stream(&self, request: &Request) -> BoxStream<'static, Result<StreamEvent, ProviderError>>;
}

/// `stream`, the reply of the provider named `provider` (`openai`,
/// `anthropic`: the conventions' `gen_ai.provider.name`) to `request`, as
/// the telemetry features observe it: with `otel`, read inside a
/// `chat {model}` span that records the call's token usage and finish
/// reason; with `metrics`, its tokens counted by provider and model (see
/// [`telemetry`](crate::telemetry)). Without either feature it returns
/// `stream` as it is.
///
/// The OpenAI and Anthropic clients call it for every call; a provider of
/// your own calls it in its [`Provider::stream`] to be observed alike.
#[must_use]
pub fn observe(
    provider: &'static str,
    request: &Request,
    stream: BoxStream<'static, Result<StreamEvent, ProviderError>>,
) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
    #[cfg(any(feature = "otel", feature = "metrics"))]
    let stream = crate::telemetry::observe_chat(provider, request, stream);
    #[cfg(not(any(feature = "otel", feature = "metrics")))]
    let _ = (provider, request);
    stream
}

impl<P: Provider + ?Sized> Provider for Arc<P> {
    fn stream(&self, request: &Request) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        (**self).stream(request)
    }
}

impl<P: Provider + ?Sized> Provider for Box<P> {
    fn stream(&self, request: &Request) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        (**self).stream(request)
    }
}
