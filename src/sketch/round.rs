//! What Sketch's table carries between its states: the model's reply and
//! what it spent against the budget, and a tool round (its calls, results,
//! the commits and formatter notes, and the user message that follows the
//! results).

use agent_fsm::llm::{AssistantMessage, Message, StopReason, ToolCall, ToolResult, Usage};

/// The result every call of a cancelled tool round gets.
pub const CANCELLED_RESULT: &str = "user canceled this tool_use";

/// The result a tool call gets when its round ended before it answered.
pub const NOT_EXECUTED: &str = "not executed; retry possible";

/// A successful result for the call `call_id`.
#[must_use]
pub fn tool_ok(call_id: impl Into<String>, content: impl Into<String>) -> ToolResult {
    ToolResult { call_id: call_id.into(), content: content.into(), is_error: false }
}

/// An error result for the call `call_id` (the model reads it as a failure).
#[must_use]
pub fn tool_error(call_id: impl Into<String>, content: impl Into<String>) -> ToolResult {
    ToolResult { call_id: call_id.into(), content: content.into(), is_error: true }
}

/// What one reply, or the session, spent: the tokens the server reported
/// and the money they cost (the budget limits both; the provider reports
/// no price, so the model side says what a reply cost).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spend {
    /// Tokens read and written.
    pub usage: Usage,
    /// Cost in cents.
    pub cost_cents: u64,
}

impl Spend {
    /// `usage` costing `cost_cents`.
    #[must_use]
    pub fn new(usage: Usage, cost_cents: u64) -> Self {
        Spend { usage, cost_cents }
    }

    /// Tokens, input and output together: what the token budget counts.
    #[must_use]
    pub fn tokens(&self) -> u64 {
        self.usage.total()
    }

    /// Adds `other` (saturating).
    pub fn add(&mut self, other: Spend) {
        self.usage.add(other.usage);
        self.cost_cents = self.cost_cents.saturating_add(other.cost_cents);
    }
}

/// The session's limits; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    /// Tokens allowed (input and output together).
    pub max_tokens: Option<u64>,
    /// Cents allowed.
    pub max_cost_cents: Option<u64>,
}

impl Budget {
    /// Whether `spent` reaches either limit.
    #[must_use]
    pub fn is_exceeded_by(&self, spent: Spend) -> bool {
        self.max_tokens.is_some_and(|max| spent.tokens() >= max)
            || self.max_cost_cents.is_some_and(|max| spent.cost_cents >= max)
    }
}

/// The model's complete reply: what a provider's
/// [`StreamEvent::Completed`](agent_fsm::llm::StreamEvent::Completed)
/// carries, with what it cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmReply {
    /// Its text and the tools it asked for, in order.
    pub message: AssistantMessage,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// What it cost.
    pub spend: Spend,
}

impl LlmReply {
    /// A text answer.
    #[must_use]
    pub fn text(text: impl Into<String>, spend: Spend) -> Self {
        let message = AssistantMessage { text: text.into(), tool_calls: Vec::new(), ..Default::default() };
        LlmReply { message, stop_reason: StopReason::EndTurn, spend }
    }

    /// A request for tools.
    #[must_use]
    pub fn tools(tool_calls: Vec<ToolCall>, spend: Spend) -> Self {
        let message = AssistantMessage { text: String::new(), tool_calls, ..Default::default() };
        LlmReply { message, stop_reason: StopReason::ToolUse, spend }
    }

    /// What makes the reply unusable, if anything: a cut-off, filtered or
    /// unexplained stop, tool use without tools or tools without tool use,
    /// or two calls of one id (results are matched by id, so one result
    /// would answer both). A stop at a stop sequence is an answer, as an
    /// end of turn is.
    #[must_use]
    pub fn problem(&self) -> Option<String> {
        match (&self.stop_reason, self.message.tool_calls.is_empty()) {
            (StopReason::MaxTokens, _) => Some("the reply was cut off at its token limit".to_owned()),
            (StopReason::ContentFilter, _) => Some("the provider withheld or stopped the reply".to_owned()),
            (StopReason::Other(reason), _) => Some(format!("the model stopped for an unknown reason `{reason}`")),
            (StopReason::ToolUse, true) => Some("the model stopped for tool use but asked for no tool".to_owned()),
            (StopReason::EndTurn | StopReason::StopSequence, false) => {
                Some("the model asked for tools but did not stop for tool use".to_owned())
            }
            (StopReason::ToolUse, false) | (StopReason::EndTurn | StopReason::StopSequence, true) => {
                self.repeated_id().map(|id| format!("the model repeated the tool call id `{id}`; no tool ran"))
            }
            (reason, _) => Some(format!("the model stopped for a reason this agent does not handle: {reason:?}")),
        }
    }

    /// The first id two of the reply's calls share.
    fn repeated_id(&self) -> Option<&str> {
        let mut seen = std::collections::BTreeSet::new();
        self.message.tool_calls.iter().map(|c| c.id.as_str()).find(|id| !seen.insert(*id))
    }
}

/// A commit found by the `git` check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// Its hash.
    pub sha: String,
    /// The files it changed.
    pub changed_files: Vec<String>,
}

/// What the formatters did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormatReport {
    /// Files they rewrote.
    pub reformatted: Vec<String>,
    /// Formatters that failed, with why.
    pub failures: Vec<String>,
}

impl FormatReport {
    /// The notes the model gets about this run.
    #[must_use]
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.reformatted.is_empty() {
            notes.push(format!("autoformatters rewrote: {}", self.reformatted.join(", ")));
        }
        notes.extend(self.failures.iter().map(|f| format!("autoformatter failed: {f}")));
        notes
    }
}

/// The heading of a round note's agent notes (see [`round_note`]).
pub const NOTES_HEADING: &str = "Notes from the agent on the tool round:";

/// The heading of a round note's user messages (see [`round_note`]).
pub const USER_MESSAGES_HEADING: &str = "The user wrote while the tools ran:";

/// The text of the user message that follows a round's tool results: the
/// agent's notes (commits, formatters), one a line under
/// [`NOTES_HEADING`], then the messages the user typed during the round,
/// each as typed, separated by blank lines, under
/// [`USER_MESSAGES_HEADING`]. `None` when there is neither.
///
/// Providers take a user message right after tool results: OpenAI as the
/// next message, Anthropic as a text block after the `tool_result` blocks
/// of the same user turn.
#[must_use]
pub fn round_note(notes: &[String], user_messages: &[String]) -> Option<String> {
    let mut parts = Vec::new();
    if !notes.is_empty() {
        let lines: Vec<String> = notes.iter().map(|n| format!("- {n}")).collect();
        parts.push(format!("{NOTES_HEADING}\n{}", lines.join("\n")));
    }
    if !user_messages.is_empty() {
        parts.push(format!("{USER_MESSAGES_HEADING}\n{}", user_messages.join("\n\n")));
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// One tool round: the calls, the results so far and the notes to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRound {
    /// The calls, in the order the model asked.
    pub calls: Vec<ToolCall>,
    /// The results received so far, in arrival order.
    pub results: Vec<ToolResult>,
    /// Notes for the model (commits, formatters).
    pub notes: Vec<String>,
}

impl ToolRound {
    /// A round with no result yet.
    #[must_use]
    pub fn new(calls: Vec<ToolCall>) -> Self {
        ToolRound { calls, results: Vec::new(), notes: Vec::new() }
    }

    /// Whether `call_id` is a call of this round without a result.
    #[must_use]
    pub fn is_pending(&self, call_id: &str) -> bool {
        self.calls.iter().any(|c| c.id == call_id) && !self.results.iter().any(|r| r.call_id == call_id)
    }

    /// How many calls have no result yet.
    #[must_use]
    pub fn pending_count(&self) -> usize {
        self.calls.iter().filter(|c| !self.results.iter().any(|r| r.call_id == c.id)).count()
    }

    /// Records one result (the table checks it is pending first).
    pub fn record(&mut self, result: ToolResult) {
        self.results.push(result);
    }

    /// The round's messages: one [`Message::Tool`] per call in call order
    /// (a [`NOT_EXECUTED`] error for a call that never answered), then, if
    /// there are notes or `user_messages`, one [`Message::User`] with their
    /// [`round_note`].
    #[must_use]
    pub fn into_messages(self, user_messages: &[String]) -> Vec<Message> {
        let ToolRound { calls, mut results, notes } = self;
        let mut messages: Vec<Message> = calls
            .iter()
            .map(|c| match results.iter().position(|r| r.call_id == c.id) {
                Some(i) => Message::Tool(results.swap_remove(i)),
                None => Message::Tool(tool_error(c.id.clone(), NOT_EXECUTED)),
            })
            .collect();
        messages.extend(round_note(&notes, user_messages).map(Message::user));
        messages
    }
}

/// The messages every call of a cancelled round gets, in call order.
#[must_use]
pub fn cancelled_results(calls: &[ToolCall]) -> Vec<Message> {
    calls.iter().map(|c| Message::Tool(tool_error(c.id.clone(), CANCELLED_RESULT))).collect()
}

/// The files changed by `commits`, each once, in first-seen order.
#[must_use]
pub fn changed_files(commits: &[Commit]) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for file in commits.iter().flat_map(|c| &c.changed_files) {
        if !files.contains(file) {
            files.push(file.clone());
        }
    }
    files
}
