//! The model side of the agent: the [`Llm`] trait and [`ScriptedLlm`], a
//! deterministic stand-in, with the demo session's fixed inputs.

use crate::sketch::{LlmReply, Message, StopReason, ToolCall, Usage};
use futures::future::{BoxFuture, FutureExt};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::time::Duration;

/// A language model: the complete reply to a conversation.
pub trait Llm: Send + Sync + 'static {
    /// The reply to `conversation` (its last message is the one just sent),
    /// or why the call failed.
    fn reply(&self, conversation: Vec<Message>) -> BoxFuture<'static, Result<LlmReply, String>>;
}

/// The file the demo session writes: valid Rust, badly formatted.
pub const UNFORMATTED_LIB_RS: &str = "pub fn add(a:i32,b:i32)->i32{a+b}\n#[cfg(test)]\nmod tests{use super::*;#[test]fn adds(){assert_eq!(add(2,2),4);}}\n";

/// The command the demo session's model runs to commit `src/lib.rs`.
pub const COMMIT_COMMAND: &str = "git add src/lib.rs && git commit -q -m 'Add add()'";

/// The demo session's prompt.
pub const DEMO_PROMPT: &str = "Add an `add` function to src/lib.rs and commit it.";

/// A deterministic model, in the manner of Shelley's `predictable.go`: the
/// user's newest message picks a script, and the tool rounds already in the
/// turn pick the step, so one conversation always gets one reply.
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
    pub usage: Usage,
}

impl Default for ScriptedLlm {
    fn default() -> Self {
        ScriptedLlm { delay: Duration::from_millis(40), usage: Usage { tokens: 1_000, cost_cents: 1 } }
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
    /// A model that answers at once, each reply costing `usage`.
    #[must_use]
    pub fn instant(usage: Usage) -> Self {
        ScriptedLlm { delay: Duration::ZERO, usage }
    }

    /// The reply to `conversation` (see the table on the type).
    ///
    /// # Errors
    /// The scripted failures, and a conversation without a user message.
    pub fn reply_to(&self, conversation: &[Message]) -> Result<LlmReply, String> {
        let usage = self.usage;
        let Some((start, texts)) = conversation.iter().enumerate().rev().find_map(|(i, m)| match m {
            Message::User(texts) => Some((i, texts)),
            _ => None,
        }) else {
            return Err("the conversation has no user message".to_owned());
        };
        let prompt = texts.last().map_or("", String::as_str);
        let turn = conversation.get(start + 1..).unwrap_or_default();
        let rounds = turn.iter().filter(|m| matches!(m, Message::ToolResults { .. })).count();
        let last_results = turn.iter().rev().find(|m| matches!(m, Message::ToolResults { .. }));
        // Call ids unique in the session: the reply's number, the call's.
        let reply_number = conversation.iter().filter(|m| matches!(m, Message::Assistant { .. })).count() + 1;
        let call = |index: usize, name: &str, input: Value| ToolCall {
            id: format!("toolu_{reply_number:02}_{}", index + 1),
            name: name.to_owned(),
            input: input.to_string(),
        };
        let bash = |index: usize, command: &str| call(index, "bash", json!({ "command": command }));
        let tools = |text: &str, calls: Vec<ToolCall>| LlmReply {
            text: text.to_owned(),
            tool_calls: calls,
            stop_reason: StopReason::ToolUse,
            usage,
        };
        match Script::parse(prompt) {
            Script::Say(text) => Ok(LlmReply::text(text, usage)),
            Script::Fail(text) => Err(text.to_owned()),
            Script::MaxTokens => Ok(LlmReply {
                text: "Here is a very long answer that".to_owned(),
                tool_calls: Vec::new(),
                stop_reason: StopReason::MaxTokens,
                usage,
            }),
            Script::Bash(commands) if rounds == 0 => {
                Ok(tools("Running it.", commands.iter().enumerate().map(|(i, c)| bash(i, c)).collect()))
            }
            Script::BashThenFail(command) if rounds == 0 => Ok(tools("Running it.", vec![bash(0, command)])),
            Script::BashThenFail(_) => Err("overloaded (HTTP 529)".to_owned()),
            Script::Bash(_) => Ok(LlmReply::text(summarize(last_results), usage)),
            Script::Demo => match rounds {
                0 => Ok(tools(
                    "I'll write `add` in src/lib.rs.",
                    vec![call(0, "write_file", json!({ "path": "src/lib.rs", "content": UNFORMATTED_LIB_RS }))],
                )),
                1 => Ok(tools("Now I commit it.", vec![bash(0, COMMIT_COMMAND)])),
                _ => Ok(LlmReply::text(
                    format!("Added `add` to src/lib.rs and committed it. {}", summarize(last_results)),
                    usage,
                )),
            },
        }
    }
}

impl Llm for ScriptedLlm {
    fn reply(&self, conversation: Vec<Message>) -> BoxFuture<'static, Result<LlmReply, String>> {
        let reply = self.reply_to(&conversation);
        let delay = self.delay;
        async move {
            tokio::time::sleep(delay).await;
            reply
        }
        .boxed()
    }
}

/// The scripted model's words about a tool-results message.
fn summarize(results: Option<&Message>) -> String {
    let Some(Message::ToolResults { results, notes, user_messages }) = results else {
        return "Nothing ran.".to_owned();
    };
    let described: Vec<String> = results
        .iter()
        .map(|r| {
            let status = if r.is_error { "failed" } else { "ok" };
            match r.output.trim() {
                "" => format!("{} {status}", r.call_id),
                output => format!("{} {status}: {output}", r.call_id),
            }
        })
        .collect();
    let mut text = format!("Tool results: {}.", described.join("; "));
    if !notes.is_empty() {
        let _ = write!(text, " Notes: {}.", notes.join("; "));
    }
    if !user_messages.is_empty() {
        let quoted: Vec<String> = user_messages.iter().map(|m| format!("\"{m}\"")).collect();
        let _ = write!(text, " You also wrote {}: noted.", quoted.join(", "));
    }
    text
}
