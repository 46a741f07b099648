//! What a provider's stream yields: [`StreamEvent`]s, ending with one
//! [`StreamEvent::Completed`] that carries the assembled reply, its
//! [`StopReason`] and its [`Usage`].

use serde::{Deserialize, Serialize};

use super::types::AssistantMessage;

/// One item of a model's streamed reply.
///
/// A successful stream yields any number of deltas, then exactly one
/// [`Completed`](Self::Completed), then ends. A failed one yields a
/// [`ProviderError`](super::ProviderError) as its last item instead.
/// Deltas are for showing progress; `Completed` alone is enough to go on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum StreamEvent {
    /// A piece of the reply's text, as it arrived.
    TextDelta(String),
    /// A piece of the model's reasoning as it arrived, for showing
    /// progress: the text of an Anthropic `thinking` block, whose blocks
    /// whole, signatures included, are in `Completed`'s
    /// [`reasoning`](AssistantMessage::reasoning); or an OpenAI-compatible
    /// server's `reasoning_content` or `reasoning` (DeepSeek, vLLM,
    /// OpenRouter, Groq), which the reply does not keep, as those servers
    /// take none of it back.
    ReasoningDelta(String),
    /// A piece of a tool call.
    ToolCallDelta {
        /// The call's position among this reply's tool calls, 0-based, in
        /// the order the calls began (the same numbering for every
        /// provider: Anthropic's content-block index is not used).
        index: usize,
        /// The call's id as the server sent it, on the first delta of the
        /// call only (`Completed` has a made-up one for a call the server
        /// gave none, or the id of an earlier call).
        id: Option<String>,
        /// The tool's name, on the first delta of the call only.
        name: Option<String>,
        /// The next piece of the arguments' JSON text (may be empty).
        arguments_fragment: String,
    },
    /// The reply is complete.
    Completed {
        /// The whole reply: all the text, and every tool call with its
        /// arguments parsed as JSON.
        message: AssistantMessage,
        /// Why the model stopped.
        stop_reason: StopReason,
        /// The tokens the call used, as the server reported them.
        usage: Usage,
    },
}

/// Why the model stopped writing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum StopReason {
    /// It finished its turn (OpenAI `stop`, Anthropic `end_turn`,
    /// text-generation-inference `eos_token`).
    EndTurn,
    /// It is waiting for the results of its tool calls (`tool_calls`,
    /// `tool_use`; also an OpenAI-compatible reply of tool calls that
    /// ends with `stop`, as Gemini's endpoint writes it).
    ToolUse,
    /// It reached the token limit (`length`, `max_tokens`), or the model's
    /// context window filled up first (Anthropic
    /// `model_context_window_exceeded`): the reply is cut off.
    MaxTokens,
    /// It wrote one of the request's stop sequences (Anthropic's and
    /// text-generation-inference's `stop_sequence`; OpenAI reports those
    /// as `stop`).
    StopSequence,
    /// The server withheld or stopped the reply, or the model declined
    /// (`content_filter`, an OpenAI reply that is a `refusal`, whose words
    /// are the reply's text, Anthropic `refusal`).
    ContentFilter,
    /// A reason this crate does not know, as the server wrote it
    /// (Anthropic `pause_turn`, say).
    Other(String),
}

impl StopReason {
    #[cfg(any(feature = "openai", feature = "anthropic"))]
    /// For a reply that ended without a reason (`[DONE]` with no
    /// `finish_reason`): what the reply is.
    pub(crate) fn inferred(message: &AssistantMessage) -> Self {
        if message.tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse }
    }

    /// Reads an OpenAI `finish_reason`.
    #[cfg(feature = "openai")]
    pub(crate) fn from_openai(reason: &str) -> Self {
        match reason {
            // `eos_token`: text-generation-inference's name for `stop`
            // where it does not translate it.
            "stop" | "eos_token" => StopReason::EndTurn,
            // `function_call` is the legacy name of `tool_calls`.
            "tool_calls" | "function_call" => StopReason::ToolUse,
            "length" => StopReason::MaxTokens,
            "content_filter" => StopReason::ContentFilter,
            // text-generation-inference names a stop sequence's stop.
            "stop_sequence" => StopReason::StopSequence,
            other => StopReason::Other(other.to_owned()),
        }
    }

    /// Reads an Anthropic `stop_reason`.
    #[cfg(feature = "anthropic")]
    pub(crate) fn from_anthropic(reason: &str) -> Self {
        match reason {
            "end_turn" => StopReason::EndTurn,
            "tool_use" => StopReason::ToolUse,
            // Newer models stop at the window's end rather than refuse a
            // request whose input and `max_tokens` go past it.
            "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "refusal" => StopReason::ContentFilter,
            other => StopReason::Other(other.to_owned()),
        }
    }
}

/// Tokens a call used. A server that reports none gives zeros (an
/// OpenAI-compatible server reports usage only when asked, which the client
/// does unless configured not to). The clients read a count written as a
/// fraction rounded and one below zero as 0, and pass over one that is no
/// number: the reply is not failed for its bookkeeping.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Tokens read, cached ones included.
    pub input_tokens: u64,
    /// Tokens written.
    pub output_tokens: u64,
    /// Of the input, tokens read from the server's prompt cache (OpenAI
    /// `prompt_tokens_details.cached_tokens`, Anthropic
    /// `cache_read_input_tokens`).
    pub cache_read_tokens: u64,
    /// Tokens written to the prompt cache (Anthropic
    /// `cache_creation_input_tokens`; OpenAI reports none).
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Usage of `input_tokens` read and `output_tokens` written.
    #[must_use]
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage { input_tokens, output_tokens, ..Usage::default() }
    }

    /// Input and output tokens together.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Adds `other`, field by field (saturating), to count a session.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
    }
}

/// Reads a token count of a server's usage as well as it can be read:
/// a whole number as it is, a fraction rounded (GLM's Anthropic-compatible
/// API writes cached input so), a negative one as 0 (OpenAI's o3 has sent
/// `"completion_tokens": -35`), and anything else (`null`, text) as no
/// count, which keeps the one before. A count is bookkeeping: one the
/// server writes oddly must not fail a reply that came whole, nor every
/// retry of it.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) fn token_count<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let serde_json::Value::Number(n) = serde_json::Value::deserialize(deserializer)? else {
        return Ok(None);
    };
    if let Some(count) = n.as_u64() {
        return Ok(Some(count));
    }
    if n.is_i64() {
        return Ok(Some(0)); // a negative whole number
    }
    // Float to integer `as` saturates: below zero is 0, past `u64::MAX`
    // the most.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rounded = n.as_f64().map(|f| f.round() as u64);
    Ok(rounded)
}

#[cfg(test)]
mod tests {
    use super::Usage;

    #[test]
    fn usage_adds_up_field_by_field_and_saturates() {
        let mut session = Usage::new(10, 5);
        session.cache_read_tokens = 2;
        let mut call = Usage::new(1, 2);
        call.cache_write_tokens = 3;
        session.add(call);
        let mut expected = Usage::new(11, 7);
        expected.cache_read_tokens = 2;
        expected.cache_write_tokens = 3;
        assert_eq!(session, expected);
        assert_eq!(session.total(), 18);
        session.add(Usage::new(u64::MAX, 0));
        assert_eq!((session.input_tokens, session.total()), (u64::MAX, u64::MAX));
    }
}
