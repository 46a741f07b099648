//! The scripted model of the no-setup session: a deterministic stand-in
//! for a provider that fixes a typo in `greeting.sh` and checks the fix,
//! picking each reply from the conversation so far.

use agent_fsm::llm::{Provider, ProviderError, Request, StreamEvent, Usage};
use futures::stream::BoxStream;
use serde_json::{Value, json};
use std::time::Duration;

use super::stream_reply_with;
use crate::loom::{AssistantMessage, Message, ToolCall};

/// A scripted model for a no-setup session: it fixes a typo in
/// `greeting.sh` and checks the fix by running it.
///
/// It picks its reply from the conversation so far (how many tool results
/// it has seen, and what the last one said), so the same conversation
/// always gets the same reply, and streams it as a provider would: text
/// deltas, one tool-call delta per call, then `Completed`.
#[derive(Debug, Clone)]
pub struct ScriptedLlm {
    /// Pause between streamed chunks, to look like a real model.
    pub delay: Duration,
}

impl Default for ScriptedLlm {
    fn default() -> Self {
        ScriptedLlm { delay: Duration::from_millis(15) }
    }
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall { id: id.to_owned(), name: name.to_owned(), arguments }
}

fn reply(text: &str, tool_calls: Vec<ToolCall>) -> AssistantMessage {
    AssistantMessage { text: text.to_owned(), tool_calls, ..Default::default() }
}

/// The tokens (input, output) the scripted model reports for each of its
/// four replies, in the order of the session: made-up counts that tell the
/// replies apart, as a real server's usage would.
pub const SCRIPTED_USAGE: [(u64, u64); 4] = [(120, 18), (260, 22), (340, 16), (410, 12)];

/// The tool results of a conversation, in order.
fn tool_results(messages: &[Message]) -> Vec<&str> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(result) => Some(result.content.as_str()),
            _ => None,
        })
        .collect()
}

impl ScriptedLlm {
    /// Which of its four replies the model gives to a conversation.
    fn step(messages: &[Message]) -> usize {
        match tool_results(messages).len() {
            0 if matches!(messages.last(), Some(Message::User { .. })) => 0,
            2 => 1,
            3 => 2,
            _ => 3,
        }
    }

    /// The tokens the reply to a conversation reports ([`SCRIPTED_USAGE`]).
    #[must_use]
    pub fn usage(messages: &[Message]) -> Usage {
        let (input, output) = SCRIPTED_USAGE[Self::step(messages)];
        Usage::new(input, output)
    }

    /// The reply for a conversation.
    #[must_use]
    pub fn reply(messages: &[Message]) -> AssistantMessage {
        let tool_results = tool_results(messages);
        match Self::step(messages) {
            0 => reply(
                "Let me look at the workspace and the script first.",
                vec![
                    call("call_1", "list_files", json!({ "path": "." })),
                    call("call_2", "read_file", json!({ "path": "greeting.sh" })),
                ],
            ),
            1 => reply(
                "The script prints \"wrold\"; I'll fix the typo.",
                vec![call(
                    "call_3",
                    "edit_file",
                    json!({ "path": "greeting.sh", "old_text": "wrold", "new_text": "world" }),
                )],
            ),
            2 => reply(
                "Now let me run it to check.",
                vec![call("call_4", "run_command", json!({ "command": "sh greeting.sh" }))],
            ),
            _ => {
                let output = tool_results.last().map(|c| c.trim()).unwrap_or_default();
                reply(&format!("Fixed: `greeting.sh` now prints \"{output}\"."), Vec::new())
            }
        }
    }
}

impl Provider for ScriptedLlm {
    fn stream(&self, request: &Request) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let reply = Self::reply(&request.messages);
        let usage = Self::usage(&request.messages);
        // Observed as the real clients are: a `chat` span and token metrics
        // when agent-fsm's telemetry features are on.
        agent_fsm::llm::observe("scripted", request, stream_reply_with(reply, usage, self.delay))
    }
}
