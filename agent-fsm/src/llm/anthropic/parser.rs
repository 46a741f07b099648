//! The parser of Anthropic's Messages event stream ([`StreamParser`]):
//! named events in, [`StreamEvent`]s and the assembled reply out, with
//! no I/O.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};

use serde::Deserialize;
use serde_json::Value;

use crate::llm::assemble::{Assembler, over_limit};
use crate::llm::classify;
use crate::llm::error::{ErrorKind, ProviderError};
use crate::llm::event::{StopReason, StreamEvent, Usage, token_count};
use crate::llm::http::{Decoder, Item};
use crate::llm::reasoning::ReasoningBlock;
use crate::llm::sse::SseDecoder;

/// The most blocks other than text and tool calls (thinking, server tools
/// and their results) one reply may open: far more than a reply's output
/// tokens allow, so a server past it is failing or hostile. Each is
/// remembered, so that its deltas go to it or are skipped.
pub(crate) const MAX_OTHER_BLOCKS: usize = 4_096;

/// A block that is neither text nor a tool call.
#[derive(Debug, Clone, Copy)]
enum Other {
    /// Reasoning (`thinking`, `redacted_thinking`), kept in the reply at
    /// this position among its reasoning blocks.
    Reasoning(usize),
    /// Not surfaced (the server's own tools and their results, types
    /// added later): its deltas, `input_json_delta` included, are skipped.
    Skipped,
}

/// Turns the bytes of a Messages event stream into [`StreamEvent`]s, with
/// no I/O: what [`Anthropic`](super::Anthropic) runs on each piece of the body.
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
    /// The blocks that are neither text nor tool calls, by index. At
    /// most [`MAX_OTHER_BLOCKS`].
    others: BTreeMap<usize, Other>,
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
    /// server may close without `message_stop`, and the client ends a
    /// reply that has its stop reason when no `message_stop` follows
    /// within 10 s, only `ping`s, say); any other fails with
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
                // An event this parser does not read (a `ping`, a type added
                // later), by its data's type or else its name: skipped
                // whatever else its data holds, as the API asks of clients.
                let kind = serde_json::from_str::<Kind<'_>>(data).map_or(Cow::Borrowed(event), |k| k.kind);
                if !kind.is_empty() && !READ.contains(&&*kind) {
                    return;
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
                    kind => {
                        let other = match kind {
                            "thinking" => {
                                let thinking = block.thinking.as_deref().unwrap_or("");
                                let signature = block.signature.as_deref().unwrap_or("");
                                let position = self.reply.start_reasoning(ReasoningBlock::Thinking {
                                    thinking: String::new(),
                                    signature: String::new(),
                                });
                                // Thinking given with the start is a piece like any other.
                                if let Some(event) = self.reply.reasoning_piece(position, thinking, signature) {
                                    out.push_back(Ok(event));
                                }
                                Other::Reasoning(position)
                            }
                            "redacted_thinking" => {
                                let data = block.data.map(Cow::into_owned).unwrap_or_default();
                                Other::Reasoning(self.reply.start_reasoning(ReasoningBlock::RedactedThinking { data }))
                            }
                            // Server tools: not surfaced.
                            _ => Other::Skipped,
                        };
                        self.others.insert(index, other);
                        // A reasoning block started again at its index is
                        // one more block kept, though the map holds one.
                        if self.others.len().max(self.reply.reasoning_blocks()) > MAX_OTHER_BLOCKS {
                            let message = format!(
                                "the reply holds more than {MAX_OTHER_BLOCKS} blocks that are neither text nor tool calls"
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
                    Some("input_json_delta") if self.others.contains_key(&index) => {}
                    Some("input_json_delta") => {
                        if !self.reply.has_call(index) {
                            let message = format!("an `input_json_delta` for block {index}, which is not a tool call");
                            return self.fail(malformed(&message), out);
                        }
                        let fragment = delta.partial_json.as_deref().unwrap_or("");
                        out.push_back(Ok(self.reply.tool_piece(Some(index), None, None, fragment)));
                    }
                    Some(kind @ ("thinking_delta" | "signature_delta")) => {
                        // A piece for any other block is not thinking, and is skipped.
                        if let Some(Other::Reasoning(position)) = self.others.get(&index) {
                            let (thinking, signature) = if kind == "thinking_delta" {
                                (delta.thinking.as_deref().unwrap_or(""), "")
                            } else {
                                ("", delta.signature.as_deref().unwrap_or(""))
                            };
                            if let Some(event) = self.reply.reasoning_piece(*position, thinking, signature) {
                                out.push_back(Ok(event));
                            }
                        }
                    }
                    _ => {} // types added later (`citations_delta`)
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
                // By its `code` first, when a gateway put a status there,
                // as an OpenAI-shaped error is read.
                let error = wire.error.unwrap_or_default();
                self.fail(classify::error_object(error.kind, error.code.as_ref(), error.message), out);
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
        if let Some(error) = self.reply.nameless_call() {
            return self.fail(error, out);
        }
        // `message_stop` with no stop reason before it: not after a call
        // cut in two.
        if self.stop_reason.is_none()
            && let Some(error) = self.reply.cut_call()
        {
            return self.fail(error, out);
        }
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

    /// The stop reason came: only `message_stop` is awaited.
    fn settled(&self) -> bool {
        !self.done && self.stop_reason.is_some()
    }

    /// An error object sent whole with `200` in place of the stream (a
    /// proxy's failure, in Anthropic's shape or OpenAI's): the error it
    /// reports, so that an auth or quota failure is not retried as a
    /// broken stream. A whole message is not read (this client asks for a
    /// stream, and Anthropic's API sends one).
    fn whole(&mut self, body: &[u8], out: &mut VecDeque<Item>) -> bool {
        // Not as an `error` event's data: any object would read as one.
        let Some(error) = std::str::from_utf8(body).ok().and_then(|text| classify::bare_error("", text)) else {
            return false;
        };
        self.fail(error, out);
        true
    }
}

/// The event types [`StreamParser`] reads; the others (`ping`,
/// `content_block_stop`, types added later) are skipped.
const READ: [&str; 6] =
    ["message_start", "content_block_start", "content_block_delta", "message_delta", "message_stop", "error"];

/// An event's data read for its type alone.
#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
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
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    /// A `redacted_thinking` block's encrypted reasoning.
    #[serde(default, borrow)]
    data: Option<Cow<'a, str>>,
}

/// A block's delta (`type`, and the piece under the name its type gives
/// it: `text_delta`'s `text`, `input_json_delta`'s `partial_json`,
/// `thinking_delta`'s `thinking`, `signature_delta`'s `signature`) or the
/// message's (`stop_reason`). A field each, not one field with aliases:
/// a server may write the others beside it as `null` (a gateway whose
/// delta type has all four), which two aliases of one field refuse as a
/// duplicate.
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

/// An event's `usage`; each count read by [`token_count`], so that one
/// written oddly (a fraction, a negative) does not fail the event.
#[derive(Deserialize)]
struct WireUsage {
    #[serde(default, deserialize_with = "token_count")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct WireError {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    /// Not Anthropic's: a gateway's, which may hold the upstream's status.
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    message: String,
}
