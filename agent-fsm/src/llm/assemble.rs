//! Builds the reply from its deltas, for both providers' parsers: the text
//! so far, the reasoning blocks (Anthropic's thinking, which only that
//! parser reads), and each tool call's id, name, argument text and
//! signature (Gemini's, which only the OpenAI-compatible parser reads), found
//! by the key the provider gives (OpenAI's `index`, Anthropic's content-block
//! index) and by id. At the end every call's arguments are parsed as JSON
//! (text that is not JSON is kept as a string, for the tool to refuse in
//! words the model reads), every call has an id of its own, and the calls
//! come out in the order they began.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::classify::truncate;
use super::error::{ErrorKind, ProviderError};
use super::event::StreamEvent;
use super::reasoning::{Reasoning, ReasoningBlock};
use super::sse::{MAX_EVENT_BYTES, SseDecoder};
use super::types::{AssistantMessage, ToolCall};

/// The most bytes of text, reasoning, tool names, ids and arguments one
/// reply may hold: 64 MiB, over a hundred times what the largest output token limits
/// give. A server that streams on past it is failing or hostile.
pub(crate) const MAX_REPLY_BYTES: usize = 64 << 20;

/// The most tool calls one reply may hold; a reply with more is failing
/// or hostile (each new call is also looked for among the earlier ones).
pub(crate) const MAX_CALLS: usize = 1_024;

/// The error that ends a reply which outgrew a limit: the event being read
/// ([`MAX_EVENT_BYTES`]), the reply ([`MAX_REPLY_BYTES`]) or its calls
/// ([`MAX_CALLS`]). Both parsers check after every piece of the body; a
/// piece adds at most its own size, so nothing grows far past a limit.
pub(crate) fn over_limit(sse: &SseDecoder, reply: &Assembler) -> Option<ProviderError> {
    let message = if sse.pending_bytes() > MAX_EVENT_BYTES {
        format!("an event of the stream grew past {} MiB without ending", MAX_EVENT_BYTES >> 20)
    } else if reply.bytes > MAX_REPLY_BYTES {
        format!("the reply grew past {} MiB", MAX_REPLY_BYTES >> 20)
    } else {
        return reply.too_many_calls();
    };
    Some(ProviderError::new(ErrorKind::MalformedStream, message))
}

/// A tool call still arriving.
#[derive(Debug)]
struct Partial {
    /// The provider's key for it (`None`: the server gave no index).
    key: Option<usize>,
    id: String,
    name: String,
    arguments: String,
    /// How far `arguments` has got as JSON.
    nesting: Nesting,
    /// Arguments given whole when the call began (Anthropic's
    /// `content_block_start.input`), used if no fragment follows.
    initial: Option<Value>,
    /// Gemini's signature of the call (empty: none), kept in the reply as
    /// a [`ReasoningBlock::CallSignature`].
    signature: String,
}

/// How far a call's argument text has got as JSON, read piece by piece
/// as it arrives (one pass over each byte, however the pieces are cut):
/// whether an object or array opened and closed again, that is, whether the
/// arguments are whole.
#[derive(Debug, Default, Clone, Copy)]
struct Nesting {
    depth: usize,
    opened: bool,
    in_string: bool,
    escaped: bool,
}

impl Nesting {
    fn read(&mut self, text: &str) {
        // Quotes, backslashes and brackets are ASCII, never part of a
        // longer UTF-8 sequence.
        for byte in text.bytes() {
            if self.in_string {
                match byte {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.depth += 1;
                    self.opened = true;
                }
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
    }

    /// An object or array opened and closed: the arguments are whole.
    fn whole(&self) -> bool {
        self.opened && self.depth == 0 && !self.in_string
    }
}

/// The reply as it stands.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    text: String,
    calls: Vec<Partial>,
    /// The reasoning blocks, in the order they began.
    reasoning: Reasoning,
    /// The bytes of text, reasoning, ids, names and arguments taken so far.
    bytes: usize,
}

impl Assembler {
    /// Appends text; the event to deliver, if there is text.
    pub(crate) fn text(&mut self, text: &str) -> Option<StreamEvent> {
        if text.is_empty() {
            return None;
        }
        self.text.push_str(text);
        self.bytes += text.len();
        Some(StreamEvent::TextDelta(text.to_owned()))
    }

    /// Counts a piece of reasoning the reply does not keep (an
    /// OpenAI-compatible server's `reasoning_content`, which those servers
    /// take no copy of back); the event to deliver, if there is any.
    #[cfg(feature = "openai")]
    pub(crate) fn passing_reasoning(&mut self, piece: &str) -> Option<StreamEvent> {
        if piece.is_empty() {
            return None;
        }
        self.bytes += piece.len();
        Some(StreamEvent::ReasoningDelta(piece.to_owned()))
    }

    /// Takes a piece of the tool call keyed `key` (the one at that key with
    /// the piece's `id`, if any, else the latest at that key; without a
    /// key, the one with `id`, or the latest): a piece that names a tool with an id
    /// other than the call's at that key starts a new call (servers that
    /// send every parallel call at index 0); so does one that names a tool
    /// without an id, when it names another tool than the call's, or when
    /// the call's arguments are whole and the piece brings more (Gemini's
    /// OpenAI-compatible endpoint sends parallel calls so, at one index and
    /// without ids); a piece with another id and
    /// no name continues the call (servers that give a call's later
    /// fragments an id of their own, Poolside's). Returns the delta to
    /// deliver, carrying the id and name only the first time they are
    /// seen.
    pub(crate) fn tool_piece(
        &mut self,
        key: Option<usize>,
        id: Option<&str>,
        name: Option<&str>,
        fragment: &str,
    ) -> StreamEvent {
        let id = id.filter(|id| !id.is_empty());
        let name = name.filter(|name| !name.is_empty());
        let found = match key {
            // A piece whose id is a call's at its key goes on with that
            // call, even after another call started there: servers that
            // send every call at index 0 with its id on every piece may
            // interleave them.
            Some(_) => match id {
                Some(id) => self.calls.iter().rposition(|c| c.key == key && c.id == id),
                None => None,
            }
            .or_else(|| self.calls.iter().rposition(|c| c.key == key)),
            None => match id {
                Some(id) => self.calls.iter().rposition(|c| c.id == id),
                None => self.calls.len().checked_sub(1),
            },
        };
        // A named piece without an id, after a call of another tool or
        // after whole arguments, is a call of its own; a server that
        // repeats the name on every piece repeats the same name, and its
        // pieces come before the arguments are whole.
        let another = |call: &Partial| match name {
            Some(name) if id.is_none() && !call.name.is_empty() => {
                call.name != name || (call.nesting.whole() && !fragment.trim().is_empty())
            }
            _ => false,
        };
        let index = match found {
            Some(i) if another(&self.calls[i]) => self.start_call(key),
            Some(i) if id.is_none_or(|id| self.calls[i].id.is_empty() || self.calls[i].id == id) => i,
            Some(i) if name.is_none() => i,
            _ => self.start_call(key),
        };
        let call = &mut self.calls[index];
        let new_id = match id {
            Some(id) if call.id.is_empty() => {
                call.id.push_str(id);
                Some(id.to_owned())
            }
            _ => None,
        };
        let new_name = match name {
            Some(name) if call.name.is_empty() => {
                call.name.push_str(name);
                Some(name.to_owned())
            }
            _ => None,
        };
        call.arguments.push_str(fragment);
        call.nesting.read(fragment);
        self.bytes +=
            fragment.len() + new_id.as_ref().map_or(0, String::len) + new_name.as_ref().map_or(0, String::len);
        StreamEvent::ToolCallDelta { index, id: new_id, name: new_name, arguments_fragment: fragment.to_owned() }
    }

    /// Starts a call keyed `key`, with nothing yet; its position.
    fn start_call(&mut self, key: Option<usize>) -> usize {
        self.calls.push(Partial {
            key,
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
            nesting: Nesting::default(),
            initial: None,
            signature: String::new(),
        });
        self.calls.len() - 1
    }

    /// Appends a piece of the signature of the call at `position` (the
    /// `index` of the [`StreamEvent::ToolCallDelta`] its piece came in).
    #[cfg(feature = "openai")]
    pub(crate) fn sign_call(&mut self, position: usize, signature: &str) {
        if let Some(call) = self.calls.get_mut(position) {
            call.signature.push_str(signature);
            self.bytes += signature.len();
        }
    }

    /// The error that ends a reply past [`MAX_CALLS`]. The parsers check
    /// it after every piece of a call, not only after every piece of the
    /// body: one event (up to [`MAX_EVENT_BYTES`]) can start hundreds of
    /// thousands of calls, each looked for among the earlier ones.
    pub(crate) fn too_many_calls(&self) -> Option<ProviderError> {
        (self.calls.len() > MAX_CALLS).then(|| {
            ProviderError::new(ErrorKind::MalformedStream, format!("the reply holds more than {MAX_CALLS} tool calls"))
        })
    }

    /// The error that ends a reply with a tool call the stream never
    /// named. A piece at a new index with neither id nor name starts a
    /// call, which a later piece may still name (a server that sends a
    /// call's id before its name); one still nameless when the reply
    /// completes has no tool to run: a call named `""` matches none, and
    /// the providers refuse it when the conversation is sent back.
    pub(crate) fn nameless_call(&self) -> Option<ProviderError> {
        let (position, call) = self.calls.iter().enumerate().find(|(_, call)| call.name.is_empty())?;
        let at = call.key.map(|key| format!(" (at index {key})")).unwrap_or_default();
        let message = format!("the reply's tool call {position}{at} was never given a name");
        Some(ProviderError::new(ErrorKind::MalformedStream, message))
    }

    /// An error if a call's arguments are not whole JSON, for a reply that
    /// ended without its stop reason: the stream was cut in the middle of
    /// the call (with a stop reason, such arguments are the model's own,
    /// kept for the tool to refuse, see [`finish`](Self::finish)).
    pub(crate) fn cut_call(&self) -> Option<ProviderError> {
        let (position, call) = self.calls.iter().enumerate().find(|(_, call)| {
            !call.arguments.trim().is_empty() && serde_json::from_str::<serde::de::IgnoredAny>(&call.arguments).is_err()
        })?;
        let message = format!(
            "the stream ended without the reply's stop reason in the middle of tool call {position} (`{}`), whose \
             arguments are not whole JSON: {}",
            call.name,
            truncate(&call.arguments, 200)
        );
        Some(ProviderError::new(ErrorKind::ConnectionDropped, message))
    }

    /// Sets the arguments a call began with, given whole, read from
    /// `size` bytes of the stream (counted toward the reply's limit).
    #[cfg(feature = "anthropic")]
    pub(crate) fn initial_arguments(&mut self, key: usize, input: Value, size: usize) {
        if let Some(call) = self.calls.iter_mut().rev().find(|c| c.key == Some(key)) {
            call.initial = Some(input);
            self.bytes += size;
        }
    }

    /// Starts a reasoning block, given as the server opened it; returns
    /// its position, which [`reasoning_piece`](Self::reasoning_piece)
    /// takes.
    #[cfg(feature = "anthropic")]
    pub(crate) fn start_reasoning(&mut self, block: ReasoningBlock) -> usize {
        self.bytes += match &block {
            ReasoningBlock::Thinking { thinking, signature } => thinking.len() + signature.len(),
            ReasoningBlock::RedactedThinking { data } => data.len(),
            ReasoningBlock::CallSignature { call_id, signature } => call_id.len() + signature.len(),
        };
        self.reasoning.push(block);
        self.reasoning.len() - 1
    }

    /// How many reasoning blocks the reply holds.
    #[cfg(feature = "anthropic")]
    pub(crate) fn reasoning_blocks(&self) -> usize {
        self.reasoning.len()
    }

    /// Appends a piece of thinking and of signature to the thinking block
    /// at `position` (a redacted block takes no pieces); the event to
    /// deliver, if there is thinking.
    #[cfg(feature = "anthropic")]
    pub(crate) fn reasoning_piece(&mut self, position: usize, piece: &str, signature: &str) -> Option<StreamEvent> {
        let Some(ReasoningBlock::Thinking { thinking, signature: signed }) = self.reasoning.get_mut(position) else {
            return None;
        };
        thinking.push_str(piece);
        signed.push_str(signature);
        self.bytes += piece.len() + signature.len();
        (!piece.is_empty()).then(|| StreamEvent::ReasoningDelta(piece.to_owned()))
    }

    /// Whether a call has the key `key`.
    #[cfg(feature = "anthropic")]
    pub(crate) fn has_call(&self, key: usize) -> bool {
        self.calls.iter().any(|c| c.key == Some(key))
    }

    /// The complete reply: every call's arguments parsed (no text at all
    /// reads as `{}`; text that is not JSON, say from a reply cut off at
    /// its token limit, is kept as a JSON string, which the tool set
    /// answers with the parse error), and every call with an id no other
    /// call of the reply has: a call the server gave none, or gave the id
    /// of an earlier call, gets a fresh one (see [`fresh_id`]).
    pub(crate) fn finish(&mut self) -> AssistantMessage {
        let calls = std::mem::take(&mut self.calls);
        let mut tool_calls: Vec<ToolCall> = Vec::with_capacity(calls.len());
        for call in &calls {
            let arguments = if call.arguments.trim().is_empty() {
                call.initial.clone().unwrap_or_else(|| Value::Object(serde_json::Map::new()))
            } else {
                serde_json::from_str(&call.arguments).unwrap_or_else(|e| {
                    tracing::warn!(
                        tool = %call.name,
                        id = %call.id,
                        "the model's tool arguments are not valid JSON ({e}): {}",
                        truncate(&call.arguments, 200)
                    );
                    Value::String(call.arguments.clone())
                })
            };
            // A call the server gave no id, or the id of an earlier call
            // (a server that numbers ids per reply and repeats one at two
            // indexes): its result must tell it apart from the other's.
            let taken = |id: &str| calls.iter().any(|c| c.id == id) || tool_calls.iter().any(|c| c.id == id);
            let id = if call.id.is_empty() || tool_calls.iter().any(|c| c.id == call.id) {
                let mut id = fresh_id();
                while taken(&id) {
                    id = fresh_id();
                }
                id
            } else {
                call.id.clone()
            };
            if !call.signature.is_empty() {
                let signature = call.signature.clone();
                self.reasoning.push(ReasoningBlock::CallSignature { call_id: id.clone(), signature });
            }
            tool_calls.push(ToolCall { id, name: call.name.clone(), arguments });
        }
        AssistantMessage {
            text: std::mem::take(&mut self.text),
            tool_calls,
            reasoning: std::mem::take(&mut self.reasoning),
        }
    }
}

/// An id for a call the server sent without one (or with an earlier
/// call's): `call_` and 16 hex
/// digits, from a counter mixed with a per-process random key, so ids made
/// up in different replies of one conversation (and, almost surely, in
/// different processes) differ, and each suits every provider's id rules
/// (`^[a-zA-Z0-9_-]+$`).
fn fresh_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static KEY: std::sync::OnceLock<RandomState> = std::sync::OnceLock::new();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("call_{:016x}", KEY.get_or_init(RandomState::new).hash_one(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn delta(index: usize, id: Option<&str>, name: Option<&str>, fragment: &str) -> StreamEvent {
        StreamEvent::ToolCallDelta {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments_fragment: fragment.to_owned(),
        }
    }

    #[test]
    fn repeated_ids_and_names_are_delivered_once() {
        let mut a = Assembler::default();
        assert_eq!(a.tool_piece(Some(0), Some("c1"), Some("read"), ""), delta(0, Some("c1"), Some("read"), ""));
        assert_eq!(a.tool_piece(Some(0), Some("c1"), Some("read"), "{\"p\":"), delta(0, None, None, "{\"p\":"));
        assert_eq!(a.tool_piece(Some(0), None, None, "1}"), delta(0, None, None, "1}"));
        let message = a.finish();
        assert_eq!(
            message.tool_calls,
            vec![ToolCall { id: "c1".into(), name: "read".into(), arguments: json!({"p": 1}) }]
        );
    }

    /// A call's signature counts toward the reply's limit, as its other
    /// pieces do, and is kept under the call's final id.
    #[cfg(feature = "openai")]
    #[test]
    fn a_signature_counts_toward_the_limit_and_follows_its_call() {
        let mut a = Assembler::default();
        a.tool_piece(Some(0), None, Some("read"), "{}");
        let before = a.bytes;
        a.sign_call(0, "c2ln");
        a.sign_call(0, "LTE=");
        // A piece for a call that does not exist is dropped.
        a.sign_call(7, "x");
        assert_eq!(a.bytes, before + 8);
        let message = a.finish();
        let id = message.tool_calls[0].id.clone();
        assert!(id.starts_with("call_"), "{id}");
        assert_eq!(
            message.reasoning,
            vec![ReasoningBlock::CallSignature { call_id: id, signature: "c2lnLTE=".into() }]
        );
    }

    #[test]
    fn a_new_id_at_a_used_index_is_a_new_call() {
        let mut a = Assembler::default();
        a.tool_piece(Some(0), Some("a"), Some("x"), "{}");
        assert_eq!(a.tool_piece(Some(0), Some("b"), Some("y"), "{}"), delta(1, Some("b"), Some("y"), "{}"));
        let calls = a.finish().tool_calls;
        assert_eq!(calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn a_named_piece_without_an_id_after_whole_arguments_or_of_another_tool_is_a_call_of_its_own() {
        // Gemini's endpoint: parallel calls whole, at one index, no ids.
        let mut a = Assembler::default();
        a.tool_piece(Some(0), None, Some("read"), r#"{"p": "a}"}"#);
        assert_eq!(
            a.tool_piece(Some(0), None, Some("read"), r#"{"p":"b"}"#),
            delta(1, None, Some("read"), r#"{"p":"b"}"#)
        );
        // A call with no arguments yet, then one of another tool.
        a.tool_piece(Some(0), None, Some("now"), "");
        assert_eq!(a.tool_piece(Some(0), None, Some("ls"), "{}"), delta(3, None, Some("ls"), "{}"));
        // And without an index.
        assert_eq!(a.tool_piece(None, None, Some("ls"), "[1]"), delta(4, None, Some("ls"), "[1]"));
        let calls = a.finish().tool_calls;
        let got: Vec<(&str, &Value)> = calls.iter().map(|c| (c.name.as_str(), &c.arguments)).collect();
        let (a_, b, empty, list) = (json!({"p": "a}"}), json!({"p": "b"}), json!({}), json!([1]));
        assert_eq!(got, [("read", &a_), ("read", &b), ("now", &empty), ("ls", &empty), ("ls", &list)]);
    }

    #[test]
    fn a_name_repeated_on_every_piece_of_one_call_is_that_call() {
        // Brackets and an escaped quote inside a string do not close the
        // arguments, however the pieces cut them; an empty piece after the
        // end adds nothing.
        let mut a = Assembler::default();
        let pieces = [r#"{"p": "x\"#, r#""}]"#, r#"", "q": ["#, "{}", "]", "}", "", " "];
        for piece in pieces {
            a.tool_piece(Some(0), None, Some("read"), piece);
        }
        let calls = a.finish().tool_calls;
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0].arguments, json!({"p": "x\"}]", "q": [{}]}));
    }

    #[test]
    fn without_an_index_calls_are_found_by_id_or_are_the_latest() {
        let mut a = Assembler::default();
        a.tool_piece(None, Some("a"), Some("x"), "{\"k\":");
        a.tool_piece(None, Some("b"), Some("y"), "{}");
        assert_eq!(a.tool_piece(None, Some("a"), None, "1}"), delta(0, None, None, "1}"));
        a.tool_piece(None, None, None, "");
        let calls = a.finish().tool_calls;
        assert_eq!(calls[0].arguments, json!({"k": 1}));
        assert_eq!(calls[1].arguments, json!({}));
    }

    #[test]
    #[cfg(feature = "anthropic")]
    fn missing_ids_and_empty_arguments_get_defaults() {
        let mut a = Assembler::default();
        a.tool_piece(Some(3), None, Some("now"), "");
        a.tool_piece(Some(5), Some("b"), Some("then"), "");
        a.initial_arguments(5, json!({"given": true}), 15);
        assert!(a.has_call(5) && !a.has_call(4));
        let calls = a.finish().tool_calls;
        assert_eq!((calls[0].name.as_str(), &calls[0].arguments), ("now", &json!({})));
        assert!(is_fresh_id(&calls[0].id), "{}", calls[0].id);
        assert_eq!(calls[1].arguments, json!({"given": true}));
    }

    fn is_fresh_id(id: &str) -> bool {
        id.strip_prefix("call_").is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
    }

    #[test]
    fn made_up_ids_differ_within_a_reply_and_across_replies() {
        let mut ids = Vec::new();
        for _ in 0..3 {
            let mut a = Assembler::default();
            a.tool_piece(Some(0), None, Some("x"), "{}");
            a.tool_piece(Some(1), None, Some("y"), "{}");
            ids.extend(a.finish().tool_calls.into_iter().map(|c| c.id));
        }
        assert!(ids.iter().all(|id| is_fresh_id(id)), "{ids:?}");
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 6, "{ids:?}");
    }

    #[test]
    fn a_call_never_named_is_an_error_and_one_named_later_is_not() {
        let mut a = Assembler::default();
        a.tool_piece(Some(0), Some("c"), None, "");
        assert!(a.nameless_call().is_some());
        a.tool_piece(Some(0), None, Some("read"), "{}");
        assert_eq!(a.nameless_call(), None);
        a.tool_piece(Some(4), None, None, "{}");
        let error = a.nameless_call().expect("a nameless call");
        assert_eq!(
            (error.kind(), error.message()),
            (&ErrorKind::MalformedStream, "the reply's tool call 1 (at index 4) was never given a name")
        );
    }

    #[test]
    fn invalid_arguments_are_kept_as_text_for_the_tool_to_refuse() {
        let mut a = Assembler::default();
        a.tool_piece(Some(0), Some("c"), Some("read"), "{\"p\": ");
        let calls = a.finish().tool_calls;
        assert_eq!(calls, vec![ToolCall { id: "c".into(), name: "read".into(), arguments: json!("{\"p\": ") }]);
    }

    #[test]
    fn text_accumulates() {
        let mut a = Assembler::default();
        assert_eq!(a.text(""), None);
        assert_eq!(a.text("he"), Some(StreamEvent::TextDelta("he".into())));
        a.text("llo");
        assert_eq!(a.finish(), AssistantMessage { text: "hello".into(), ..AssistantMessage::default() });
    }
}
