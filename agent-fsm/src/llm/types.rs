//! The conversation a model reads: [`Message`]s, the [`ToolDefinition`]s
//! it may call and the [`Request`] that carries both. Provider-neutral:
//! each client (`openai.rs`, `anthropic.rs`) maps them to its wire format.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::reasoning::Reasoning;

/// One message of a conversation.
///
/// A tool round is an [`Assistant`](Message::Assistant) message with tool
/// calls, then one [`Tool`](Message::Tool) message per call, in call
/// order. Clients map this to each provider's shape: OpenAI takes one
/// `tool` message per result, Anthropic one `user` message holding every
/// `tool_result` block (consecutive results and a user message right after
/// them are merged into it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Message {
    /// Instructions for the model. OpenAI-compatible servers get it where
    /// it stands; Anthropic's API has one system prompt, so every system
    /// message is joined (with blank lines) into it, after
    /// [`Request::system`].
    System {
        /// The instructions.
        content: String,
    },
    /// What the user wrote.
    User {
        /// The text.
        content: String,
    },
    /// The model's reply: its text and the tools it asked for.
    Assistant(AssistantMessage),
    /// A tool's answer to one call.
    Tool(ToolResult),
}

impl Message {
    /// A system message.
    #[must_use]
    pub fn system(content: impl Into<String>) -> Self {
        Message::System { content: content.into() }
    }

    /// A user message.
    #[must_use]
    pub fn user(content: impl Into<String>) -> Self {
        Message::User { content: content.into() }
    }

    /// An assistant message with text and no tool call.
    #[must_use]
    pub fn assistant(text: impl Into<String>) -> Self {
        Message::Assistant(AssistantMessage { text: text.into(), ..AssistantMessage::default() })
    }

    /// A tool's successful result for the call `call_id`.
    #[must_use]
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Tool(ToolResult { call_id: call_id.into(), content: content.into(), is_error: false })
    }

    /// A tool's error result for the call `call_id`: the model reads it and
    /// may try again.
    #[must_use]
    pub fn tool_error(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Tool(ToolResult { call_id: call_id.into(), content: content.into(), is_error: true })
    }
}

impl From<AssistantMessage> for Message {
    fn from(message: AssistantMessage) -> Self {
        Message::Assistant(message)
    }
}

impl From<ToolResult> for Message {
    fn from(result: ToolResult) -> Self {
        Message::Tool(result)
    }
}

/// What the model said in one reply: text, tool calls, or both, and the
/// reasoning it gave with them.
///
/// # Examples
/// ```
/// use agent_fsm::llm::AssistantMessage;
///
/// // A reply with only text; the other fields keep their defaults.
/// let reply = AssistantMessage { text: "Done.".into(), ..AssistantMessage::default() };
/// assert!(reply.tool_calls.is_empty() && reply.reasoning.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// The reply's text (empty if it only called tools).
    pub text: String,
    /// The tools it asked for, in the order it asked.
    pub tool_calls: Vec<ToolCall>,
    /// The reasoning blocks the reply came with (Anthropic's extended
    /// thinking, Gemini's signatures of its calls), exactly as received.
    /// The Anthropic client sends its thinking blocks back at the head of
    /// this message, in the order they came, as the API requires of a
    /// reply that called tools; the OpenAI-compatible client sends each
    /// call's signature back on that call (see
    /// [`ReasoningBlock::CallSignature`](super::ReasoningBlock::CallSignature))
    /// and nothing else. Empty for a reply without any (and left out of
    /// the serialized message then, so a message saved before the field
    /// existed reads back the same).
    #[serde(default, skip_serializing_if = "Reasoning::is_empty")]
    pub reasoning: Reasoning,
}

/// A tool call the model asked for, complete: its arguments are parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for this call (`call_…`, `toolu_…`); the result
    /// answers it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as the model wrote them (a JSON object when the
    /// model follows the schema; `{}` when it sent none; a JSON string
    /// holding the text when what it sent is not JSON at all, which the
    /// tool set answers with the parse error).
    pub arguments: Value,
}

impl ToolCall {
    /// The arguments as sent back to the model in the conversation: the
    /// call's own when they are a JSON object, `{}` otherwise. Both APIs
    /// want an object there (Anthropic refuses a request whose `tool_use`
    /// input is anything else), and a call whose arguments were not an
    /// object has already been answered with an error that quotes them.
    #[must_use]
    pub fn sent_arguments(&self) -> std::borrow::Cow<'_, Value> {
        if self.arguments.is_object() {
            std::borrow::Cow::Borrowed(&self.arguments)
        } else {
            std::borrow::Cow::Owned(Value::Object(Map::new()))
        }
    }
}

/// A tool's answer to one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] it answers.
    pub call_id: String,
    /// What the model reads.
    pub content: String,
    /// Whether the tool failed. Anthropic carries the flag (`is_error`);
    /// OpenAI's format has no such field, so there the content alone must
    /// say it.
    #[serde(default)]
    pub is_error: bool,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON schema of its arguments (an `"type": "object"` schema).
    pub parameters: Value,
}

impl ToolDefinition {
    /// A tool named `name`, described by `description`, whose arguments
    /// follow the JSON schema `parameters`.
    #[must_use]
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        ToolDefinition { name: name.into(), description: description.into(), parameters }
    }
}

/// One call to a model: everything a client sends.
///
/// The messages are shared behind an `Arc`, so a machine that keeps its
/// conversation as an `Arc<Vec<Message>>` builds a request without copying
/// it; [`message`](Self::message) copies only if the list is shared.
///
/// # Examples
/// ```
/// use agent_fsm::llm::{Message, Request, ToolDefinition};
/// use serde_json::json;
///
/// let request = Request::new("gpt-4o-mini")
///     .system("You are terse.")
///     .message(Message::user("What is in README.md?"))
///     .tool(ToolDefinition::new(
///         "read_file",
///         "Reads a file of the workspace",
///         json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
///     ))
///     .max_tokens(1024)
///     .temperature(0.2);
/// assert_eq!(request.messages.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Request {
    /// The model's name, as the server knows it.
    pub model: String,
    /// A system prompt, sent before the messages.
    pub system: Option<String>,
    /// The conversation so far, oldest first.
    pub messages: Arc<Vec<Message>>,
    /// The tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// The most tokens the reply may have. Anthropic requires one: its
    /// client sends its configured default when this is `None`.
    pub max_tokens: Option<u32>,
    /// Sampling temperature; the server's default when `None`.
    pub temperature: Option<f32>,
    /// More top-level fields for the request body, sent as they are
    /// (vendor options such as `top_p`, `seed` or a gateway's routing);
    /// they override the fields the client writes.
    pub extra: Map<String, Value>,
}

impl Request {
    /// A request to `model` with no message yet.
    #[must_use]
    pub fn new(model: impl Into<String>) -> Self {
        Request {
            model: model.into(),
            system: None,
            messages: Arc::new(Vec::new()),
            tools: Vec::new(),
            max_tokens: None,
            temperature: None,
            extra: Map::new(),
        }
    }

    /// Sets [`system`](Self::system).
    #[must_use]
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Appends a message.
    #[must_use]
    pub fn message(mut self, message: impl Into<Message>) -> Self {
        Arc::make_mut(&mut self.messages).push(message.into());
        self
    }

    /// Replaces the messages with a shared list (no copy).
    #[must_use]
    pub fn messages(mut self, messages: Arc<Vec<Message>>) -> Self {
        self.messages = messages;
        self
    }

    /// Adds a tool.
    #[must_use]
    pub fn tool(mut self, tool: ToolDefinition) -> Self {
        self.tools.push(tool);
        self
    }

    /// Sets [`max_tokens`](Self::max_tokens).
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets [`temperature`](Self::temperature).
    #[must_use]
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Adds a top-level body field (see [`extra`](Self::extra)).
    #[must_use]
    pub fn extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ReasoningBlock;
    use serde_json::json;

    #[test]
    fn messages_round_trip_through_serde_tagged_by_role() {
        let messages = vec![
            Message::system("s"),
            Message::user("u"),
            Message::Assistant(AssistantMessage {
                text: "a".into(),
                tool_calls: vec![ToolCall { id: "c".into(), name: "n".into(), arguments: json!({"k": 1}) }],
                ..AssistantMessage::default()
            }),
            Message::tool_result("c", "ok"),
            Message::tool_error("c", "no"),
        ];
        let value = serde_json::to_value(&messages).unwrap();
        assert_eq!(
            value,
            json!([
                {"role": "system", "content": "s"},
                {"role": "user", "content": "u"},
                {"role": "assistant", "text": "a", "tool_calls": [{"id": "c", "name": "n", "arguments": {"k": 1}}]},
                {"role": "tool", "call_id": "c", "content": "ok", "is_error": false},
                {"role": "tool", "call_id": "c", "content": "no", "is_error": true},
            ])
        );
        assert_eq!(serde_json::from_value::<Vec<Message>>(value).unwrap(), messages);
        assert_eq!(
            Message::assistant("x"),
            Message::from(AssistantMessage { text: "x".into(), ..AssistantMessage::default() })
        );
    }

    #[test]
    fn reasoning_is_serialized_only_when_there_is_some_and_old_messages_still_read() {
        // A message saved before `reasoning` existed.
        let old = json!({"role": "assistant", "text": "t", "tool_calls": []});
        let read: Message = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(read, Message::assistant("t"));
        assert_eq!(serde_json::to_value(&read).unwrap(), old);

        let reply = AssistantMessage {
            text: String::new(),
            tool_calls: Vec::new(),
            reasoning: vec![
                ReasoningBlock::Thinking { thinking: "hm\n".into(), signature: "c2ln".into() },
                ReasoningBlock::RedactedThinking { data: "ZW5j".into() },
            ]
            .into(),
        };
        let value = serde_json::to_value(Message::Assistant(reply.clone())).unwrap();
        assert_eq!(
            value["reasoning"],
            json!([
                {"type": "thinking", "thinking": "hm\n", "signature": "c2ln"},
                {"type": "redacted_thinking", "data": "ZW5j"},
            ])
        );
        assert_eq!(serde_json::from_value::<Message>(value).unwrap(), Message::Assistant(reply));
    }

    #[test]
    fn a_request_shares_its_messages_until_it_appends() {
        let shared = Arc::new(vec![Message::user("one")]);
        let request = Request::new("m").messages(Arc::clone(&shared));
        assert!(Arc::ptr_eq(&request.messages, &shared));
        let request = request.message(Message::user("two"));
        assert_eq!((shared.len(), request.messages.len()), (1, 2));
    }
}
