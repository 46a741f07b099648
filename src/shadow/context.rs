//! Everything of the Shadow agent outside its states: the conversation
//! (the library's [`Message`]s), the permission rules, the tool calls of
//! the current reply, the streamed reply so far and the model call's
//! retries, with the bookkeeping the table's rows do on them.

use std::collections::{BTreeMap, BTreeSet};

use agent_fsm::llm::{Message, ProviderError, StreamEvent, ToolCall, ToolResult};
use serde::{Deserialize, Serialize};

use super::{INTERRUPTED, NOT_RUN};

/// A permission rule for one tool name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Run without asking.
    Allow,
    /// Never run; the call gets a denied result.
    Deny,
    /// Ask the user each time.
    Ask,
}

/// What the next unanswered call of the turn needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// Run it.
    RunTool,
    /// Ask the user for permission first.
    AskPermission,
    /// It is a question for the user.
    AskUser,
    /// Nothing left to run: send the results to the model.
    CallLlm,
}

/// The tool calls of the current reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// Calls not reached yet, in order.
    pub pending: Vec<ToolCall>,
    /// The call being answered now.
    pub current: Option<ToolCall>,
    /// The answers so far, in call order.
    pub results: Vec<ToolResult>,
}

/// Attempts per model call, the first included, unless set otherwise.
pub const DEFAULT_LLM_ATTEMPTS: u32 = 3;

fn default_llm_attempts() -> u32 {
    DEFAULT_LLM_ATTEMPTS
}

/// Everything outside the states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShadowContext {
    /// This agent's session id; children's ids derive from it.
    pub session_id: String,
    /// Every message, in order: one a provider accepts as it is (a tool
    /// round is the assistant's message, then one tool message per call in
    /// call order; an interrupt is a user message saying [`INTERRUPTED`]).
    pub conversation: Vec<Message>,
    /// Rules by tool name, including answers remembered this session.
    pub permissions: BTreeMap<String, Permission>,
    /// The rule for a tool without one.
    pub default_permission: Permission,
    /// The tool through which the model asks the user questions.
    pub question_tool: String,
    /// Text streamed so far in this call.
    pub partial_text: String,
    /// The tool-call deltas ([`StreamEvent::ToolCallDelta`]) streamed so
    /// far in this call, in arrival order; dropped when the reply
    /// completes, fails or is interrupted.
    pub partial_tool_calls: Vec<StreamEvent>,
    /// The current reply's tool calls.
    pub turn: Turn,
    /// An interrupt waits for the current tool or subagent to finish.
    pub interrupt_requested: bool,
    /// The number of the next permission request or question
    /// (`permission-{n}-{fingerprint}`, `question-{n}-{fingerprint}`, see
    /// [`request_id`](crate::shadow::request_id)): requests are numbered
    /// by the machine, never named after the model's `tool_use_id`s, so a
    /// reply can only ever match its own request. Absent from a snapshot,
    /// it is 0.
    #[serde(default)]
    pub next_request: u64,
    /// Attempts per model call, the first included: a failure a retry can
    /// help ([`ProviderError::is_retryable`]) is retried while fewer
    /// attempts than this have failed. Absent from a snapshot, it is
    /// [`DEFAULT_LLM_ATTEMPTS`].
    #[serde(default = "default_llm_attempts")]
    pub max_llm_attempts: u32,
    /// Failed attempts of the current model call so far (0 outside
    /// `Processing`).
    #[serde(default)]
    pub llm_failures: u32,
    /// A retry of the model call is scheduled and not yet made (only in
    /// `Processing`).
    #[serde(default)]
    pub retry_scheduled: bool,
    /// The session ids of the subagents this agent has spawned. A child's
    /// id is derived from the model's call id, which a model may use again
    /// in a later turn; a second child under a used id would be the first
    /// one, resumed from a checkpoint store with its old answer instead of
    /// given its new task, or, without a store, would take a late reply
    /// to the first one's permission request (both number theirs from 0)
    /// as the answer to its own. Absent from a snapshot, it is empty.
    #[serde(default)]
    pub children: BTreeSet<String>,
}

impl ShadowContext {
    /// A fresh session: every tool asks, questions go through
    /// `AskUserQuestion`, a model call is tried [`DEFAULT_LLM_ATTEMPTS`]
    /// times.
    #[must_use]
    pub fn new(session_id: impl Into<String>) -> Self {
        ShadowContext {
            session_id: session_id.into(),
            conversation: Vec::new(),
            permissions: BTreeMap::new(),
            default_permission: Permission::Ask,
            question_tool: "AskUserQuestion".to_owned(),
            partial_text: String::new(),
            partial_tool_calls: Vec::new(),
            turn: Turn::default(),
            interrupt_requested: false,
            next_request: 0,
            max_llm_attempts: DEFAULT_LLM_ATTEMPTS,
            llm_failures: 0,
            retry_scheduled: false,
            children: BTreeSet::new(),
        }
    }

    /// This context with `rule` for `tool`.
    #[must_use]
    pub fn with_rule(mut self, tool: impl Into<String>, rule: Permission) -> Self {
        self.permissions.insert(tool.into(), rule);
        self
    }

    /// The rule for `tool`.
    #[must_use]
    pub fn permission_for(&self, tool: &str) -> Permission {
        self.permissions.get(tool).copied().unwrap_or(self.default_permission)
    }

    /// What the first of `calls` not answered without running (denied by
    /// a rule, or a request with no id left to ask it by) needs.
    #[must_use]
    pub fn next_step_for(&self, calls: &[ToolCall]) -> NextStep {
        calls.iter().find_map(|call| self.step_for(call)).unwrap_or(NextStep::CallLlm)
    }

    /// What the turn's next unanswered call needs.
    #[must_use]
    pub fn next_step(&self) -> NextStep {
        self.next_step_for(&self.turn.pending)
    }

    /// The session id a child spawned for `tool_use_id` is given first:
    /// `"{session}/{tool_use_id}"`, with a `/` or `%` of the call id
    /// written `%2F` or `%25`: `/` separates the levels of a session id,
    /// and a call id holding one would otherwise name a session of another
    /// level (a grandchild's, `main/a/b` for the call `a/b`).
    #[must_use]
    pub fn child_session_id(&self, tool_use_id: &str) -> String {
        let mut id = String::with_capacity(self.session_id.len() + 1 + tool_use_id.len());
        id.push_str(&self.session_id);
        id.push('/');
        for c in tool_use_id.chars() {
            match c {
                '/' => id.push_str("%2F"),
                '%' => id.push_str("%25"),
                c => id.push(c),
            }
        }
        id
    }

    /// The session id of a new child for `tool_use_id`, recorded in
    /// [`children`](Self::children): [`child_session_id`](Self::child_session_id),
    /// or, if an earlier child has that one (the model used the call id
    /// before), the same with `~{n}` added, the smallest `n` from 2 that
    /// no child has. Never the id of an earlier child.
    pub fn spawn_child(&mut self, tool_use_id: &str) -> String {
        let first = self.child_session_id(tool_use_id);
        let mut id = first.clone();
        let mut n: u64 = 2;
        while self.children.contains(&id) {
            id = format!("{first}~{n}");
            n = n.saturating_add(1);
        }
        self.children.insert(id.clone());
        id
    }

    /// Whether a failed model call is tried again: the error is one a
    /// retry can help and fewer than [`max_llm_attempts`](Self::max_llm_attempts)
    /// attempts will have failed.
    #[must_use]
    pub fn may_retry(&self, error: &ProviderError) -> bool {
        error.is_retryable() && self.llm_failures.saturating_add(1) < self.max_llm_attempts
    }

    /// Starts a turn with the user's `text`; returns the messages the call
    /// adds.
    pub(super) fn begin_turn(&mut self, text: String) -> Vec<Message> {
        self.end_call();
        let message = Message::user(text);
        self.conversation.push(message.clone());
        vec![message]
    }

    /// Drops what the model streamed in this call.
    pub(super) fn drop_partial(&mut self) {
        self.partial_text.clear();
        self.partial_tool_calls.clear();
    }

    /// The model call is over (replied, failed for good, interrupted or
    /// stopped): no partial reply, no retry.
    pub(super) fn end_call(&mut self) {
        self.drop_partial();
        self.llm_failures = 0;
        self.retry_scheduled = false;
    }

    /// A failed attempt that [`may_retry`](Self::may_retry): what it
    /// streamed is dropped (the retry streams it again) and the retry is
    /// scheduled; returns its number (1 for the first retry).
    pub(super) fn schedule_retry(&mut self) -> u32 {
        self.drop_partial();
        self.llm_failures = self.llm_failures.saturating_add(1);
        self.retry_scheduled = true;
        self.llm_failures
    }

    /// Whether retry number `attempt` is the one scheduled.
    #[must_use]
    pub fn retry_due(&self, attempt: u32) -> bool {
        self.retry_scheduled && attempt == self.llm_failures
    }

    /// Records the model's reply.
    pub(super) fn record_reply(&mut self, reply: &agent_fsm::llm::AssistantMessage) {
        self.end_call();
        self.conversation.push(Message::Assistant(reply.clone()));
    }

    /// Records the reply and makes its tool calls the turn.
    pub(super) fn begin_tools(&mut self, reply: agent_fsm::llm::AssistantMessage) {
        self.record_reply(&reply);
        self.turn = Turn { pending: reply.tool_calls, current: None, results: Vec::new() };
    }

    fn answer(&mut self, call_id: String, content: impl Into<String>, is_error: bool) {
        self.turn.results.push(ToolResult { call_id, content: content.into(), is_error });
    }

    /// Moves to the next call a rule does not deny, answering the denied
    /// ones on the way, and makes it current. The rows call this only when
    /// [`next_step`](Self::next_step) found such a call.
    pub(super) fn advance(&mut self) -> ToolCall {
        while !self.turn.pending.is_empty() {
            let call = self.turn.pending.remove(0);
            if self.step_for(&call).is_none() {
                let content = self.not_run_because(&call);
                self.answer(call.id, content, true);
                continue;
            }
            self.turn.current = Some(call.clone());
            return call;
        }
        unreachable!("a row advanced the turn without a call to advance to")
    }

    /// Answers the current call.
    pub(super) fn resolve_current(&mut self, content: String, is_error: bool) {
        if let Some(call) = self.turn.current.take() {
            self.answer(call.id, content, is_error);
        }
    }

    /// Answers the current call with a tool's or child's result.
    pub(super) fn resolve_current_with(&mut self, result: Result<String, String>) {
        match result {
            Ok(output) => self.resolve_current(output, false),
            Err(error) => self.resolve_current(error, true),
        }
    }

    /// Records the turn's results, one tool message per call in call
    /// order; returns them.
    fn record_results(&mut self) -> Vec<Message> {
        let results: Vec<Message> = std::mem::take(&mut self.turn).results.into_iter().map(Message::Tool).collect();
        self.conversation.extend(results.iter().cloned());
        results
    }

    /// Every call answered: records the results; returns the messages the
    /// next model call adds.
    pub(super) fn finish_tools(&mut self) -> Vec<Message> {
        while !self.turn.pending.is_empty() {
            let call = self.turn.pending.remove(0);
            let content = self.not_run_because(&call);
            self.answer(call.id, content, true);
        }
        self.record_results()
    }

    /// Ends the turn early: the current call (if still unanswered) gets
    /// `current`, every pending one `rest`, all as errors.
    pub(super) fn abort_turn(&mut self, current: &str, rest: &str) {
        self.resolve_current(current.to_owned(), true);
        for call in std::mem::take(&mut self.turn.pending) {
            self.answer(call.id, rest, true);
        }
        self.record_results();
        self.interrupt_requested = false;
    }

    /// An interrupt during tools: unanswered calls get [`INTERRUPTED`].
    pub(super) fn interrupt_turn(&mut self) {
        self.abort_turn(INTERRUPTED, INTERRUPTED);
        self.conversation.push(Message::user(INTERRUPTED));
    }

    /// An interrupt during streaming (or a retry's wait): partial text
    /// kept, partial tool calls dropped.
    pub(super) fn interrupt_stream(&mut self) {
        let text = std::mem::take(&mut self.partial_text);
        self.end_call();
        if !text.is_empty() {
            self.conversation.push(Message::assistant(text));
        }
        self.conversation.push(Message::user(INTERRUPTED));
        self.interrupt_requested = false;
    }

    /// A failure ends the turn: the current call gets `message`.
    pub(super) fn fail_turn(&mut self, message: &str) {
        self.abort_turn(message, NOT_RUN);
    }

    /// Shutdown: unanswered calls get [`NOT_RUN`], partial output is
    /// dropped, no retry is made.
    pub(super) fn shut_down(&mut self) {
        self.abort_turn(NOT_RUN, NOT_RUN);
        self.end_call();
    }
}
