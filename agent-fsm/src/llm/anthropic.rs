//! The Anthropic Messages client ([`Anthropic`]): a [`Request`] becomes a
//! `POST {base_url}/v1/messages` with `"stream": true`, `x-api-key` and
//! `anthropic-version`, and the named events that come back become
//! [`StreamEvent`]s through [`StreamParser`], which also works without
//! HTTP.
//!
//! ```no_run
//! use agent_fsm::llm::{AnthropicConfig, Message, Provider, Request, StreamEvent};
//! use futures::StreamExt;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // The key from `ANTHROPIC_API_KEY` (and `ANTHROPIC_BASE_URL`, if set).
//! let model = AnthropicConfig::from_env().ok_or("ANTHROPIC_API_KEY is not set")?.build()?;
//! let request = Request::new("claude-sonnet-4-5").message(Message::user("Say hello."));
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
//! The events read: `message_start` (input usage), `content_block_start`
//! (a text block, a `tool_use` block with its id and name, a `thinking`
//! or `redacted_thinking` block), `content_block_delta` (`text_delta`,
//! `input_json_delta`, `thinking_delta`, `signature_delta`),
//! `content_block_stop`, `message_delta` (stop reason, output usage),
//! `message_stop` (the reply is complete), `ping`, and `error` (an
//! `overloaded_error` or any other, which ends the stream with a
//! classified [`ProviderError`]; so is an error a gateway sends in
//! OpenAI's `{"error": {...}}` shape, and an `error` event whose data is
//! the error object alone or plain text, and an error object a proxy
//! sends whole, as JSON with `200`, in place of the stream). The server's
//! own tool calls and results (`server_tool_use`, `web_search_tool_result`,
//! whose input streams as `input_json_delta` too) and event types this
//! crate does not read are skipped, whatever their data holds (a `ping`
//! whose data is `{}`, say). A reply whose stop reason came is complete
//! when the body ends, with or without `message_stop`, or 10 s after the
//! stop reason if `message_stop` has not come by then (a server that
//! sends only `ping`s after it would otherwise hold the call for good).
//!
//! # Extended thinking
//! Thinking is asked for with a body field,
//! `Request::extra("thinking", json!({"type": "enabled", "budget_tokens": 2048}))`.
//! Its text streams as [`StreamEvent::ReasoningDelta`]s, and the reply's
//! `thinking` and `redacted_thinking` blocks, signatures and data
//! included, are kept in order in
//! [`AssistantMessage::reasoning`](super::AssistantMessage::reasoning).
//! When that message goes back in a later request (the tool round that
//! follows a `tool_use` reply), [`Anthropic::body`] puts them first in
//! its content, unchanged, as the API requires of a reply that called
//! tools with thinking on; a message with nothing else to send (no text,
//! no tool call) is left out, since the API refuses an
//! assistant message that ends with thinking. A message with thinking
//! given between its text and its calls (interleaved thinking) is sent
//! back with all its thinking first: the message keeps one text and a list
//! of calls, not the blocks' order.

mod parser;

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use serde_json::{Value, json};

use super::Provider;
use super::error::ProviderError;
use super::event::StreamEvent;
use super::http::{HttpOptions, Transport};
use super::reasoning::ReasoningBlock;
use super::types::{AssistantMessage, Message, Request, ToolResult};

pub use parser::StreamParser;

/// How to reach an Anthropic Messages server; [`build`](Self::build)
/// makes the client.
///
/// # Examples
/// ```
/// use agent_fsm::llm::AnthropicConfig;
///
/// let client = AnthropicConfig::new("sk-ant-…")
///     .base_url("https://gateway.example/anthropic")
///     .header("anthropic-beta", "token-efficient-tools-2025-02-19")
///     .default_max_tokens(8192)
///     .build()?;
/// assert_eq!(client.url(), "https://gateway.example/anthropic/v1/messages");
/// # Ok::<(), agent_fsm::llm::ProviderError>(())
/// ```
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    options: HttpOptions,
    version: String,
    default_max_tokens: u32,
}

impl AnthropicConfig {
    /// Anthropic's own API.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";

    /// The `anthropic-version` sent unless changed.
    pub const DEFAULT_VERSION: &'static str = "2023-06-01";

    /// Anthropic's API with `api_key`, sent as `x-api-key`.
    #[must_use]
    pub fn new(api_key: impl Into<String>) -> Self {
        AnthropicConfig {
            options: HttpOptions::new(Self::DEFAULT_BASE_URL, Some(api_key.into())),
            version: Self::DEFAULT_VERSION.to_owned(),
            default_max_tokens: 4096,
        }
    }

    /// From the environment, as Anthropic's SDKs read it: the key from
    /// `ANTHROPIC_API_KEY` (`None` if unset) and the base URL from
    /// `ANTHROPIC_BASE_URL` if set.
    #[must_use]
    pub fn from_env() -> Option<Self> {
        let key = std::env::var("ANTHROPIC_API_KEY").ok().filter(|k| !k.is_empty())?;
        let config = Self::new(key);
        Some(match std::env::var("ANTHROPIC_BASE_URL") {
            Ok(url) if !url.is_empty() => config.base_url(url),
            _ => config,
        })
    }

    /// The URL `/v1/messages` is appended to (default
    /// [`DEFAULT_BASE_URL`](Self::DEFAULT_BASE_URL)).
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.options.base_url = url.into();
        self
    }

    /// A header sent with every request (`anthropic-beta`, a gateway's
    /// own); it replaces a header of the same name.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.options.headers.push((name.into(), value.into()));
        self
    }

    /// The `anthropic-version` header (default
    /// [`DEFAULT_VERSION`](Self::DEFAULT_VERSION)).
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// The `max_tokens` sent when the request has none (the API requires
    /// one; default 4096).
    #[must_use]
    pub fn default_max_tokens(mut self, max_tokens: u32) -> Self {
        self.default_max_tokens = max_tokens;
        self
    }

    /// The longest wait for a connection (default 10 s).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.options.connect_timeout = timeout;
        self
    }

    /// The longest wait for the next piece of the reply (default 300 s;
    /// the server sends `ping`s while it works).
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

    /// The client.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidConfig`](super::ErrorKind::InvalidConfig) if the
    /// base URL is not an http(s) URL, a header is invalid or TLS cannot be
    /// set up.
    pub fn build(self) -> Result<Anthropic, ProviderError> {
        let mut auth = vec![("anthropic-version".to_owned(), self.version.clone())];
        auth.extend(self.options.api_key.iter().map(|key| ("x-api-key".to_owned(), key.clone())));
        let transport = Transport::new(&self.options, "/v1/messages", auth)?;
        Ok(Anthropic { transport, default_max_tokens: self.default_max_tokens })
    }
}

/// A streaming client for the Anthropic Messages API. Cheap to clone.
///
/// # Examples
/// ```no_run
/// use agent_fsm::llm::{Anthropic, Message, Provider, Request, StreamEvent, ToolDefinition};
/// use futures::StreamExt;
/// use serde_json::json;
///
/// # async fn run() -> Result<(), agent_fsm::llm::ProviderError> {
/// let client = Anthropic::new(std::env::var("ANTHROPIC_API_KEY").unwrap_or_default())?;
/// let request = Request::new("claude-sonnet-4-5")
///     .max_tokens(1024)
///     .tool(ToolDefinition::new("list_files", "Lists the workspace", json!({"type": "object"})))
///     .message(Message::user("Which files are there?"));
/// let mut events = client.stream(&request);
/// while let Some(event) = events.next().await {
///     match event? {
///         StreamEvent::TextDelta(text) => print!("{text}"),
///         StreamEvent::Completed { message, stop_reason, .. } => {
///             println!("\nstopped: {stop_reason:?}; tools asked: {:?}", message.tool_calls);
///         }
///         _ => {}
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Anthropic {
    transport: Arc<Transport>,
    default_max_tokens: u32,
}

impl Anthropic {
    /// A client for Anthropic's API with `api_key`; see
    /// [`AnthropicConfig`] for more settings.
    ///
    /// # Errors
    /// As [`AnthropicConfig::build`].
    pub fn new(api_key: impl Into<String>) -> Result<Self, ProviderError> {
        AnthropicConfig::new(api_key).build()
    }

    /// The URL requests are posted to.
    #[must_use]
    pub fn url(&self) -> &str {
        self.transport.url()
    }

    /// The JSON body sent for `request`: system messages joined into
    /// `system`, each message as content blocks (an assistant message's
    /// reasoning blocks first, unchanged), consecutive user-side
    /// messages (tool results, then user text) merged into one. A result
    /// with no text is sent without content, or, for an error, saying so,
    /// as the API refuses empty text, and the text that ends a request ending with an assistant
    /// message (a prefill) loses its trailing whitespace, which the API
    /// refuses there.
    #[must_use]
    pub fn body(&self, request: &Request) -> Value {
        let mut system: Vec<&str> = request.system.iter().map(String::as_str).collect();
        let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
        for message in request.messages.iter() {
            let (role, blocks) = match message {
                Message::System { content } => {
                    system.push(content);
                    continue;
                }
                Message::User { content } => ("user", text_block(content).into_iter().collect()),
                Message::Assistant(reply) => ("assistant", assistant_blocks(reply)),
                Message::Tool(result) => ("user", vec![tool_result_block(result)]),
            };
            // The API refuses empty content; one role after the other is
            // one message.
            match messages.last_mut() {
                _ if blocks.is_empty() => {}
                Some((last, existing)) if *last == role => existing.extend(blocks),
                _ => messages.push((role, blocks)),
            }
        }
        // A request that ends with the assistant's words (a prefill, a
        // reply cut off and continued): the API refuses "final assistant
        // content" that ends with whitespace.
        if let Some(("assistant", blocks)) = messages.last_mut()
            && let Some(last) = blocks.last_mut()
            && last["type"] == "text"
            && let Some(trimmed) = last["text"].as_str().map(str::trim_end).map(str::to_owned)
        {
            last["text"] = Value::String(trimmed);
        }
        let messages: Vec<Value> =
            messages.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect();
        let max_tokens = request.max_tokens.unwrap_or(self.default_max_tokens);
        let mut body = json!({"model": request.model, "max_tokens": max_tokens, "messages": messages, "stream": true});
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            body["tools"] = Value::Array(tools);
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

/// An assistant message's content: its reasoning blocks as received, then
/// its text and its tool calls. Reasoning alone is not sent: the API
/// refuses an assistant message whose last block is thinking, and needs
/// thinking back only before a `tool_use`.
fn assistant_blocks(reply: &AssistantMessage) -> Vec<Value> {
    let text = text_block(&reply.text);
    if text.is_none() && reply.tool_calls.is_empty() {
        return Vec::new();
    }
    let mut blocks = Vec::with_capacity(reply.reasoning.len() + 1 + reply.tool_calls.len());
    blocks.extend(reply.reasoning.iter().filter_map(|block| match block {
        ReasoningBlock::Thinking { thinking, signature } => {
            Some(json!({"type": "thinking", "thinking": thinking, "signature": signature}))
        }
        ReasoningBlock::RedactedThinking { data } => Some(json!({"type": "redacted_thinking", "data": data})),
        // Gemini's, from a conversation that changed provider.
        ReasoningBlock::CallSignature { .. } => None,
    }));
    blocks.extend(text);
    blocks.extend(
        reply
            .tool_calls
            .iter()
            .map(|c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.sent_arguments()})),
    );
    blocks
}

/// What an error result with no text says instead: the API refuses an
/// error `tool_result` whose content is empty ("content cannot be empty if
/// `is_error` is true"), and the refused result stays in the conversation,
/// failing every later request of it.
const EMPTY_ERROR_RESULT: &str = "(the tool failed without a message)";

/// A tool's result as a `tool_result` block: its content as it is, unless
/// empty or only whitespace, which the API refuses as a text block. Such
/// a result goes without content, as the API's own example of an empty
/// result does, or, for an error, which must have content, saying
/// [`EMPTY_ERROR_RESULT`].
fn tool_result_block(result: &ToolResult) -> Value {
    let empty = result.content.trim().is_empty();
    match (result.is_error, empty) {
        (false, false) => json!({"type": "tool_result", "tool_use_id": result.call_id, "content": result.content}),
        (false, true) => json!({"type": "tool_result", "tool_use_id": result.call_id}),
        (true, _) => {
            let content = if empty { EMPTY_ERROR_RESULT } else { result.content.as_str() };
            json!({"type": "tool_result", "tool_use_id": result.call_id, "content": content, "is_error": true})
        }
    }
}

/// A text block, unless the text is empty or only whitespace, which the
/// API refuses ("text content blocks must contain non-whitespace text");
/// models do write a lone `"\n\n"` before a tool call.
fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"type": "text", "text": text}))
}

impl Provider for Anthropic {
    fn stream(&self, request: &Request) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        // Serializing a `Value` cannot fail (its keys are strings).
        let body = serde_json::to_vec(&self.body(request)).unwrap_or_default();
        super::observe("anthropic", request, self.transport.stream(body, StreamParser::new()))
    }
}
