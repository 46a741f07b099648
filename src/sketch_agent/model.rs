//! The model side of the agent: the [`Llm`] trait and [`ScriptedLlm`], a
//! deterministic stand-in, with the demo session's fixed inputs.

use crate::sketch::{
    AssistantMessage, LlmReply, Message, NOTES_HEADING, Spend, StopReason, ToolCall, ToolResult, USER_MESSAGES_HEADING,
    Usage,
};
use agent_fsm::llm::{ErrorKind, ProviderError};
use futures::future::{BoxFuture, FutureExt};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::time::Duration;

/// A language model: the complete reply to a conversation.
pub trait Llm: Send + Sync + 'static {
    /// The reply to `conversation` (its last message is the one just sent),
    /// or why the call failed.
    fn reply(&self, conversation: Vec<Message>) -> BoxFuture<'static, Result<LlmReply, ProviderError>>;
}

/// The file the demo session writes: valid Rust, badly formatted.
pub const UNFORMATTED_LIB_RS: &str = "pub fn add(a:i32,b:i32)->i32{a+b}\n#[cfg(test)]\nmod tests{use super::*;#[test]fn adds(){assert_eq!(add(2,2),4);}}\n";

/// The command the demo session's model runs to commit `src/lib.rs`.
pub const COMMIT_COMMAND: &str = "git add src/lib.rs && git commit -q -m 'Add add()'";

/// The demo session's prompt.
pub const DEMO_PROMPT: &str = "Add an `add` function to src/lib.rs and commit it.";

/// A deterministic model, in the manner of Shelley's `predictable.go`: the
/// user's newest message picks a script, and the tool rounds already in the
/// turn pick the step, so one conversation always gets one reply. A user
/// message right after tool results that opens with one of Sketch's
/// round-note headings is the round's note, not a prompt.
///
/// | prompt | reply |
/// | --- | --- |
/// | `say: TEXT` | answers `TEXT` |
/// | `bash: CMD` | runs `CMD` with `bash`, then answers with what came back |
/// | `multi_bash: A \|\|\| B` | runs `A` and `B` concurrently, then answers |
/// | `bash_then_fail: CMD` | runs `CMD`, then the next call fails |
/// | `error: TEXT` | the call fails with `TEXT` |
/// | `maxTokens` | a reply cut off at its token limit |
/// | anything else | the demo: writes [`UNFORMATTED_LIB_RS`] to `src/lib.rs`, commits it with [`COMMIT_COMMAND`], then answers |
///
/// Answers after tools quote the last results, the agent's notes (commits,
/// formatters) and any user messages gathered with them.
#[derive(Debug, Clone)]
pub struct ScriptedLlm {
    /// How long each reply takes.
    pub delay: Duration,
    /// What each reply costs.
    pub spend: Spend,
}

impl Default for ScriptedLlm {
    fn default() -> Self {
        ScriptedLlm { delay: Duration::from_millis(40), spend: Spend::new(Usage::new(600, 400), 1) }
    }
}

/// What a prompt asks the scripted model for.
enum Script<'a> {
    Say(&'a str),
    Fail(&'a str),
    MaxTokens,
    Bash(Vec<&'a str>),
    BashThenFail(&'a str),
    Demo,
}

impl<'a> Script<'a> {
    fn parse(prompt: &'a str) -> Self {
        let prompt = prompt.trim();
        let after = |prefix: &str| prompt.strip_prefix(prefix).map(str::trim);
        if let Some(text) = after("say:") {
            Script::Say(text)
        } else if let Some(text) = after("error:") {
            Script::Fail(text)
        } else if prompt == "maxTokens" {
            Script::MaxTokens
        } else if let Some(commands) = after("multi_bash:") {
            Script::Bash(commands.split("|||").map(str::trim).collect())
        } else if let Some(command) = after("bash_then_fail:") {
            Script::BashThenFail(command)
        } else if let Some(command) = after("bash:") {
            Script::Bash(vec![command])
        } else {
            Script::Demo
        }
    }
}

impl ScriptedLlm {
    /// A model that answers at once, each reply costing `spend`.
    #[must_use]
    pub fn instant(spend: Spend) -> Self {
        ScriptedLlm { delay: Duration::ZERO, spend }
    }

    /// The reply to `conversation` (see the table on the type).
    ///
    /// # Errors
    /// The scripted failures, and a conversation without a user message.
    pub fn reply_to(&self, conversation: &[Message]) -> Result<LlmReply, ProviderError> {
        let spend = self.spend;
        let Some((start, prompt)) = conversation.iter().enumerate().rev().find_map(|(i, m)| match m {
            Message::User { content } if !is_round_note(conversation, i) => Some((i, content.as_str())),
            _ => None,
        }) else {
            return Err(ProviderError::new(ErrorKind::BadRequest, "the conversation has no user message"));
        };
        let turn = conversation.get(start + 1..).unwrap_or_default();
        // Every reply of the turn so far asked for tools and got results.
        let rounds = turn.iter().filter(|m| matches!(m, Message::Assistant(_))).count();
        let last_results = last_round(turn);
        // Call ids unique in the session: the reply's number, the call's.
        let reply_number = conversation.iter().filter(|m| matches!(m, Message::Assistant(_))).count() + 1;
        let call = |index: usize, name: &str, arguments: Value| ToolCall {
            id: format!("toolu_{reply_number:02}_{}", index + 1),
            name: name.to_owned(),
            arguments,
        };
        let bash = |index: usize, command: &str| call(index, "bash", json!({ "command": command }));
        let tools = |text: &str, calls: Vec<ToolCall>| LlmReply {
            message: AssistantMessage { text: text.to_owned(), tool_calls: calls, ..Default::default() },
            stop_reason: StopReason::ToolUse,
            spend,
        };
        match Script::parse(prompt) {
            Script::Say(text) => Ok(LlmReply::text(text, spend)),
            Script::Fail(text) => Err(ProviderError::new(ErrorKind::Auth, text)),
            Script::MaxTokens => Ok(LlmReply {
                stop_reason: StopReason::MaxTokens,
                ..LlmReply::text("Here is a very long answer that", spend)
            }),
            Script::Bash(commands) if rounds == 0 => {
                Ok(tools("Running it.", commands.iter().enumerate().map(|(i, c)| bash(i, c)).collect()))
            }
            Script::BashThenFail(command) if rounds == 0 => Ok(tools("Running it.", vec![bash(0, command)])),
            Script::BashThenFail(_) => {
                Err(ProviderError::new(ErrorKind::Overloaded { retry_after: None }, "scripted model"))
            }
            Script::Bash(_) => Ok(LlmReply::text(summarize(last_results), spend)),
            Script::Demo => match rounds {
                0 => Ok(tools(
                    "I'll write `add` in src/lib.rs.",
                    vec![call(0, "write_file", json!({ "path": "src/lib.rs", "content": UNFORMATTED_LIB_RS }))],
                )),
                1 => Ok(tools("Now I commit it.", vec![bash(0, COMMIT_COMMAND)])),
                _ => Ok(LlmReply::text(
                    format!("Added `add` to src/lib.rs and committed it. {}", summarize(last_results)),
                    spend,
                )),
            },
        }
    }
}

impl Llm for ScriptedLlm {
    fn reply(&self, conversation: Vec<Message>) -> BoxFuture<'static, Result<LlmReply, ProviderError>> {
        let reply = self.reply_to(&conversation);
        let delay = self.delay;
        async move {
            tokio::time::sleep(delay).await;
            reply
        }
        .boxed()
    }
}

/// Whether the user message at `index` is a tool round's note: it follows
/// a tool result and opens with one of the note's headings.
fn is_round_note(conversation: &[Message], index: usize) -> bool {
    let after_results =
        index.checked_sub(1).and_then(|i| conversation.get(i)).is_some_and(|m| matches!(m, Message::Tool(_)));
    let opens_note = matches!(conversation.get(index), Some(Message::User { content })
        if content.starts_with(NOTES_HEADING) || content.starts_with(USER_MESSAGES_HEADING));
    after_results && opens_note
}

/// The last tool round of `turn`: its results in call order and its note.
fn last_round(turn: &[Message]) -> Option<(Vec<&ToolResult>, Option<&str>)> {
    let last_tool = turn.iter().rposition(|m| matches!(m, Message::Tool(_)))?;
    let note = match turn.get(last_tool + 1) {
        Some(Message::User { content }) => Some(content.as_str()),
        _ => None,
    };
    let results = turn[..=last_tool]
        .iter()
        .rev()
        .map_while(|m| match m {
            Message::Tool(result) => Some(result),
            _ => None,
        })
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    Some((results, note))
}

/// The scripted model's words about a tool round: each result, then the
/// round's note, its lines joined.
fn summarize(round: Option<(Vec<&ToolResult>, Option<&str>)>) -> String {
    let Some((results, note)) = round else {
        return "Nothing ran.".to_owned();
    };
    let described: Vec<String> = results
        .iter()
        .map(|r| {
            let status = if r.is_error { "failed" } else { "ok" };
            match r.content.trim() {
                "" => format!("{} {status}", r.call_id),
                output => format!("{} {status}: {output}", r.call_id),
            }
        })
        .collect();
    let mut text = format!("Tool results: {}.", described.join("; "));
    if let Some(note) = note {
        let lines: Vec<&str> = note.lines().filter(|l| !l.trim().is_empty()).collect();
        let _ = write!(text, " Read: {}.", lines.join(" / "));
    }
    text
}
