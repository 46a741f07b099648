//! The OpenAI-compatible Chat Completions client ([`OpenAi`]): a
//! [`Request`] becomes a `POST {base_url}/chat/completions` with
//! `"stream": true`, and the `data:` chunks that come back become
//! [`StreamEvent`]s through [`StreamParser`], which also works without
//! HTTP (feed it bytes read any other way).
//!
//! ```no_run
//! use agent_fsm::llm::{Message, OpenAiConfig, Provider, Request, StreamEvent};
//! use futures::StreamExt;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // The key from `OPENAI_API_KEY` (and `OPENAI_BASE_URL`, if set).
//! let model = OpenAiConfig::from_env().ok_or("OPENAI_API_KEY is not set")?.build()?;
//! let request = Request::new("gpt-4o-mini").message(Message::user("Say hello."));
//! let mut reply = model.stream(&request);
//! while let Some(event) = reply.next().await {
//!     if let StreamEvent::TextDelta(text) = event? {
//!         print!("{text}");
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! The base URL makes the same client serve OpenAI, Azure-style gateways,
//! OpenRouter, Groq, vLLM, llama.cpp's server and Ollama. What those
//! servers do differently is tolerated: optional fields left out or
//! `null`, a `finish_reason` of `""` until the last chunk, `data:` without
//! a space, keep-alive comments, usage in a last chunk with no choices
//! (asked for with `stream_options.include_usage`), in the chunk with
//! the finish reason or, as Groq writes it, in that chunk's `x_groq`, or,
//! as Moonshot's Kimi API writes it, in that chunk's choice, a tool call's id repeated on every fragment,
//! missing, or another one on the fragments after the first (Poolside's),
//! every parallel call sent at index 0 with its own id and name, or at one
//! index without ids (Gemini's: a piece that names a tool starts a call of
//! its own when the call before is of another tool or its arguments are
//! whole), arguments
//! whole in one chunk (or as a JSON object rather than its text), a
//! single call in the legacy `function_call` shape (no id, no index,
//! ended with `"finish_reason": "function_call"`; read as a tool call),
//! `content` as a list of typed parts (Mistral's reasoning models: the
//! `text` parts are the reply's text, the `thinking` parts are left out),
//! the model's reasoning as `reasoning_content` (DeepSeek's, vLLM's) or
//! `reasoning` (OpenRouter's, Groq's), delivered as
//! [`StreamEvent::ReasoningDelta`] and not kept in the reply,
//! a reply of tool calls that ends with `stop` (Gemini's; read as
//! [`StopReason::ToolUse`](super::StopReason::ToolUse)), a call's thought signature in
//! `extra_content.google` (Gemini's; kept in the reply as a
//! [`ReasoningBlock::CallSignature`]
//! and sent back on the call, without which Gemini 3 refuses the next
//! request), text-generation-inference's own names for a
//! finish (`eos_token`, `stop_sequence`), a stream that ends with the
//! finish reason and no `[DONE]` (or with only keep-alives after the
//! finish reason, completed 10 s after it), and an error sent as a chunk (its
//! `error` an object or, as text-generation-inference writes it, the
//! message with its kind in `error_type`) or, as llama.cpp's server wrote
//! it until late 2025, on an `error:` line followed by `[DONE]`. A reply
//! the server gave up on part way (vLLM's and SGLang's
//! `"finish_reason": "abort"`, OpenRouter's `"error"`, DeepSeek's
//! `"insufficient_system_resource"`) fails as a server error, so that it
//! is retried rather than taken as complete. The reply is the first choice
//! (index 0); when the request asks for one (no `n` above 1), a choice at
//! any other index is that one too (Foundry Local numbered each chunk's
//! choice anew). [`StreamParser`] alone reads index 0 only. A server that
//! ignores `"stream": true` and answers with the whole chat completion as
//! JSON has it read as the reply (its text in one delta, then the
//! completed reply), and an error object sent so is classified as one in
//! the stream would be.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use serde_json::{Value, json};

use super::Provider;
use super::error::ProviderError;
use super::event::StreamEvent;
use super::http::{HttpOptions, Transport};
use super::reasoning::ReasoningBlock;
use super::types::{Message, Request};

mod parser;
mod wire;

pub use parser::StreamParser;

/// How to reach an OpenAI-compatible server; [`build`](Self::build) makes
/// the client.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use agent_fsm::llm::OpenAiConfig;
///
/// // A local llama.cpp or Ollama server needs no key.
/// let local = OpenAiConfig::without_key().base_url("http://127.0.0.1:11434/v1").build()?;
/// // An Azure-style deployment: its own key header and an API version.
/// let azure = OpenAiConfig::without_key()
///     .base_url("https://example.openai.azure.com/openai/deployments/gpt-4o")
///     .header("api-key", "…")
///     .query("api-version", "2024-10-21")
///     .read_timeout(Duration::from_secs(60))
///     .build()?;
/// assert!(azure.url().ends_with("/chat/completions?api-version=2024-10-21"));
/// # let _ = local;
/// # Ok::<(), agent_fsm::llm::ProviderError>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    options: HttpOptions,
    include_usage: bool,
    max_completion_tokens: bool,
}

impl OpenAiConfig {
    /// OpenAI's own API.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";

    /// OpenAI's API with `api_key`, sent as `Authorization: Bearer`.
    #[must_use]
    pub fn new(api_key: impl Into<String>) -> Self {
        Self::with_key(Some(api_key.into()))
    }

    /// No `Authorization` header: for local servers, or gateways that take
    /// their key in a header of their own ([`header`](Self::header)).
    #[must_use]
    pub fn without_key() -> Self {
        Self::with_key(None)
    }

    /// From the environment, as OpenAI's SDKs read it: the key from
    /// `OPENAI_API_KEY` (`None` if unset) and the base URL from
    /// `OPENAI_BASE_URL` if set.
    #[must_use]
    pub fn from_env() -> Option<Self> {
        let key = std::env::var("OPENAI_API_KEY").ok().filter(|k| !k.is_empty())?;
        let config = Self::new(key);
        Some(match std::env::var("OPENAI_BASE_URL") {
            Ok(url) if !url.is_empty() => config.base_url(url),
            _ => config,
        })
    }

    fn with_key(api_key: Option<String>) -> Self {
        OpenAiConfig {
            options: HttpOptions::new(Self::DEFAULT_BASE_URL, api_key),
            include_usage: true,
            max_completion_tokens: false,
        }
    }

    /// The URL `/chat/completions` is appended to (default
    /// [`DEFAULT_BASE_URL`](Self::DEFAULT_BASE_URL)).
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.options.base_url = url.into();
        self
    }

    /// A header sent with every request (a gateway's key, an
    /// organization); it replaces a header of the same name.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.options.headers.push((name.into(), value.into()));
        self
    }

    /// A query parameter added to the URL (Azure's `api-version`), written
    /// as given: it must be URL-safe.
    #[must_use]
    pub fn query(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.options.query.push((key.into(), value.into()));
        self
    }

    /// The longest wait for a connection (default 10 s).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.options.connect_timeout = timeout;
        self
    }

    /// The longest wait for the next piece of the reply (default 300 s).
    #[must_use]
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.options.read_timeout = timeout;
        self
    }

    /// The longest a whole call may take, stream included (default none).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = Some(timeout);
        self
    }

    /// Whether to ask for usage with `stream_options.include_usage`
    /// (default yes; turn off for a server that refuses the field).
    #[must_use]
    pub fn include_usage(mut self, include: bool) -> Self {
        self.include_usage = include;
        self
    }

    /// Whether to send the limit as `max_completion_tokens`, which
    /// OpenAI's reasoning models require, instead of `max_tokens`, which
    /// most compatible servers read (default no).
    #[must_use]
    pub fn max_completion_tokens(mut self, yes: bool) -> Self {
        self.max_completion_tokens = yes;
        self
    }

    /// The client.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidConfig`](super::ErrorKind::InvalidConfig) if the base URL is not an http(s)
    /// URL, a header is invalid or TLS cannot be set up.
    pub fn build(self) -> Result<OpenAi, ProviderError> {
        let auth =
            self.options.api_key.iter().map(|key| ("authorization".to_owned(), format!("Bearer {key}"))).collect();
        let transport = Transport::new(&self.options, "/chat/completions", auth)?;
        Ok(OpenAi { transport, include_usage: self.include_usage, max_completion_tokens: self.max_completion_tokens })
    }
}

/// A streaming client for OpenAI-compatible Chat Completions servers.
/// Cheap to clone (the connection pool is shared).
///
/// # Examples
/// ```no_run
/// use agent_fsm::llm::{Message, OpenAiConfig, Provider, Request, StreamEvent};
/// use futures::StreamExt;
///
/// # async fn run() -> Result<(), agent_fsm::llm::ProviderError> {
/// let client = OpenAiConfig::new(std::env::var("OPENAI_API_KEY").unwrap_or_default()).build()?;
/// let request = Request::new("gpt-4o-mini").message(Message::user("Say hello"));
/// let mut events = client.stream(&request);
/// while let Some(event) = events.next().await {
///     match event? {
///         StreamEvent::TextDelta(text) => print!("{text}"),
///         StreamEvent::Completed { usage, .. } => println!("\n({} tokens)", usage.total()),
///         _ => {}
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAi {
    transport: Arc<Transport>,
    include_usage: bool,
    max_completion_tokens: bool,
}

impl OpenAi {
    /// A client for OpenAI's API with `api_key`; see [`OpenAiConfig`] for
    /// any other server.
    ///
    /// # Errors
    /// As [`OpenAiConfig::build`].
    pub fn new(api_key: impl Into<String>) -> Result<Self, ProviderError> {
        OpenAiConfig::new(api_key).build()
    }

    /// The URL requests are posted to.
    #[must_use]
    pub fn url(&self) -> &str {
        self.transport.url()
    }

    /// The JSON body sent for `request`.
    #[must_use]
    pub fn body(&self, request: &Request) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = &request.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.extend(request.messages.iter().map(wire_message));
        let mut body = json!({"model": request.model, "messages": messages, "stream": true});
        if self.include_usage {
            body["stream_options"] = json!({"include_usage": true});
        }
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect();
            body["tools"] = Value::Array(tools);
        }
        if let Some(max) = request.max_tokens {
            body[if self.max_completion_tokens { "max_completion_tokens" } else { "max_tokens" }] = json!(max);
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if let Value::Object(fields) = &mut body {
            fields.extend(request.extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        body
    }
}

fn wire_message(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant(reply) => {
            if reply.tool_calls.is_empty() {
                return json!({"role": "assistant", "content": reply.text});
            }
            let calls: Vec<Value> = reply
                .tool_calls
                .iter()
                .map(|c| {
                    let mut call = json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.sent_arguments().to_string()}});
                    // Gemini's signature of the call goes back with it.
                    if let Some(signature) = call_signature(&reply.reasoning, &c.id) {
                        call["extra_content"] = json!({"google": {"thought_signature": signature}});
                    }
                    call
                })
                .collect();
            // A reply of tool calls only has `null` content.
            let content = if reply.text.is_empty() { Value::Null } else { json!(reply.text) };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Message::Tool(result) => json!({"role": "tool", "tool_call_id": result.call_id, "content": result.content}),
    }
}

/// The signature `reasoning` holds for the call `id`, if any.
fn call_signature<'r>(reasoning: &'r [ReasoningBlock], id: &str) -> Option<&'r str> {
    reasoning.iter().find_map(|block| match block {
        ReasoningBlock::CallSignature { call_id, signature } if call_id == id => Some(signature.as_str()),
        _ => None,
    })
}

impl Provider for OpenAi {
    fn stream(&self, request: &Request) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let body = self.body(request);
        // One choice asked for (no `n` above 1): a choice at any index is
        // that one. Foundry Local numbered each chunk's choice anew.
        let mut parser = StreamParser::new();
        parser.any_index = body.get("n").and_then(Value::as_u64).is_none_or(|n| n <= 1);
        // Serializing a `Value` cannot fail (its keys are strings).
        let body = serde_json::to_vec(&body).unwrap_or_default();
        super::observe("openai", request, self.transport.stream(body, parser))
    }
}
