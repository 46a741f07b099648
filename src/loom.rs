//! The Loom agent machine as one table.
//!
//! Seven states, the reference's seven events plus one (`Interrupted`), its
//! actions plus one (`ScheduleRetry`), and every row of the reference
//! transition table. The
//! machine is pure: it decides, and whoever performs the actions (the
//! executor, or a test) does the I/O and feeds the results back as events.
//!
//! # Choices where the reference is silent or ambiguous
//! - **`max_retries` counts attempts**, the first one included: with the
//!   default 3, an LLM request is tried at most three times. The guard is
//!   `retries + 1 < max_retries` (saturating), where `retries` is the number
//!   of failed attempts so far.
//! - **The retry timer is asked for, not implied.** The reference answers an
//!   LLM error with `WaitForInput` and leaves the backoff timer to a driver
//!   it never wrote, so its `RetryTimeoutFired` row is dead. Here the row
//!   returns [`AgentAction::ScheduleRetry`] with the attempt number, and the
//!   executor turns it into `RetryTimeoutFired` after the retry policy's
//!   backoff.
//! - **Tool calls are tracked by call id**: `Pending` -> `Running` (on
//!   `ToolProgress`) -> `Completed`. A result or progress report for an id
//!   that is not pending is reported with `DisplayError`, never dropped in
//!   silence, and leaves the executions as they were.
//! - **Call ids are distinct.** Results are matched by id, so a reply whose
//!   tool calls repeat an id is refused on arrival (`DisplayError`, back to
//!   `WaitingForUserInput`, the reply not recorded) and runs nothing.
//! - **Tool results join the conversation in call order**, whatever order
//!   they completed in, once every call is done.
//! - **The conversation is carried by every state but `ShuttingDown` and is
//!   moved, never cloned**, from state to state. Its messages sit behind an
//!   `Arc`, so an [`LlmRequest`] shares them instead of copying them.
//! - **An interrupt row.** The reference has no way to stop a turn; the
//!   executor's interrupt protocol cancels the stream and every pending
//!   tool call (each gets a "cancelled" result, which the table records in
//!   call order as usual) and then delivers [`AgentEvent::Interrupted`],
//!   which returns to `WaitingForUserInput` from any state. Should it
//!   find calls of a round still without results (a driver that delivers
//!   it first, a tool task left to finish through interrupts), each gets
//!   an "interrupted" error result and the round's results are recorded:
//!   the conversation never keeps a call without its result, which both
//!   providers refuse in every later request. Text streamed
//!   before the interrupt has already been displayed; the reference does
//!   not accumulate it in the state, and neither does this table.
//! - **No limit on tool rounds.** A turn goes on while the model's replies
//!   ask for tools, as in the reference: a model that never stops calling
//!   them runs until the user interrupts the turn or shuts the agent down.
//!   Sketch (its budget) and bob's runner (`max_steps`) are the agents
//!   with a limit.
//! - **No clocks or random ids inside transitions**, so the same events give
//!   the same actions (replay). Timing comes from the runtime's history.
//! - **Transitions are reported, not logged, by the machine.** The reference
//!   logs each transition at `info`; here the pure step reports every hop to
//!   its observer (free when there is none) and the executor logs each one
//!   in a `tracing` span, so `handle_event` stays as cheap as a hand-written
//!   `match`. The machine itself logs only what goes wrong.

use std::sync::Arc;

pub use executions::{CompletedToolInfo, Executions, ToolExecutionStatus};
pub use machine::{AgentAction, AgentEvent, AgentState, Loom};

mod executions;

/// The conversation, the model's reply and its streamed events are the
/// library's provider-neutral types, so any [`agent_fsm::llm::Provider`]
/// drives this machine unchanged.
pub use agent_fsm::llm::{AssistantMessage, Message, ProviderError, StreamEvent, ToolCall};

/// The conversation every state carries.
///
/// Messages are shared behind an `Arc`: an [`LlmRequest`] holds the same
/// list, and appending copies it only if a request is still alive at that
/// moment (copy on write), never per event.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConversationContext {
    messages: Arc<Vec<Message>>,
}

impl ConversationContext {
    /// A conversation holding `messages`.
    #[must_use]
    pub fn from_messages(messages: Vec<Message>) -> Self {
        ConversationContext { messages: Arc::new(messages) }
    }

    /// Appends one message.
    pub fn push(&mut self, message: Message) {
        Arc::make_mut(&mut self.messages).push(message);
    }

    /// The messages so far.
    #[must_use]
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// How many messages.
    #[must_use]
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The messages, shared without copying.
    #[must_use]
    pub fn shared(&self) -> Arc<Vec<Message>> {
        Arc::clone(&self.messages)
    }
}

/// A tool's failure.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolError {
    /// What went wrong.
    pub message: String,
}

/// How one tool call ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ToolExecutionOutcome {
    /// The tool returned a value.
    Success {
        /// The call it answers.
        call_id: String,
        /// The tool's output.
        output: serde_json::Value,
    },
    /// The tool failed, panicked, timed out or was cancelled.
    Error {
        /// The call it answers.
        call_id: String,
        /// Why.
        error: ToolError,
    },
}

impl ToolExecutionOutcome {
    /// Whether the tool succeeded.
    #[must_use]
    pub fn is_success(&self) -> bool {
        matches!(self, ToolExecutionOutcome::Success { .. })
    }

    /// The text a tool-result message carries.
    #[must_use]
    pub fn to_message_text(&self) -> String {
        match self {
            ToolExecutionOutcome::Success { output, .. } => match output {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            },
            ToolExecutionOutcome::Error { error, .. } => format!("error: {}", error.message),
        }
    }
}

/// Progress a running tool reports.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolProgress {
    /// Share done, 0.0 to 1.0, if the tool knows it.
    pub fraction: Option<f32>,
    /// A line for the user.
    pub message: Option<String>,
}

/// A progress report for one call.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolProgressEvent {
    /// The call it is about.
    pub call_id: String,
    /// The progress.
    pub progress: ToolProgress,
}

/// A request to the model: the conversation so far (shared, not copied).
///
/// The machine's own, not [`agent_fsm::llm::Request`]: the model's name and
/// the tool definitions are the effects' configuration, while the attempt
/// number is the machine's; [`LlmRequest::to_request`] joins the two.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LlmRequest {
    /// The messages to send.
    pub messages: Arc<Vec<Message>>,
    /// The reply's token budget.
    pub max_tokens: u32,
    /// 0 for the first try, n for the n-th retry.
    pub attempt: u32,
}

impl LlmRequest {
    /// The provider request for `model` offering `tools`.
    #[must_use]
    pub fn to_request(&self, model: &str, tools: &[agent_fsm::llm::ToolDefinition]) -> agent_fsm::llm::Request {
        let mut request =
            agent_fsm::llm::Request::new(model).messages(Arc::clone(&self.messages)).max_tokens(self.max_tokens);
        request.tools = tools.to_vec();
        request
    }
}

/// Why the machine is in `Error`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AgentError {
    /// The model call failed.
    Llm(ProviderError),
}

/// What failed, which decides how the machine recovers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ErrorOrigin {
    /// A model call: retried after a backoff.
    Llm,
    /// A tool.
    Tool,
    /// Local I/O.
    Io,
}

/// Configuration the rows read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AgentConfig {
    /// Attempts per LLM request, the first included (see the module docs).
    pub max_retries: u32,
    /// Token budget per reply.
    pub max_tokens: u32,
    /// Tools that can change the workspace: their success triggers the
    /// post-tool hook. By default the edits and the shell, under the names
    /// of `agent_fsm::tools` (`write_file`, `edit_file`, `run_command`) and
    /// `bash`.
    pub mutating_tools: Vec<String>,
    /// Tools that only read: [`crate::loom_with_permission`] runs them
    /// without asking and asks before any other, so that a tool added
    /// later (an MCP server's, one of your own, one the model names wrong)
    /// waits for the user until it is listed here. By default the reading
    /// tools of `agent_fsm::tools` (`read_file`, `list_files`). Missing
    /// from a snapshot taken before it existed, it is that default.
    #[serde(default = "default_read_only_tools")]
    pub read_only_tools: Vec<String>,
}

/// [`AgentConfig::read_only_tools`]' default.
fn default_read_only_tools() -> Vec<String> {
    ["read_file", "list_files"].map(str::to_owned).to_vec()
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_retries: 3,
            max_tokens: 4096,
            mutating_tools: ["edit_file", "write_file", "run_command", "bash"].map(str::to_owned).to_vec(),
            read_only_tools: default_read_only_tools(),
        }
    }
}

impl AgentConfig {
    /// A request for the conversation as it is now.
    #[must_use]
    pub fn request(&self, conversation: &ConversationContext, attempt: u32) -> LlmRequest {
        LlmRequest { messages: conversation.shared(), max_tokens: self.max_tokens, attempt }
    }
}

/// The first id two of `calls` share.
///
/// A reply holds a handful of calls, so each is compared with those before
/// it, without allocating (this runs on every completed reply); a reply
/// with more calls than that is checked through a sorted list.
#[must_use]
pub fn repeated_id(calls: &[ToolCall]) -> Option<&str> {
    const SCAN_UP_TO: usize = 16;
    if calls.len() <= SCAN_UP_TO {
        return calls
            .iter()
            .enumerate()
            .find(|(i, c)| calls[..*i].iter().any(|d| d.id == c.id))
            .map(|(_, c)| c.id.as_str());
    }
    let mut ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    ids.sort_unstable();
    let repeated: Vec<&str> = ids.windows(2).filter(|w| w[0] == w[1]).map(|w| w[0]).collect();
    calls.iter().map(|c| c.id.as_str()).find(|id| repeated.contains(id))
}

/// The machine: types above, table below.
#[agent_fsm::state_machine(fallback = WaitForInput, name = Loom, export = loom_machine, serde)]
pub mod machine {
    use super::*;

    /// The context rows read as `ctx`: the agent's configuration. (Named
    /// from the crate's root, as a variant in another crate reaches it
    /// too: `tests/cross-crate`.)
    #[context]
    pub type Context = crate::loom::AgentConfig;

    /// Where the agent is.
    #[states]
    #[carry(conversation: ConversationContext)]
    #[derive(Debug, Clone, PartialEq)]
    pub enum AgentState {
        /// Idle between turns.
        #[initial]
        WaitingForUserInput,
        /// A model call is in flight; `retries` failed attempts so far.
        CallingLlm {
            /// Failed attempts of the current request so far.
            retries: u32,
        },
        /// Looks at a complete response and decides: tools or done.
        #[transient]
        ProcessingLlmResponse {
            /// The response being examined.
            response: AssistantMessage,
        },
        /// Tool calls of one round, tracked by call id.
        ExecutingTools {
            /// Every call of this round, by call id.
            executions: Executions,
        },
        /// After a mutating tool: the hook (auto-commit, formatting) runs
        /// before the next model call.
        PostToolsHook {
            /// The model call to make once the hook is done.
            pending_llm_request: LlmRequest,
            /// What the hook decides on.
            completed_tools: Vec<CompletedToolInfo>,
        },
        /// A failed call waiting for its retry timer.
        Error {
            /// What failed.
            error: AgentError,
            /// Failed attempts so far.
            retries: u32,
            /// Where it failed, which decides the recovery.
            origin: ErrorOrigin,
        },
        /// The end.
        #[terminal]
        #[no_carry]
        ShuttingDown,
    }

    /// What happens to the agent.
    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum AgentEvent {
        /// The user said something.
        UserInput(Message),
        /// The model streamed something.
        LlmEvent(StreamEvent),
        /// The model call failed; the error says whether a retry can help.
        LlmFailed(ProviderError),
        /// A tool reported progress.
        ToolProgress(ToolProgressEvent),
        /// A tool finished.
        ToolCompleted {
            /// The call.
            call_id: String,
            /// How it ended.
            outcome: ToolExecutionOutcome,
        },
        /// The post-tool hook finished.
        PostToolsHookCompleted {
            /// Whether the hook changed anything.
            action_taken: bool,
        },
        /// The retry backoff elapsed.
        RetryTimeoutFired,
        /// Stop, from wherever the agent is.
        ShutdownRequested,
        /// The user interrupted the turn (the executor's interrupt event).
        Interrupted {
            /// Why, as given to the handle.
            cause: String,
        },
    }

    /// What the caller must do next.
    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum AgentAction {
        /// Call the model.
        SendLlmRequest(LlmRequest),
        /// Run these tools, concurrently.
        ExecuteTools(Vec<ToolCall>),
        /// Run the post-tool hook.
        RunPostToolsHook {
            /// What completed.
            completed_tools: Vec<CompletedToolInfo>,
        },
        /// Nothing to do; wait for the next event.
        WaitForInput,
        /// Show text to the user.
        DisplayMessage(String),
        /// Show an error to the user.
        DisplayError(String),
        /// Fire `RetryTimeoutFired` after the backoff for this attempt
        /// (`RetryPolicy::delay_for(attempt, retry_after)`).
        ScheduleRetry {
            /// The attempt about to be made (1 for the first retry).
            attempt: u32,
            /// The wait the server asked for, if it gave one.
            retry_after: Option<std::time::Duration>,
        },
        /// Stop.
        Shutdown,
    }

    transitions! {
        /// A turn starts: the message joins the conversation and goes to the model.
        WaitingForUserInput + UserInput(msg)
            => { conversation.push(msg); } CallingLlm { retries: 0 } / SendLlmRequest(ctx.request(&conversation, 0)),
        CallingLlm + LlmEvent(StreamEvent::TextDelta(content)) => CallingLlm / DisplayMessage(content),
        CallingLlm + LlmEvent(StreamEvent::ToolCallDelta { .. }) => CallingLlm / WaitForInput,
        /// A reasoning model's thoughts as they stream (a provider sends
        /// them unasked): expected, not shown; the whole reply comes with
        /// `Completed`.
        CallingLlm + LlmEvent(StreamEvent::ReasoningDelta(_)) => CallingLlm / WaitForInput,
        /// Calls are told apart by id: a reply that repeats one runs
        /// nothing and is not recorded.
        CallingLlm + LlmEvent(StreamEvent::Completed { message, .. }) [let Some(id) = repeated_id(&message.tool_calls)]
            => WaitingForUserInput / DisplayError(format!("the model repeated the tool call id `{id}`; no tool ran")),
        CallingLlm + LlmEvent(StreamEvent::Completed { message, .. })
            => { conversation.push(Message::Assistant(message.clone())); }
               ProcessingLlmResponse { response: message },
        /// Only an error a retry can help (rate limit, overload, a dropped
        /// connection) is retried, after the server's `retry-after` if it
        /// gave one.
        CallingLlm { retries } + LlmFailed(error)
            [error.is_retryable() && retries.saturating_add(1) < ctx.max_retries]
            => { let retry_after = error.retry_after(); }
               Error { error: AgentError::Llm(error), retries: retries.saturating_add(1), origin: ErrorOrigin::Llm }
               / ScheduleRetry { attempt: retries.saturating_add(1), retry_after },
        CallingLlm + LlmFailed(error) => WaitingForUserInput / DisplayError(format!("llm call failed: {error}")),

        ProcessingLlmResponse { response } [!response.tool_calls.is_empty()]
            => { let executions = Executions::pending(&response.tool_calls); }
               ExecutingTools { executions } / ExecuteTools(response.tool_calls),
        ProcessingLlmResponse => WaitingForUserInput / WaitForInput,

        /// A result for a pending call: the guard finds the call once and
        /// hands its position to the row. The count goes first: the last
        /// result of a round fails it at once, and only the row that takes
        /// that result looks for the call.
        ExecutingTools { executions } + ToolCompleted { call_id, outcome }
            [executions.pending_count() > 1 && let Some(at) = executions.pending_at(call_id)]
            => { executions.complete_at(at, outcome); } ExecutingTools / WaitForInput,
        ExecutingTools { mut executions } + ToolCompleted { call_id, outcome }
            [let Some(at) = executions.pending_at(call_id) && executions.mutates_at(at, outcome, &ctx.mutating_tools)]
            => {
                   executions.complete_at(at, outcome);
                   let completed_tools = executions.record_results(&mut conversation);
               }
               PostToolsHook { pending_llm_request: ctx.request(&conversation, 0), completed_tools }
               / RunPostToolsHook { completed_tools: completed_tools.clone() },
        ExecutingTools { mut executions } + ToolCompleted { call_id, outcome } [let Some(at) = executions.pending_at(call_id)]
            => { executions.complete_at(at, outcome); executions.record_results(&mut conversation); }
               CallingLlm { retries: 0 } / SendLlmRequest(ctx.request(&conversation, 0)),
        /// A result for a call that is not pending is reported, not applied.
        ExecutingTools + ToolCompleted { call_id, .. }
            => ExecutingTools / DisplayError(format!("tool result for unknown or finished call `{call_id}`")),
        ExecutingTools { executions } + ToolProgress(report) [let Some(at) = executions.pending_at(&report.call_id)]
            => { executions.progress_at(at, report.progress); } ExecutingTools / WaitForInput,
        ExecutingTools + ToolProgress(report)
            => ExecutingTools / DisplayError(format!("progress for unknown or finished call `{}`", report.call_id)),

        PostToolsHook { pending_llm_request } + PostToolsHookCompleted { .. }
            => CallingLlm { retries: 0 } / SendLlmRequest(pending_llm_request),
        Error { retries, origin: ErrorOrigin::Llm } + RetryTimeoutFired
            => CallingLlm { retries } / SendLlmRequest(ctx.request(&conversation, retries)),

        /// An interrupt while calls still lack results (a driver that does
        /// not answer them first, a tool left to finish through it): each
        /// gets an "interrupted" error and the round's results are
        /// recorded, so the conversation keeps no call without its result.
        ExecutingTools { mut executions } + Interrupted { cause }
            => { executions.interrupt_pending(&cause); executions.record_results(&mut conversation); }
               WaitingForUserInput / DisplayError(format!("interrupted: {cause}")),
        /// Shutdown works from every state, `ShuttingDown` included.
        * + ShutdownRequested => ShuttingDown / Shutdown,
        /// An interrupt ends the turn from wherever it is. The executor has
        /// already given every pending tool call a "cancelled" result.
        * + Interrupted { cause } => WaitingForUserInput / DisplayError(format!("interrupted: {cause}")),
    }
}

/// The model's whole reply as one `Completed` event, with `text` and
/// `tool_calls`, the stop reason read from them and no usage. For scripted
/// drivers and tests, which have no stream to assemble.
#[must_use]
pub fn reply(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> StreamEvent {
    let stop_reason =
        if tool_calls.is_empty() { agent_fsm::llm::StopReason::EndTurn } else { agent_fsm::llm::StopReason::ToolUse };
    StreamEvent::Completed {
        message: AssistantMessage { text: text.into(), tool_calls, ..Default::default() },
        stop_reason,
        usage: agent_fsm::llm::Usage::default(),
    }
}
