//! A delta's `content` ([`Content`]): the text as a string, as OpenAI
//! writes it, or a list of typed parts, as Mistral's reasoning models do
//! (`[{"type": "thinking", "thinking": [...]}, {"type": "text", "text"}]`),
//! whose `text` parts are the reply's text and whose other parts (the
//! reasoning) are not.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

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
