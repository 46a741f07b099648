//! The parser of a Chat Completions event stream ([`StreamParser`]):
//! `data:` chunks in, [`StreamEvent`]s and the assembled reply out, with
//! no I/O.

use std::collections::VecDeque;

use serde_json::{Value, json};

use super::wire::{Arguments, Chunk, ErrorField};
use crate::llm::assemble::{Assembler, over_limit};
use crate::llm::classify;
use crate::llm::error::{ErrorKind, ProviderError};
use crate::llm::event::{StopReason, StreamEvent, Usage};
use crate::llm::http::{Decoder, Item};
use crate::llm::sse::SseDecoder;

/// Turns the bytes of a Chat Completions event stream into
/// [`StreamEvent`]s, with no I/O: what [`OpenAi`](super::OpenAi) runs on each piece of
/// the body. It reads each chunk's first choice (index 0); the client,
/// which asks for one choice unless `n` says otherwise, reads a choice at
/// any index as that one.
///
/// # Examples
/// ```
/// use std::collections::VecDeque;
/// use agent_fsm::llm::{StopReason, StreamEvent, openai::StreamParser};
///
/// let mut parser = StreamParser::new();
/// let mut out = VecDeque::new();
/// parser.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n", &mut out);
/// parser.feed(b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", &mut out);
/// assert_eq!(out.pop_front(), Some(Ok(StreamEvent::TextDelta("Hi".into()))));
/// let Some(Ok(StreamEvent::Completed { message, stop_reason, .. })) = out.pop_front() else { panic!() };
/// assert_eq!((message.text.as_str(), stop_reason), ("Hi", StopReason::EndTurn));
/// assert!(parser.is_done());
/// ```
#[derive(Debug, Default)]
pub struct StreamParser {
    sse: SseDecoder,
    reply: Assembler,
    finish_reason: Option<StopReason>,
    usage: Usage,
    /// The model wrote a `refusal`: it declined to answer.
    refused: bool,
    /// The request asked for one choice, so a choice at any index is the
    /// reply's; otherwise only the first (index 0) is read. Set by the
    /// client.
    pub(super) any_index: bool,
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

    /// The body ended. A reply whose finish reason came completes (the
    /// server may close without `[DONE]`); any other fails with
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
        let data = data.trim();
        if data == "[DONE]" {
            return self.complete(out);
        }
        let chunk: Chunk<'_> = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(e) => {
                let message = format!("a chunk is not the JSON expected ({e}): {}", classify::truncate(data, 200));
                return self.fail(ProviderError::new(ErrorKind::MalformedStream, message), out);
            }
        };
        // An `error` event's data may be the error itself (llama.cpp's).
        let error = match chunk.error {
            None if event == "error" => Some(serde_json::from_str(data).unwrap_or_default()),
            None => None,
            Some(ErrorField::Object(e)) => Some(e),
            Some(ErrorField::Text(message)) => {
                return self.fail(classify::text_error(chunk.error_type.as_deref(), message), out);
            }
        };
        if let Some(e) = error {
            let message = e.message.unwrap_or_default();
            return self.fail(classify::error_object(e.kind, e.code.as_ref(), message), out);
        }
        // The first choice, or (one asked for) the one at any index; the
        // others of `n` > 1 are not read.
        let any_index = self.any_index;
        for choice in chunk.choices.iter().flatten().filter(|c| any_index || c.index.unwrap_or(0) == 0) {
            if let Some(delta) = &choice.delta {
                let reasoning = delta.reasoning_content.as_deref().or(delta.reasoning.as_deref());
                if let Some(event) = reasoning.and_then(|r| self.reply.passing_reasoning(r)) {
                    out.push_back(Ok(event));
                }
                if let Some(event) = delta.content.as_ref().and_then(|content| self.reply.text(&content.0)) {
                    out.push_back(Ok(event));
                }
                // OpenAI's refusal, in place of the content: the model's own
                // words on why it declined, shown as its text.
                if let Some(event) = delta.refusal.as_deref().and_then(|text| self.reply.text(text)) {
                    self.refused = true;
                    out.push_back(Ok(event));
                }
                for call in delta.tool_calls.iter().flatten() {
                    let function = call.function.as_ref();
                    let event = self.reply.tool_piece(
                        call.index,
                        call.id.as_deref(),
                        function.and_then(|f| f.name.as_deref()),
                        &function.and_then(|f| f.arguments.as_ref()).map(Arguments::text).unwrap_or_default(),
                    );
                    if let (StreamEvent::ToolCallDelta { index, .. }, Some(signature)) = (&event, call.signature()) {
                        self.reply.sign_call(*index, signature);
                    }
                    out.push_back(Ok(event));
                    if let Some(error) = self.reply.too_many_calls() {
                        return self.fail(error, out);
                    }
                }
                // The legacy call: a piece of the reply's one call, read as
                // a `tool_calls` piece without index or id would be (its id
                // made up at the end), so that a reply ended with
                // `function_call` holds the call it announces.
                if let Some(function) = &delta.function_call {
                    let arguments = function.arguments.as_ref().map(Arguments::text).unwrap_or_default();
                    out.push_back(Ok(self.reply.tool_piece(None, None, function.name.as_deref(), &arguments)));
                    if let Some(error) = self.reply.too_many_calls() {
                        return self.fail(error, out);
                    }
                }
            }
            // Ollama, LocalAI and SGLang write `""` on every chunk before
            // the last: no reason yet.
            if let Some(reason) = choice.finish_reason.as_deref().filter(|r| !r.is_empty()) {
                // vLLM's and SGLang's `abort`, OpenRouter's `error`,
                // DeepSeek's `insufficient_system_resource`: the server gave
                // up on the reply part way, as a failure mid-stream would,
                // and it is retried as one.
                if matches!(reason, "abort" | "error" | "insufficient_system_resource") {
                    let message = format!("the server ended the reply with `\"finish_reason\": \"{reason}\"`");
                    let kind = ErrorKind::ServerError { status: 500, retry_after: None };
                    return self.fail(ProviderError::new(kind, message), out);
                }
                self.finish_reason = Some(StopReason::from_openai(reason));
            }
        }
        // Each count the server gives wins; one it leaves out or `null`
        // (LiteLLM's and MiniMax's partial or empty `usage` on other
        // chunks) keeps what came before. Groq gives it in `x_groq`,
        // Moonshot in the reply's choice.
        let in_choice = chunk.choices.into_iter().flatten().filter(|c| any_index || c.index.unwrap_or(0) == 0);
        let usage = chunk.usage.or_else(|| chunk.x_groq.and_then(|groq| groq.usage));
        if let Some(usage) = usage.or_else(|| in_choice.filter_map(|c| c.usage).next_back()) {
            let set = |field: &mut u64, value: Option<u64>| {
                if let Some(value) = value {
                    *field = value;
                }
            };
            set(&mut self.usage.input_tokens, usage.prompt_tokens);
            set(&mut self.usage.output_tokens, usage.completion_tokens);
            set(&mut self.usage.cache_read_tokens, usage.prompt_tokens_details.and_then(|d| d.cached_tokens));
        }
    }

    fn complete(&mut self, out: &mut VecDeque<Item>) {
        if let Some(error) = self.reply.nameless_call() {
            return self.fail(error, out);
        }
        // `[DONE]` with no finish reason, which lenient servers send for a
        // whole reply, but not after a call cut in two.
        if self.finish_reason.is_none()
            && let Some(error) = self.reply.cut_call()
        {
            return self.fail(error, out);
        }
        let message = self.reply.finish();
        let mut stop_reason = self.finish_reason.take().unwrap_or_else(|| StopReason::inferred(&message));
        // A refusal ends with `stop`; the reply is no answer all the same.
        if self.refused && stop_reason == StopReason::EndTurn {
            stop_reason = StopReason::ContentFilter;
        } else if stop_reason == StopReason::EndTurn && !message.tool_calls.is_empty() {
            // Gemini's endpoint ends a reply of tool calls with `stop`;
            // the model waits for their results all the same.
            stop_reason = StopReason::ToolUse;
        }
        out.push_back(Ok(StreamEvent::Completed { message, stop_reason, usage: self.usage }));
        self.done = true;
    }

    fn fail(&mut self, error: ProviderError, out: &mut VecDeque<Item>) {
        out.push_back(Err(error));
        self.done = true;
    }
}

impl Decoder for StreamParser {
    fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<Item>) {
        StreamParser::feed(self, chunk, out);
    }

    /// A whole chat completion (a server that ignored `"stream": true`):
    /// each choice's `message` is read as one delta holding all of it, the
    /// calls numbered in order, then the reply completes as on `[DONE]`.
    /// An error object is read as one in the stream would be.
    fn whole(&mut self, body: &[u8], out: &mut VecDeque<Item>) -> bool {
        let Ok(mut completion) = serde_json::from_slice::<Value>(body) else {
            return false;
        };
        let Some(object) = completion.as_object_mut() else { return false };
        if !object.contains_key("choices") && !object.contains_key("error") {
            return false;
        }
        for choice in object.get_mut("choices").and_then(Value::as_array_mut).into_iter().flatten() {
            let Some(choice) = choice.as_object_mut() else { continue };
            let Some(mut message) = choice.remove("message") else { continue };
            let calls = message.get_mut("tool_calls").and_then(Value::as_array_mut);
            for (index, call) in calls.into_iter().flatten().enumerate() {
                if let Some(call) = call.as_object_mut() {
                    call.entry("index").or_insert(json!(index));
                }
            }
            choice.insert("delta".to_owned(), message);
        }
        self.frame("", &completion.to_string(), out);
        self.frame("", "[DONE]", out);
        true
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
        if self.finish_reason.is_some() {
            return self.complete(out);
        }
        let error = cut.unwrap_or_else(|| match sse.unframed() {
            Some(body) => classify::unframed(body),
            None => ProviderError::new(ErrorKind::ConnectionDropped, "the stream ended before the reply was complete"),
        });
        self.fail(error, out);
    }

    fn is_done(&self) -> bool {
        self.done
    }

    /// The finish reason came: only the usage and `[DONE]` are awaited.
    fn settled(&self) -> bool {
        !self.done && self.finish_reason.is_some()
    }
}
