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
//! (a text block, or a `tool_use` block with its id and name),
//! `content_block_delta` (`text_delta`, `input_json_delta`),
//! `content_block_stop`, `message_delta` (stop reason, output usage),
//! `message_stop` (the reply is complete), `ping`, and `error` (an
//! `overloaded_error` or any other, which ends the stream with a
//! classified [`ProviderError`]; so is an error a gateway sends in
//! OpenAI's `{"error": {...}}` shape, and an `error` event whose data is
//! the error object alone or plain text). Thinking blocks, the server's own tool
//! calls and results (`server_tool_use`, `web_search_tool_result`, whose
//! input streams as `input_json_delta` too) and event types this crate
//! does not know are skipped.

use std::borrow::Cow;
use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Provider;
use super::assemble::{Assembler, over_limit};
use super::classify;
use super::error::{ErrorKind, ProviderError};
use super::event::{StopReason, StreamEvent, Usage};
use super::http::{Decoder, HttpOptions, Item, Transport};
use super::sse::SseDecoder;
use super::types::{Message, Request};

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
    /// [`ErrorKind::InvalidConfig`] if the base URL is not an http(s)
    /// URL, a header is invalid or TLS cannot be set up.
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
    /// `system`, each message as content blocks, consecutive user-side
    /// messages (tool results, then user text) merged into one.
    #[must_use]
    pub fn body(&self, request: &Request) -> Value {
        let mut system: Vec<&str> = request.system.iter().map(String::as_str).collect();
        let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
        for message in request.messages.iter() {
            let (role, blocks) =
                match message {
                    Message::System { content } => {
                        system.push(content);
                        continue;
                    }
                    Message::User { content } => ("user", text_block(content).into_iter().collect()),
                    Message::Assistant(reply) => {
                        let mut blocks: Vec<Value> = text_block(&reply.text).into_iter().collect();
                        blocks.extend(reply.tool_calls.iter().map(
                            |c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.sent_arguments()}),
                        ));
                        ("assistant", blocks)
                    }
                    Message::Tool(result) => {
                        let mut block =
                            json!({"type": "tool_result", "tool_use_id": result.call_id, "content": result.content});
                        if result.is_error {
                            block["is_error"] = json!(true);
                        }
                        ("user", vec![block])
                    }
                };
            // The API refuses empty content; one role after the other is
            // one message.
            match messages.last_mut() {
                _ if blocks.is_empty() => {}
                Some((last, existing)) if *last == role => existing.extend(blocks),
                _ => messages.push((role, blocks)),
            }
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

// ===== the parser =====

/// The most blocks other than text and tool calls (thinking, server tools
/// and their results) one reply may open: far more than a reply's output
/// tokens allow, so a server past it is failing or hostile. Each is
/// remembered, so that its deltas are skipped.
pub(crate) const MAX_SKIPPED_BLOCKS: usize = 4_096;

/// Turns the bytes of a Messages event stream into [`StreamEvent`]s, with
/// no I/O: what [`Anthropic`] runs on each piece of the body.
///
/// # Examples
/// ```
/// use std::collections::VecDeque;
/// use agent_fsm::llm::{StreamEvent, anthropic::StreamParser};
///
/// let mut parser = StreamParser::new();
/// let mut out = VecDeque::new();
/// parser.feed(b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", &mut out);
/// parser.feed(b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n", &mut out);
/// assert_eq!(out.pop_front(), Some(Ok(StreamEvent::TextDelta("Hi".into()))));
/// parser.feed(b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", &mut out);
/// assert!(matches!(out.pop_front(), Some(Ok(StreamEvent::Completed { .. }))));
/// ```
#[derive(Debug, Default)]
pub struct StreamParser {
    sse: SseDecoder,
    reply: Assembler,
    stop_reason: Option<StopReason>,
    usage: Usage,
    /// The indexes of blocks not surfaced (thinking, server tools): their
    /// deltas, `input_json_delta` included, are skipped too. At most
    /// [`MAX_SKIPPED_BLOCKS`].
    skipped: BTreeSet<usize>,
    done: bool,
}

impl StreamParser {
    /// A parser at the start of a stream.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the next piece of the body (any size, split anywhere) and
    /// appends what it completes to `out`. Once the reply is complete or
    /// failed ([`is_done`](Self::is_done)), input is ignored.
    pub fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<Result<StreamEvent, ProviderError>>) {
        if self.done {
            return;
        }
        let mut sse = std::mem::take(&mut self.sse);
        sse.feed(chunk, &mut |event, data| self.frame(event, data, out));
        if !self.done
            && let Some(error) = over_limit(&sse, &self.reply)
        {
            self.fail(error, out);
        }
        self.sse = sse;
    }

    /// The body ended. A reply whose stop reason came completes (the
    /// server may close without `message_stop`); any other fails with
    /// [`ErrorKind::ConnectionDropped`].
    pub fn finish(&mut self, out: &mut VecDeque<Result<StreamEvent, ProviderError>>) {
        Decoder::finish(self, None, out);
    }

    /// Whether the reply is complete or failed.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.done
    }

    fn frame(&mut self, event: &str, data: &str, out: &mut VecDeque<Item>) {
        if self.done {
            return;
        }
        let wire = match serde_json::from_str::<Wire<'_>>(data) {
            Ok(wire) if event != "error" || wire.kind == "error" => wire,
            // An `error` event whose data is the error object itself.
            Ok(_) => return self.fail(classify::bare_error(event, data).unwrap_or_else(|| malformed(data)), out),
            Err(e) => {
                if let Some(error) = classify::bare_error(event, data) {
                    return self.fail(error, out);
                }
                let message =
                    format!("a `{event}` event is not the JSON expected ({e}): {}", classify::truncate(data, 200));
                return self.fail(ProviderError::new(ErrorKind::MalformedStream, message), out);
            }
        };
        // The data's `type` is the event's name; a proxy may drop the
        // `event:` line, never the type.
        match &*wire.kind {
            "message_start" => {
                if let Some(usage) = wire.message.and_then(|m| m.usage) {
                    self.read_usage(&usage);
                }
            }
            "content_block_start" => {
                let (Some(index), Some(block)) = (wire.index, wire.content_block) else {
                    return self.fail(malformed("a `content_block_start` without its index or block"), out);
                };
                match &*block.kind {
                    "text" => {
                        if let Some(event) = block.text.as_deref().and_then(|t| self.reply.text(t)) {
                            out.push_back(Ok(event));
                        }
                    }
                    "tool_use" => {
                        let event = self.reply.tool_piece(Some(index), block.id.as_deref(), block.name.as_deref(), "");
                        out.push_back(Ok(event));
                        if let Some(error) = self.reply.too_many_calls() {
                            return self.fail(error, out);
                        }
                        if let Some(input) = block.input.filter(|i| i.as_object().is_some_and(|o| !o.is_empty())) {
                            self.reply.initial_arguments(index, input, data.len());
                        }
                    }
                    // Thinking, server tools: not surfaced.
                    _ => {
                        self.skipped.insert(index);
                        if self.skipped.len() > MAX_SKIPPED_BLOCKS {
                            let message = format!(
                                "the reply holds more than {MAX_SKIPPED_BLOCKS} blocks that are neither text nor tool calls"
                            );
                            self.fail(malformed(&message), out);
                        }
                    }
                }
            }
            "content_block_delta" => {
                let (Some(index), Some(delta)) = (wire.index, wire.delta) else {
                    return self.fail(malformed("a `content_block_delta` without its index or delta"), out);
                };
                match delta.kind.as_deref() {
                    Some("text_delta") => {
                        if let Some(event) = delta.text.as_deref().and_then(|t| self.reply.text(t)) {
                            out.push_back(Ok(event));
                        }
                    }
                    // A server tool's input (`server_tool_use`, `mcp_tool_use`).
                    Some("input_json_delta") if self.skipped.contains(&index) => {}
                    Some("input_json_delta") => {
                        if !self.reply.has_call(index) {
                            let message = format!("an `input_json_delta` for block {index}, which is not a tool call");
                            return self.fail(malformed(&message), out);
                        }
                        let fragment = delta.partial_json.as_deref().unwrap_or("");
                        out.push_back(Ok(self.reply.tool_piece(Some(index), None, None, fragment)));
                    }
                    _ => {} // thinking and signature deltas
                }
            }
            "message_delta" => {
                if let Some(reason) = wire.delta.as_ref().and_then(|d| d.stop_reason.as_deref()) {
                    self.stop_reason = Some(StopReason::from_anthropic(reason));
                }
                if let Some(usage) = wire.usage {
                    self.read_usage(&usage);
                }
            }
            "message_stop" => self.complete(out),
            "error" => {
                let (kind, message) = wire.error.map(|e| (e.kind, e.message)).unwrap_or_default();
                self.fail(classify::from_stream_error(&kind, message), out);
            }
            _ => {} // `ping`, `content_block_stop`, and types added later
        }
    }

    /// Usage fields are cumulative: the latest value of each wins.
    fn read_usage(&mut self, usage: &WireUsage) {
        let set = |field: &mut u64, value: Option<u64>| {
            if let Some(value) = value {
                *field = value;
            }
        };
        set(&mut self.usage.input_tokens, usage.input_tokens);
        set(&mut self.usage.output_tokens, usage.output_tokens);
        set(&mut self.usage.cache_read_tokens, usage.cache_read_input_tokens);
        set(&mut self.usage.cache_write_tokens, usage.cache_creation_input_tokens);
    }

    fn complete(&mut self, out: &mut VecDeque<Item>) {
        let message = self.reply.finish();
        let stop_reason = self.stop_reason.take().unwrap_or_else(|| StopReason::inferred(&message));
        // Anthropic counts cached input apart; `input_tokens` here is every
        // token read.
        let mut usage = self.usage;
        usage.input_tokens =
            usage.input_tokens.saturating_add(usage.cache_read_tokens).saturating_add(usage.cache_write_tokens);
        out.push_back(Ok(StreamEvent::Completed { message, stop_reason, usage }));
        self.done = true;
    }

    fn fail(&mut self, error: ProviderError, out: &mut VecDeque<Item>) {
        out.push_back(Err(error));
        self.done = true;
    }
}

fn malformed(message: &str) -> ProviderError {
    ProviderError::new(ErrorKind::MalformedStream, message)
}

impl Decoder for StreamParser {
    fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<Item>) {
        StreamParser::feed(self, chunk, out);
    }

    fn finish(&mut self, cut: Option<ProviderError>, out: &mut VecDeque<Item>) {
        if self.done {
            return;
        }
        let mut sse = std::mem::take(&mut self.sse);
        if cut.is_none() {
            sse.finish(&mut |event, data| self.frame(event, data, out));
        }
        if self.done {
            return;
        }
        if self.stop_reason.is_some() {
            return self.complete(out);
        }
        let error = cut.unwrap_or_else(|| match sse.unframed() {
            Some(body) => classify::unframed(body),
            None => ProviderError::new(ErrorKind::ConnectionDropped, "the stream ended before `message_stop`"),
        });
        self.fail(error, out);
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

/// One event's data; each type uses some of the fields.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    message: Option<StartMessage>,
    #[serde(default, borrow)]
    content_block: Option<Block<'a>>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    input: Option<Value>,
}

/// A block's delta (`type`, `text`, `partial_json`) or the message's
/// (`stop_reason`).
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct WireError {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    message: String,
}
