//! The Shadow agent's model: the [`Llm`] seam (a conversation in, a
//! provider's stream out) and [`ScriptedLlm`], a deterministic stand-in
//! that reads the conversation to pick its reply, with the workspace its
//! scripts expect.

use std::path::Path;
use std::time::Duration;

use agent_fsm::llm::{AssistantMessage, ErrorKind, Message, ProviderError, StopReason, StreamEvent, ToolResult, Usage};
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{Value, json};

use super::SUBAGENT_TOOL;
use crate::shadow::ToolCall;

/// A language model that streams its reply, as the library's providers
/// do: any [`agent_fsm::llm::Provider`] is one once the conversation is
/// put in a [`Request`](agent_fsm::llm::Request) with the model's name and
/// tools.
pub trait Llm: Send + Sync + 'static {
    /// The reply to `conversation` (every message so far, the newest
    /// last): deltas, then one [`StreamEvent::Completed`], or a
    /// [`ProviderError`] as the last item. A stream that ends without
    /// either is read as a dropped connection.
    fn stream(&self, conversation: &[Message]) -> BoxStream<'static, Result<StreamEvent, ProviderError>>;
}

/// A deterministic model for sessions with no setup and no network.
///
/// It reads the conversation: the last user message picks a script, and
/// the number of tool-result messages since then is the step in it. Tool
/// calls get ids `toolu_1`, `toolu_2`, ... counted over the whole
/// conversation, so the same conversation always gets the same reply.
#[derive(Debug, Clone)]
pub struct ScriptedLlm {
    /// Pause before each streamed chunk, to look like a real model.
    pub delay: Duration,
}

impl Default for ScriptedLlm {
    fn default() -> Self {
        ScriptedLlm { delay: Duration::from_millis(10) }
    }
}

/// The text the scripted model streams for a "story" (long enough to be
/// interrupted halfway).
pub const STORY: &str = "Once upon a time a small agent waited in its idle state until a user typed \
                         something, and then it streamed a long and careful answer word by word.";

/// The current turn of a conversation, as the scripted model reads it.
struct TurnView<'a> {
    words: Vec<String>,
    prompt: &'a str,
    /// The tool results of each round since the prompt.
    rounds: Vec<Vec<&'a ToolResult>>,
    /// Tool calls in the whole conversation so far.
    calls_before: usize,
}

impl<'a> TurnView<'a> {
    fn of(conversation: &'a [Message]) -> Self {
        let start = conversation.iter().rposition(|m| matches!(m, Message::User { .. }));
        let prompt = match start.map(|i| &conversation[i]) {
            Some(Message::User { content }) => content.as_str(),
            _ => "",
        };
        let tail = start.map_or(&conversation[..0], |i| &conversation[i + 1..]);
        // A round is the tool messages after one assistant message.
        let mut rounds: Vec<Vec<&ToolResult>> = Vec::new();
        for message in tail {
            match message {
                Message::Assistant(reply) if !reply.tool_calls.is_empty() => rounds.push(Vec::new()),
                Message::Tool(result) => {
                    if let Some(round) = rounds.last_mut() {
                        round.push(result);
                    }
                }
                _ => {}
            }
        }
        rounds.retain(|round| !round.is_empty());
        let calls_before = conversation
            .iter()
            .map(|m| match m {
                Message::Assistant(reply) => reply.tool_calls.len(),
                _ => 0,
            })
            .sum();
        let words =
            prompt.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
        TurnView { words, prompt, rounds, calls_before }
    }

    fn has(&self, word: &str) -> bool {
        self.words.iter().any(|w| w == word)
    }

    fn step(&self) -> usize {
        self.rounds.len()
    }

    /// The first result of `round`.
    fn result(&self, round: usize) -> Option<&'a ToolResult> {
        self.rounds.get(round).and_then(|results| results.first().copied())
    }

    /// The first result's text of `round`, trimmed.
    fn text(&self, round: usize) -> String {
        self.result(round).map(|r| r.content.trim().to_owned()).unwrap_or_default()
    }

    /// The reply with `text` and calls `(name, input)`, numbered on from
    /// the calls so far.
    fn reply(&self, text: &str, calls: Vec<(&str, Value)>) -> AssistantMessage {
        let tool_calls = calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, input))| ToolCall {
                id: format!("toolu_{}", self.calls_before + i + 1),
                name: name.to_owned(),
                arguments: input,
            })
            .collect();
        AssistantMessage { text: text.to_owned(), tool_calls, ..Default::default() }
    }

    /// The first word of the prompt that names a `.md` or `.txt` file.
    fn file(&self) -> Option<&'a str> {
        self.prompt
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| !(c.is_alphanumeric() || "._-/".contains(c))))
            .map(|w| w.trim_end_matches('.'))
            .find(|w| w.ends_with(".md") || w.ends_with(".txt"))
    }
}

impl ScriptedLlm {
    /// The reply to a conversation, or why the call fails.
    ///
    /// The scripts, by the first matching word of the last user message:
    /// - `release`: writes `NOTES.md` (asks for permission), reads
    ///   `CHANGELOG.md`, delegates a summary to a subagent, asks the user
    ///   for the version, writes the notes again, counts their lines with
    ///   `run_command`, and reports;
    /// - `delegate`: one subagent call (`Summarise CHANGELOG.md`, or
    ///   `Attempt the impossible` if the prompt says `impossible`), then
    ///   the child's answer;
    /// - `impossible`: the model fails;
    /// - `summarise`: reads the named file (`CHANGELOG.md` by default) and
    ///   summarises it;
    /// - `compare`: reads `a.txt`, then `b.txt`, one call per reply;
    /// - `write`: writes `hello.txt`;
    /// - `ask`: asks the user which colour to use;
    /// - `story`: a long text reply ([`STORY`]);
    /// - `sleep`: runs a command that sleeps half a second, with a
    ///   `write_file` call after it in the same reply;
    /// - anything else: a short greeting.
    ///
    /// # Errors
    /// The `impossible` script's failure: the model is overloaded, a
    /// failure a retry can help, and every retry fails the same way.
    pub fn reply(conversation: &[Message]) -> Result<AssistantMessage, ProviderError> {
        let turn = TurnView::of(conversation);
        let step = turn.step();
        let reply = if turn.has("release") {
            release_script(&turn)
        } else if turn.has("delegate") {
            let prompt = if turn.has("impossible") { "Attempt the impossible" } else { "Summarise CHANGELOG.md" };
            match step {
                0 => turn.reply("A helper will handle this.", vec![(SUBAGENT_TOOL, json!({ "prompt": prompt }))]),
                _ => turn.reply(&format!("The helper says: {}", turn.text(0)), Vec::new()),
            }
        } else if turn.has("impossible") {
            return Err(
                ProviderError::new(ErrorKind::Overloaded { retry_after: None }, "scripted model").with_status(529)
            );
        } else if turn.has("summarise") {
            summarise_script(&turn)
        } else if turn.has("compare") {
            match step {
                0 => turn.reply("First a.txt.", vec![("read_file", json!({ "path": "a.txt" }))]),
                1 => turn.reply("Then b.txt.", vec![("read_file", json!({ "path": "b.txt" }))]),
                _ => {
                    turn.reply(&format!("a.txt says {:?} and b.txt says {:?}.", turn.text(0), turn.text(1)), Vec::new())
                }
            }
        } else if turn.has("write") {
            match (step, turn.result(0)) {
                (0, _) => turn.reply(
                    "Writing hello.txt.",
                    vec![("write_file", json!({ "path": "hello.txt", "content": "hello from Shadow\n" }))],
                ),
                (_, Some(result)) if result.is_error => {
                    turn.reply(&format!("Could not write hello.txt: {}", result.content), Vec::new())
                }
                _ => turn.reply("Wrote hello.txt.", Vec::new()),
            }
        } else if turn.has("ask") {
            match step {
                0 => turn.reply(
                    "One question first.",
                    vec![("AskUserQuestion", json!({ "questions": ["Which colour should the button be?"] }))],
                ),
                _ => turn.reply(&format!("Painting the button {}.", turn.text(0)), Vec::new()),
            }
        } else if turn.has("story") {
            turn.reply(STORY, Vec::new())
        } else if turn.has("sleep") {
            match step {
                0 => turn.reply(
                    "Running a slow command.",
                    vec![
                        ("run_command", json!({ "command": "sleep 0.5; echo slept > slept.txt; echo slept" })),
                        ("write_file", json!({ "path": "after.txt", "content": "after\n" })),
                    ],
                ),
                _ => turn.reply("Done sleeping.", Vec::new()),
            }
        } else {
            turn.reply("Hello! I can write, compare, delegate, ask and run things.", Vec::new())
        };
        Ok(reply)
    }
}

fn release_script(turn: &TurnView<'_>) -> AssistantMessage {
    let (summary, version) = (turn.text(2), turn.text(3));
    match turn.step() {
        0 => turn.reply(
            "I'll start the release notes.",
            vec![("write_file", json!({ "path": "NOTES.md", "content": "# Release notes\n" }))],
        ),
        1 => turn.reply("Now the changelog.", vec![("read_file", json!({ "path": "CHANGELOG.md" }))]),
        2 => turn
            .reply("A helper will summarise it.", vec![(SUBAGENT_TOOL, json!({ "prompt": "Summarise CHANGELOG.md" }))]),
        3 => turn.reply(
            "One question before I write it up.",
            vec![("AskUserQuestion", json!({ "questions": ["Which version is this release?"] }))],
        ),
        4 => turn.reply(
            "Writing the notes.",
            vec![(
                "write_file",
                json!({ "path": "NOTES.md", "content": format!("# Release notes for {version}\n\n{summary}\n") }),
            )],
        ),
        5 => turn.reply("Checking the file.", vec![("run_command", json!({ "command": "wc -l < NOTES.md" }))]),
        _ => turn.reply(&format!("Release notes for {version} are in NOTES.md ({} lines).", turn.text(5)), Vec::new()),
    }
}

fn summarise_script(turn: &TurnView<'_>) -> AssistantMessage {
    let file = turn.file().unwrap_or("CHANGELOG.md");
    match (turn.step(), turn.result(0)) {
        (0, _) => turn.reply(&format!("Reading {file}."), vec![("read_file", json!({ "path": file }))]),
        (_, Some(result)) if result.is_error => {
            turn.reply(&format!("Could not read {file}: {}", result.content), Vec::new())
        }
        _ => {
            let content = turn.text(0);
            let entries: Vec<&str> = content.lines().filter_map(|l| l.strip_prefix("- ")).collect();
            let text = match entries.first() {
                Some(latest) => format!("{file} lists {} changes, the latest: {latest}.", entries.len()),
                None => format!("{file} has {} lines.", content.lines().count()),
            };
            turn.reply(&text, Vec::new())
        }
    }
}

/// The chunks of a reply as a provider streams them: its words, one
/// tool-call delta per call, then the completed reply.
fn chunks(reply: AssistantMessage) -> Vec<Result<StreamEvent, ProviderError>> {
    let mut events: Vec<StreamEvent> =
        reply.text.split_inclusive(' ').map(|word| StreamEvent::TextDelta(word.to_owned())).collect();
    for (index, call) in reply.tool_calls.iter().enumerate() {
        events.push(StreamEvent::ToolCallDelta {
            index,
            id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments_fragment: call.arguments.to_string(),
        });
    }
    let stop_reason = if reply.tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
    events.push(StreamEvent::Completed { message: reply, stop_reason, usage: Usage::default() });
    events.into_iter().map(Ok).collect()
}

impl Llm for ScriptedLlm {
    fn stream(&self, conversation: &[Message]) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let events = match Self::reply(conversation) {
            Ok(reply) => chunks(reply),
            Err(error) => vec![Err(error)],
        };
        let delay = self.delay;
        stream::iter(events)
            .then(move |event| async move {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                event
            })
            .boxed()
    }
}

/// The changelog of the scripted sessions' workspace.
pub const CHANGELOG: &str = "# Changelog\n\n- Subagents run as child machines\n- Permission replies are matched by \
                             request id\n- Input typed mid-turn is kept\n";

/// Lays out the scripted sessions' workspace in `root`: `CHANGELOG.md`,
/// `a.txt` and `b.txt`.
///
/// # Errors
/// Any I/O error writing the files.
pub fn prepare_workspace(root: &Path) -> std::io::Result<()> {
    std::fs::write(root.join("CHANGELOG.md"), CHANGELOG)?;
    std::fs::write(root.join("a.txt"), "alpha\n")?;
    std::fs::write(root.join("b.txt"), "beta\n")
}
