//! The reasoning a reply came with ([`Reasoning`], [`ReasoningBlock`]):
//! Anthropic's thinking blocks and Gemini's signatures of tool calls, kept
//! exactly as received so that they go back to the server with the reply
//! that made them.

use std::fmt;
use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One block of a model's reasoning, kept so that it goes back to the
/// provider unchanged: the signature (or the encrypted data) is checked
/// by the server, so the text must not be edited.
///
/// Serialized as Anthropic writes it: `{"type": "thinking", "thinking",
/// "signature"}` or `{"type": "redacted_thinking", "data"}`; a call's
/// signature as `{"type": "call_signature", "call_id", "signature"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReasoningBlock {
    /// An Anthropic `thinking` block: the reasoning's text (a summary of
    /// it on Claude 4 models; empty when the request asked for it to be
    /// omitted) and the signature that authenticates it.
    Thinking {
        /// The reasoning's text.
        thinking: String,
        /// The server's signature of the block.
        signature: String,
    },
    /// An Anthropic `redacted_thinking` block: reasoning the server
    /// encrypted; only its opaque data travels.
    RedactedThinking {
        /// The encrypted reasoning.
        data: String,
    },
    /// Gemini's signature of the reasoning behind one tool call of the
    /// reply (`extra_content.google.thought_signature` on the call, from
    /// its OpenAI-compatible endpoint). Gemini 3 refuses a request whose
    /// conversation holds a call of the current turn without it (`400`,
    /// "function call is missing a thought_signature"), so the
    /// OpenAI-compatible client sends it back on the call it came with.
    /// The Anthropic client does not send it.
    CallSignature {
        /// The id of the call it signs, as the reply's
        /// [`ToolCall::id`](super::ToolCall::id).
        call_id: String,
        /// The server's signature, opaque.
        signature: String,
    },
}

/// The reasoning blocks of one reply, in the order the model gave them:
/// a list of [`ReasoningBlock`]s (it derefs to a slice), empty for most
/// replies.
///
/// Held behind one pointer, so that a reply without reasoning (the usual
/// case) costs its [`AssistantMessage`](super::AssistantMessage) 8 bytes
/// rather than a vector's 24: every event of a streamed reply is moved a
/// few times on its way to the machine, at the size of the largest one,
/// the completed reply. Serialized as the list.
///
/// # Examples
/// ```
/// use agent_fsm::llm::{Reasoning, ReasoningBlock};
///
/// let mut reasoning = Reasoning::default();
/// assert!(reasoning.is_empty());
/// reasoning.push(ReasoningBlock::RedactedThinking { data: "c2VjcmV0".into() });
/// assert_eq!(reasoning.len(), 1);
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
// The extra allocation is the point: one pointer in the message, paid
// only by the replies that have reasoning.
#[allow(clippy::box_collection)]
pub struct Reasoning(Option<Box<Vec<ReasoningBlock>>>);

impl Reasoning {
    /// Whether the reply came with no reasoning.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|blocks| blocks.is_empty())
    }

    /// Appends `block`.
    pub fn push(&mut self, block: ReasoningBlock) {
        self.0.get_or_insert_default().push(block);
    }
}

impl Deref for Reasoning {
    type Target = [ReasoningBlock];

    fn deref(&self) -> &[ReasoningBlock] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl DerefMut for Reasoning {
    fn deref_mut(&mut self) -> &mut [ReasoningBlock] {
        self.0.as_deref_mut().map_or(&mut [], Vec::as_mut_slice)
    }
}

impl From<Vec<ReasoningBlock>> for Reasoning {
    fn from(blocks: Vec<ReasoningBlock>) -> Self {
        Reasoning((!blocks.is_empty()).then(|| Box::new(blocks)))
    }
}

impl FromIterator<ReasoningBlock> for Reasoning {
    fn from_iter<I: IntoIterator<Item = ReasoningBlock>>(blocks: I) -> Self {
        blocks.into_iter().collect::<Vec<_>>().into()
    }
}

impl PartialEq<Vec<ReasoningBlock>> for Reasoning {
    fn eq(&self, other: &Vec<ReasoningBlock>) -> bool {
        **self == **other
    }
}

impl fmt::Debug for Reasoning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Reasoning {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Reasoning {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<ReasoningBlock>::deserialize(deserializer).map(Reasoning::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thinking(text: &str) -> ReasoningBlock {
        ReasoningBlock::Thinking { thinking: text.into(), signature: "sig".into() }
    }

    /// An empty list and no list are the same, however it was made.
    #[test]
    fn empty_is_empty_however_made() {
        let made = [Reasoning::default(), Vec::new().into(), std::iter::empty().collect()];
        for reasoning in &made {
            assert!(reasoning.is_empty() && reasoning.iter().next().is_none());
            assert_eq!(reasoning, &Reasoning::default());
            assert_eq!(format!("{reasoning:?}"), "[]");
            assert_eq!(serde_json::to_string(reasoning).expect("json"), "[]");
        }
        assert_eq!(std::mem::size_of::<Reasoning>(), std::mem::size_of::<usize>());
    }

    /// Blocks keep their order through a push, a change in place and a
    /// round trip through JSON.
    #[test]
    fn blocks_keep_their_order() {
        let mut reasoning = Reasoning::default();
        reasoning.push(thinking("a"));
        reasoning.push(ReasoningBlock::RedactedThinking { data: "x".into() });
        if let Some(ReasoningBlock::Thinking { thinking, .. }) = reasoning.first_mut() {
            thinking.push('b');
        }
        let expected = vec![thinking("ab"), ReasoningBlock::RedactedThinking { data: "x".into() }];
        assert_eq!(reasoning, expected);
        assert!(!reasoning.is_empty());
        assert_eq!(format!("{reasoning:?}"), format!("{expected:?}"));
        let json = serde_json::to_string(&reasoning).expect("json");
        assert_eq!(serde_json::from_str::<Reasoning>(&json).expect("read back"), reasoning);
        assert_eq!(expected.into_iter().collect::<Reasoning>(), reasoning);
    }
}
