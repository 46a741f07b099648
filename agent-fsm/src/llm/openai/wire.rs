//! The wire shapes of a Chat Completions chunk, as serde reads them,
//! borrowing strings from the chunk where they have no escapes: the
//! chunk, its choices, deltas, tool-call pieces, usage and error, and a
//! delta's `content` ([`Content`]), which is the text as a string, as
//! OpenAI writes it, or a list of typed parts, as Mistral's reasoning
//! models do (`[{"type": "thinking", "thinking": [...]}, {"type": "text",
//! "text"}]`), whose `text` parts are the reply's text and whose other
//! parts (the reasoning) are not.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde_json::Value;

use crate::llm::event::token_count;

/// The text a delta's `content` holds: borrowed from the chunk when it is
/// a string without escapes (the usual case, as cheap as reading the
/// string alone), the `text` parts joined when it is a list.
pub(super) struct Content<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ContentVisitor(PhantomData))
    }
}

struct ContentVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ContentVisitor<'a> {
    type Value = Content<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or a list of content parts")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(Content(Cow::Borrowed(text)))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Content(Cow::Owned(text.to_owned())))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
        Ok(Content(Cow::Owned(text)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut parts: A) -> Result<Self::Value, A::Error> {
        let mut text = String::new();
        while let Some(part) = parts.next_element::<Part<'de>>()? {
            if let (Some("text"), Some(piece)) = (part.kind.as_deref(), part.text) {
                text.push_str(&piece);
            }
        }
        Ok(Content(Cow::Owned(text)))
    }
}

/// One part of a list: its type, and the text of a `text` part. Other
/// fields (a `thinking` part's own list, a `reference`'s ids) are skipped.
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

/// One `data:` chunk. Every field may be missing or `null`.
#[derive(Deserialize)]
pub(super) struct Chunk<'a> {
    #[serde(default, borrow)]
    pub(super) choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) error: Option<ErrorField>,
    /// The kind of an `error` given as text (text-generation-inference's).
    #[serde(default)]
    pub(super) error_type: Option<String>,
    /// Groq's own fields: the last chunk's `usage` is in there.
    #[serde(default)]
    pub(super) x_groq: Option<XGroq>,
}

/// A chunk's `x_groq`: only its `usage` is read.
#[derive(Deserialize)]
pub(super) struct XGroq {
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

#[derive(Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(default)]
    pub(super) index: Option<usize>,
    #[serde(default, borrow)]
    pub(super) delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    pub(super) finish_reason: Option<Cow<'a, str>>,
    /// Moonshot's (Kimi's) usage, which it gives in the last choice rather
    /// than in the chunk.
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

#[derive(Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(default, borrow)]
    pub(super) content: Option<Content<'a>>,
    #[serde(default, borrow)]
    pub(super) refusal: Option<Cow<'a, str>>,
    /// The model's reasoning: DeepSeek's and vLLM's `reasoning_content`,
    /// OpenRouter's, Groq's and newer vLLM's `reasoning`. Two fields, not
    /// an alias: a server may send both with the same text (the first is
    /// read then).
    #[serde(default, borrow)]
    pub(super) reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) tool_calls: Option<Vec<ToolCallPiece<'a>>>,
    /// The legacy single call, which older OpenAI-compatible servers and
    /// Azure's older API versions write in place of `tool_calls` (no id,
    /// no index), ending the reply with `"finish_reason": "function_call"`.
    /// Boxed: rare, and held inline it made every delta, which is moved
    /// whole while it is read, larger by its size.
    #[serde(default, borrow)]
    pub(super) function_call: Option<Box<FunctionPiece<'a>>>,
}

#[derive(Deserialize)]
pub(super) struct ToolCallPiece<'a> {
    #[serde(default)]
    pub(super) index: Option<usize>,
    #[serde(default, borrow)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) function: Option<FunctionPiece<'a>>,
    /// Google's fields on a call (Gemini's endpoint): the call's thought
    /// signature, which must go back with it.
    #[serde(default, borrow)]
    pub(super) extra_content: Option<ExtraContent<'a>>,
}

/// A call's `extra_content`: only `google.thought_signature` is read.
#[derive(Deserialize)]
pub(super) struct ExtraContent<'a> {
    #[serde(default, borrow)]
    pub(super) google: Option<GoogleFields<'a>>,
}

/// `extra_content.google`.
#[derive(Deserialize)]
pub(super) struct GoogleFields<'a> {
    #[serde(default, borrow)]
    pub(super) thought_signature: Option<Cow<'a, str>>,
}

impl ToolCallPiece<'_> {
    /// The call's thought signature, if the piece carries one.
    pub(super) fn signature(&self) -> Option<&str> {
        self.extra_content.as_ref()?.google.as_ref()?.thought_signature.as_deref()
    }
}

#[derive(Deserialize)]
pub(super) struct FunctionPiece<'a> {
    #[serde(default, borrow)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) arguments: Option<Arguments<'a>>,
}

/// A piece of a call's arguments: JSON text, or (TGI, some llama.cpp
/// builds) the arguments as a JSON value.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Arguments<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Value(Value),
}

impl Arguments<'_> {
    /// The piece as JSON text.
    pub(super) fn text(&self) -> Cow<'_, str> {
        match self {
            Arguments::Text(text) => Cow::Borrowed(text),
            Arguments::Value(value) => Cow::Owned(value.to_string()),
        }
    }
}

/// A chunk's `usage`; each count read by [`token_count`], so that one
/// written oddly (a fraction, a negative) does not fail the chunk.
#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default, deserialize_with = "token_count")]
    pub(super) prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    pub(super) completion_tokens: Option<u64>,
    #[serde(default)]
    pub(super) prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
pub(super) struct PromptDetails {
    #[serde(default, deserialize_with = "token_count")]
    pub(super) cached_tokens: Option<u64>,
}

/// A chunk's `error`: an object, or (text-generation-inference and its
/// forks) the message alone, its kind in the chunk's `error_type`.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum ErrorField {
    Object(WireError),
    Text(String),
}

#[derive(Deserialize, Default)]
pub(super) struct WireError {
    #[serde(default, rename = "type")]
    pub(super) kind: Option<String>,
    #[serde(default)]
    pub(super) code: Option<Value>,
    #[serde(default)]
    pub(super) message: Option<String>,
}
