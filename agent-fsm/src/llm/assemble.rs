//! Builds the reply from its deltas, for both providers' parsers: the text
//! so far, and each tool call's id, name and argument text, found by the
//! key the provider gives (OpenAI's `index`, Anthropic's content-block
//! index) and by id. At the end every call's arguments are parsed as JSON
//! (an invalid one is a typed error, never a panic) and the calls come out
//! in the order they began.

use serde_json::Value;

use super::classify::truncate;
use super::error::{ErrorKind, ProviderError};
use super::event::StreamEvent;
use super::types::{AssistantMessage, ToolCall};

/// A tool call still arriving.
#[derive(Debug)]
struct Partial {
    /// The provider's key for it (`None`: the server gave no index).
    key: Option<usize>,
    id: String,
    name: String,
    arguments: String,
    /// Arguments given whole when the call began (Anthropic's
    /// `content_block_start.input`), used if no fragment follows.
    initial: Option<Value>,
}

/// The reply as it stands.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    text: String,
    calls: Vec<Partial>,
}

impl Assembler {
    /// Appends text; the event to deliver, if there is text.
    pub(crate) fn text(&mut self, text: &str) -> Option<StreamEvent> {
        if text.is_empty() {
            return None;
        }
        self.text.push_str(text);
        Some(StreamEvent::TextDelta(text.to_owned()))
    }

    /// Takes a piece of the tool call keyed `key` (or, without a key, the
    /// one with `id`, or the latest): a piece whose id differs from the
    /// call's at that key starts a new call (servers that send every
    /// parallel call at index 0). Returns the delta to deliver, carrying
    /// the id and name only the first time they are seen.
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
            Some(_) => self.calls.iter().rposition(|c| c.key == key),
            None => match id {
                Some(id) => self.calls.iter().rposition(|c| c.id == id),
                None => self.calls.len().checked_sub(1),
            },
        };
        let index = match found {
            Some(i) if id.is_none_or(|id| self.calls[i].id.is_empty() || self.calls[i].id == id) => i,
            _ => {
                self.calls.push(Partial {
                    key,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                    initial: None,
                });
                self.calls.len() - 1
            }
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
        StreamEvent::ToolCallDelta { index, id: new_id, name: new_name, arguments_fragment: fragment.to_owned() }
    }

    /// Sets the arguments a call began with, given whole.
    #[cfg(feature = "anthropic")]
    pub(crate) fn initial_arguments(&mut self, key: usize, input: Value) {
        if let Some(call) = self.calls.iter_mut().rev().find(|c| c.key == Some(key)) {
            call.initial = Some(input);
        }
    }

    /// Whether a call has the key `key`.
    #[cfg(feature = "anthropic")]
    pub(crate) fn has_call(&self, key: usize) -> bool {
        self.calls.iter().any(|c| c.key == Some(key))
    }

    /// The complete reply: every call's arguments parsed (no text at all
    /// reads as `{}`); a call without an id gets `call_<position>`.
    pub(crate) fn finish(&mut self) -> Result<AssistantMessage, ProviderError> {
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (position, call) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            let arguments = if call.arguments.trim().is_empty() {
                call.initial.unwrap_or_else(|| Value::Object(serde_json::Map::new()))
            } else {
                serde_json::from_str(&call.arguments).map_err(|e| {
                    ProviderError::new(
                        ErrorKind::MalformedStream,
                        format!(
                            "the arguments of tool call `{}` ({}) are not valid JSON ({e}): {}",
                            call.name,
                            call.id,
                            truncate(&call.arguments, 200)
                        ),
                    )
                })?
            };
            let id = if call.id.is_empty() { format!("call_{position}") } else { call.id };
            tool_calls.push(ToolCall { id, name: call.name, arguments });
        }
        Ok(AssistantMessage { text: std::mem::take(&mut self.text), tool_calls })
    }
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
        let message = a.finish().unwrap();
        assert_eq!(
            message.tool_calls,
            vec![ToolCall { id: "c1".into(), name: "read".into(), arguments: json!({"p": 1}) }]
        );
    }

    #[test]
    fn a_new_id_at_a_used_index_is_a_new_call() {
        let mut a = Assembler::default();
        a.tool_piece(Some(0), Some("a"), Some("x"), "{}");
        assert_eq!(a.tool_piece(Some(0), Some("b"), Some("y"), "{}"), delta(1, Some("b"), Some("y"), "{}"));
        let calls = a.finish().unwrap().tool_calls;
        assert_eq!(calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn without_an_index_calls_are_found_by_id_or_are_the_latest() {
        let mut a = Assembler::default();
        a.tool_piece(None, Some("a"), Some("x"), "{\"k\":");
        a.tool_piece(None, Some("b"), Some("y"), "{}");
        assert_eq!(a.tool_piece(None, Some("a"), None, "1}"), delta(0, None, None, "1}"));
        a.tool_piece(None, None, None, "");
        let calls = a.finish().unwrap().tool_calls;
        assert_eq!(calls[0].arguments, json!({"k": 1}));
        assert_eq!(calls[1].arguments, json!({}));
    }

    #[test]
    #[cfg(feature = "anthropic")]
    fn missing_ids_and_empty_arguments_get_defaults() {
        let mut a = Assembler::default();
        a.tool_piece(Some(3), None, Some("now"), "");
        a.tool_piece(Some(5), Some("b"), Some("then"), "");
        a.initial_arguments(5, json!({"given": true}));
        assert!(a.has_call(5) && !a.has_call(4));
        let calls = a.finish().unwrap().tool_calls;
        assert_eq!(calls[0], ToolCall { id: "call_0".into(), name: "now".into(), arguments: json!({}) });
        assert_eq!(calls[1].arguments, json!({"given": true}));
    }

    #[test]
    fn invalid_arguments_are_a_malformed_stream() {
        let mut a = Assembler::default();
        a.tool_piece(Some(0), Some("c"), Some("read"), "{\"p\": ");
        let error = a.finish().unwrap_err();
        assert_eq!(error.kind(), &ErrorKind::MalformedStream);
        assert!(error.message().starts_with("the arguments of tool call `read` (c) are not valid JSON"), "{error}");
    }

    #[test]
    fn text_accumulates() {
        let mut a = Assembler::default();
        assert_eq!(a.text(""), None);
        assert_eq!(a.text("he"), Some(StreamEvent::TextDelta("he".into())));
        a.text("llo");
        assert_eq!(a.finish().unwrap(), AssistantMessage { text: "hello".into(), tool_calls: vec![] });
    }
}
