//! The Shadow agent runtime's states as one table: `Idle`, `Processing`,
//! `WaitingForPermission`, `ExecutingTool`, `WaitingForSubAgent`,
//! `WaitingForUserInput`, `Done` and `Error`, with the documented flows,
//! the documented interrupt semantics in every state, and the reference's
//! mistakes fixed.
//!
//! The machine is pure: the LLM call, the tools, the permission dialog, the
//! question dialog and the child agents are asked for by actions, and their
//! results come back as events. The conversation, the permission rules and
//! the tool calls of the current reply live in the [`ShadowContext`].
//! States serialize in the snake_case form a UI switches on
//! (`{"state": "executing_tool", "data": {"tool_name": .., "tool_use_id": ..}}`,
//! `{"state": "idle"}`).
//!
//! # The flows
//! - simple reply: `Idle -> Processing -> Idle`;
//! - a tool with permission: `Idle -> Processing -> WaitingForPermission ->
//!   ExecutingTool -> Processing -> Idle`;
//! - several tools, one per reply: `Idle -> Processing -> ExecutingTool ->
//!   Processing -> ExecutingTool -> Processing -> Idle`;
//! - a subagent: `Idle -> Processing -> ExecutingTool -> WaitingForSubAgent
//!   -> Processing -> Idle`;
//! - a question: `Idle -> Processing -> WaitingForUserInput -> Processing ->
//!   Idle`.
//!
//! # Choices, and the reference's mistakes fixed
//! - **A reply's tool calls run one after another**, in the order the model
//!   wrote them, as in the reference's executor. Each is decided when its
//!   turn comes: the question tool ([`ShadowContext::question_tool`]) asks
//!   the user; otherwise the permission rule for the tool's name
//!   ([`Permission`], [`ShadowContext::permissions`], else
//!   [`ShadowContext::default_permission`]) runs it (`Allow`), asks first
//!   (`Ask`), or answers it with a denied result without asking (`Deny`;
//!   the model learns the tool is not allowed and the turn goes on). When
//!   a call is answered the next one starts directly (for example
//!   `ExecutingTool -> ExecutingTool`); once every call is answered, the
//!   results go to the model in one message (`-> Processing`). A reply with
//!   one tool call per round gives the documented several-tools flow.
//! - **Permission replies are matched by a request id the machine mints**,
//!   not by tool name (the reference matched names, so a reply meant for
//!   one call could settle another) and not by the model's `tool_use_id`
//!   either (a model may repeat one, or reuse it in a later reply, and a
//!   reply delivered twice would then settle both requests). Each request
//!   takes the next number of [`ShadowContext::next_request`]
//!   (`permission-0`, `question-1`, ...), unique for the agent's life,
//!   snapshots included; [`ShadowAction::RequestPermission`] carries it
//!   and [`ShadowEvent::PermissionReply`] must name it. A reply for another
//!   id (sent twice, left from an earlier request, or guessed) is refused
//!   with [`ShadowAction::Reject`] and changes nothing. Should the counter
//!   run out (only a tampered snapshot gets near `u64::MAX`), a call that
//!   would ask is answered with an error instead. `remember: true` stores
//!   the answer as the session's rule for that tool name, so the next call
//!   of that tool skips `WaitingForPermission` (or is denied without
//!   asking). A denial by the user ends the task in `Done`, as documented;
//!   the denied call and every call after it get an error result. The
//!   documented `WaitingForPermission -> Processing` ("error in permission
//!   handling") has no cause in a pure machine: a reply either matches the
//!   pending call or is refused, so it has no row.
//! - **Call ids are distinct.** Results are matched by `tool_use_id`, so a
//!   model reply with two calls of one id is refused on entry: nothing
//!   runs, the reply is not recorded, and the turn ends in `Error`.
//!   Resuming a snapshot checks [`invariants`] (the turn's calls distinct
//!   and the one the state names, every request id one the counter
//!   issued), so a resumed agent behaves as a live one.
//! - **Tool results, subagent results and answers are matched too**: a
//!   [`ShadowEvent::ToolResult`] for another `tool_use_id`, a
//!   [`ShadowEvent::SubAgentFinished`] for another session, a
//!   [`ShadowEvent::QuestionAnswered`] for another request are refused the
//!   same way.
//! - **`Error` is real.** The reference never entered it. Here a failed
//!   LLM call ([`ShadowEvent::LlmFailed`]), a failed tool (a
//!   [`ShadowEvent::ToolResult`] whose result is `Err`) and a failed
//!   subagent enter `Error { message }` with [`ShadowAction::ReportError`];
//!   the unanswered calls of the turn get error results so the conversation
//!   stays valid. `Error + UserInput` starts a new turn (`-> Processing`),
//!   as does `Done + UserInput` (the reference's "back to Idle on new
//!   input", then straight on with that input).
//! - **Subagents**: a tool that needs a child agent reports
//!   [`ShadowEvent::SubAgentRequested`]; the table answers
//!   [`ShadowAction::SpawnSubAgent`] with a session id derived from the
//!   parent's session and the call's id (`"{session}/{tool_use_id}"`: no
//!   random ids, so replays are identical) and waits in
//!   `WaitingForSubAgent`. The child's `Ok` result is the call's result;
//!   its `Err` is the parent's `Error`. Children are spawned from a tool
//!   (as in the documented subagent flow and the reference's code), so the
//!   documented `Processing -> WaitingForSubAgent` has no row.
//! - **Questions** get a minted request id too (`question-{n}`), which
//!   [`ShadowEvent::QuestionAnswered`] must carry; the answers, joined by
//!   newlines, are the call's result.
//! - **Interrupts, state by state** ([`ShadowEvent::Interrupt`]):
//!   `Processing`: the partial text is kept as an assistant message,
//!   partial tool calls are dropped, an [`Message::Interrupted`] marker is
//!   added, `-> Done`. `ExecutingTool`: the current tool runs to completion
//!   ([`ShadowAction::InterruptAfterCurrentTool`]); when its result comes,
//!   it is recorded, every remaining call gets an [`INTERRUPTED`] error, `->
//!   Done`. `WaitingForPermission`: the tool gets an [`INTERRUPTED`] error
//!   and does not run, the remaining calls too, `-> Done`.
//!   `WaitingForUserInput`: the question gets an [`INTERRUPTED`] error, `->
//!   Done`. `WaitingForSubAgent` (the reference is silent): like a running
//!   tool, since the child is one; the interrupt is passed on
//!   ([`ShadowAction::InterruptSubAgent`]), the parent waits for the
//!   child's result, records it, and ends in `Done`. A second interrupt
//!   while waiting changes nothing ("double interrupt is safe"). `Idle`:
//!   nothing to interrupt, the agent stays `Idle` (the reference ended the
//!   agent there, against its own docs). `Done` and `Error`: nothing to
//!   interrupt either; they stay, with [`ShadowAction::NothingToInterrupt`].
//! - **Input mid-turn belongs to the executor's queue.** The executor
//!   delivers [`ShadowEvent::UserInput`] only when the machine rests in
//!   `Idle`, `Done` or `Error` and holds it in its input queue otherwise.
//!   If one reaches the machine mid-turn anyway, the table hands it back
//!   untouched with [`ShadowAction::DeferInput`] (requeue it): never
//!   applied mid-turn, never dropped (the reference consumed and lost it).
//!   This holds in `WaitingForUserInput` too: answers to a question come as
//!   [`ShadowEvent::QuestionAnswered`] with the request id, not as free
//!   input.
//! - **Shutdown** works in every state: unanswered calls get an error
//!   result, `-> Done` with [`ShadowAction::Stop`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use machine::{Shadow, ShadowAction, ShadowEvent, ShadowState};
pub use requests::invariants;
use requests::{PERMISSION, QUESTION, repeated_id};

mod requests;

/// The result a call gets when an interrupt stops it (the reference's word).
pub const INTERRUPTED: &str = "Interrupted";

/// The result a call gets when its turn ended before its turn came.
pub const NOT_RUN: &str = "Not run: the turn ended before this call";

/// A tool call the model asked for: the library's provider-neutral one,
/// whose `arguments` are the Anthropic `tool_use` block's `input`.
pub use agent_fsm::llm::ToolCall;

/// A tool call still being streamed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartialToolCall {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The input's JSON so far.
    pub input_json: String,
}

/// A piece of the model's streamed reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StreamDelta {
    /// More text.
    Text(String),
    /// A tool call, incomplete.
    ToolUse(PartialToolCall),
}

/// The model's complete reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantReply {
    /// Its text.
    pub text: String,
    /// The tools it asked for, in order.
    pub tool_calls: Vec<ToolCall>,
}

/// The answer to one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResultBlock {
    /// The call it answers.
    pub tool_use_id: String,
    /// What the model reads.
    pub content: String,
    /// Whether it is an error.
    pub is_error: bool,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Message {
    /// The user's input.
    User(String),
    /// The model's reply (partial if interrupted).
    Assistant {
        /// Its text.
        text: String,
        /// The tools it asked for.
        tool_calls: Vec<ToolCall>,
    },
    /// The answers to a reply's tool calls, in call order.
    ToolResults(Vec<ToolResultBlock>),
    /// The user interrupted here.
    Interrupted,
}

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
    pub results: Vec<ToolResultBlock>,
}

/// Everything outside the states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShadowContext {
    /// This agent's session id; children's ids derive from it.
    pub session_id: String,
    /// Every message, in order.
    pub conversation: Vec<Message>,
    /// Rules by tool name, including answers remembered this session.
    pub permissions: BTreeMap<String, Permission>,
    /// The rule for a tool without one.
    pub default_permission: Permission,
    /// The tool through which the model asks the user questions.
    pub question_tool: String,
    /// Text streamed so far in this call.
    pub partial_text: String,
    /// Tool calls streamed so far in this call, incomplete.
    pub partial_tool_calls: Vec<PartialToolCall>,
    /// The current reply's tool calls.
    pub turn: Turn,
    /// An interrupt waits for the current tool or subagent to finish.
    pub interrupt_requested: bool,
    /// The number of the next permission request or question
    /// (`permission-{n}`, `question-{n}`): requests are numbered by the
    /// machine, never named after the model's `tool_use_id`s, so a reply
    /// can only ever match its own request. Absent from a snapshot, it is 0.
    #[serde(default)]
    pub next_request: u64,
}

impl ShadowContext {
    /// A fresh session: every tool asks, questions go through
    /// `AskUserQuestion`.
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

    /// The session id of the child spawned for `tool_use_id`.
    #[must_use]
    pub fn child_session_id(&self, tool_use_id: &str) -> String {
        format!("{}/{}", self.session_id, tool_use_id)
    }

    /// Starts a turn with the user's `text`; returns the message to send.
    fn begin_turn(&mut self, text: String) -> Message {
        self.drop_partial();
        let message = Message::User(text);
        self.conversation.push(message.clone());
        message
    }

    fn drop_partial(&mut self) {
        self.partial_text.clear();
        self.partial_tool_calls.clear();
    }

    /// Records the model's reply.
    fn record_reply(&mut self, reply: &AssistantReply) {
        self.drop_partial();
        self.conversation.push(Message::Assistant { text: reply.text.clone(), tool_calls: reply.tool_calls.clone() });
    }

    /// Records the reply and makes its tool calls the turn.
    fn begin_tools(&mut self, reply: AssistantReply) {
        self.record_reply(&reply);
        self.turn = Turn { pending: reply.tool_calls, current: None, results: Vec::new() };
    }

    fn answer(&mut self, tool_use_id: String, content: impl Into<String>, is_error: bool) {
        self.turn.results.push(ToolResultBlock { tool_use_id, content: content.into(), is_error });
    }

    /// Moves to the next call a rule does not deny, answering the denied
    /// ones on the way, and makes it current. The rows call this only when
    /// [`next_step`](Self::next_step) found such a call.
    fn advance(&mut self) -> ToolCall {
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
    fn resolve_current(&mut self, content: String, is_error: bool) {
        if let Some(call) = self.turn.current.take() {
            self.answer(call.id, content, is_error);
        }
    }

    /// Answers the current call with a tool's or child's result.
    fn resolve_current_with(&mut self, result: Result<String, String>) {
        match result {
            Ok(output) => self.resolve_current(output, false),
            Err(error) => self.resolve_current(error, true),
        }
    }

    /// Every call answered: records the results; returns the message that
    /// sends them.
    fn finish_tools(&mut self) -> Message {
        while !self.turn.pending.is_empty() {
            let call = self.turn.pending.remove(0);
            let content = self.not_run_because(&call);
            self.answer(call.id, content, true);
        }
        let message = Message::ToolResults(std::mem::take(&mut self.turn).results);
        self.conversation.push(message.clone());
        message
    }

    /// Ends the turn early: the current call (if still unanswered) gets
    /// `current`, every pending one `rest`, all as errors.
    fn abort_turn(&mut self, current: &str, rest: &str) {
        self.resolve_current(current.to_owned(), true);
        for call in std::mem::take(&mut self.turn.pending) {
            self.answer(call.id, rest, true);
        }
        let results = std::mem::take(&mut self.turn).results;
        if !results.is_empty() {
            self.conversation.push(Message::ToolResults(results));
        }
        self.interrupt_requested = false;
    }

    /// An interrupt during tools: unanswered calls get [`INTERRUPTED`].
    fn interrupt_turn(&mut self) {
        self.abort_turn(INTERRUPTED, INTERRUPTED);
        self.conversation.push(Message::Interrupted);
    }

    /// An interrupt during streaming: partial text kept, partial tool calls
    /// dropped.
    fn interrupt_stream(&mut self) {
        let text = std::mem::take(&mut self.partial_text);
        self.drop_partial();
        if !text.is_empty() {
            self.conversation.push(Message::Assistant { text, tool_calls: Vec::new() });
        }
        self.conversation.push(Message::Interrupted);
        self.interrupt_requested = false;
    }

    /// A failure ends the turn: the current call gets `message`.
    fn fail_turn(&mut self, message: &str) {
        self.abort_turn(message, NOT_RUN);
    }

    /// Shutdown: unanswered calls get [`NOT_RUN`], partial output is dropped.
    fn shut_down(&mut self) {
        self.abort_turn(NOT_RUN, NOT_RUN);
        self.drop_partial();
    }
}

/// The Shadow runtime's table.
#[agent_fsm::state_machine(fallback = Nothing, name = Shadow, serde, invariants = super::invariants)]
pub mod machine {
    use super::*;

    /// Read and written in rows as `ctx`.
    #[context]
    pub type Context = ShadowContext;

    /// Where the agent is.
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum ShadowState {
        /// Waiting for input.
        #[initial]
        Idle,
        /// The model is being called.
        Processing,
        /// A tool call waits for the user's permission.
        WaitingForPermission {
            /// The tool.
            tool_name: String,
            /// The call's id.
            tool_use_id: String,
            /// What the tool would run with.
            input: serde_json::Value,
            /// The request's id, minted by the machine; the reply must
            /// carry it.
            request_id: String,
        },
        /// A tool runs.
        ExecutingTool {
            /// The tool.
            tool_name: String,
            /// The call's id.
            tool_use_id: String,
        },
        /// A child agent works for a tool call.
        WaitingForSubAgent {
            /// The child's session id.
            session_id: String,
        },
        /// The user is asked questions.
        WaitingForUserInput {
            /// The id the answer must carry, minted by the machine.
            request_id: String,
        },
        /// The task ended (interrupt, denial, shutdown); new input starts another.
        Done,
        /// The task failed; new input starts another.
        Error {
            /// What failed.
            message: String,
        },
    }

    /// What happens to the agent.
    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum ShadowEvent {
        /// The user's input.
        UserInput(String),
        /// A piece of the model's reply.
        LlmDelta(StreamDelta),
        /// The model's complete reply.
        LlmReply(AssistantReply),
        /// The model call failed.
        LlmFailed(String),
        /// The user answered a permission request.
        PermissionReply {
            /// The request it answers ([`ShadowAction::RequestPermission`]'s
            /// `request_id`).
            request_id: String,
            /// Run it?
            allowed: bool,
            /// Keep this answer for the tool for the session.
            remember: bool,
        },
        /// A tool finished: `Err` if it failed to run.
        ToolResult {
            /// The call.
            tool_use_id: String,
            /// Its output, or why it failed.
            result: Result<String, String>,
        },
        /// The running tool needs a child agent.
        SubAgentRequested {
            /// The call.
            tool_use_id: String,
            /// The child's task.
            prompt: String,
        },
        /// A child agent finished.
        SubAgentFinished {
            /// The child's session.
            session_id: String,
            /// Its answer, or why it failed.
            result: Result<String, String>,
        },
        /// The user answered questions.
        QuestionAnswered {
            /// The request answered.
            request_id: String,
            /// One answer per question.
            answers: Vec<String>,
        },
        /// Stop what is going on.
        Interrupt,
        /// Stop the agent.
        Shutdown,
    }

    /// What the runtime must do next.
    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum ShadowAction {
        /// Nothing (the fallback).
        Nothing,
        /// Call the model with this message after the conversation so far.
        CallLlm(Message),
        /// Show streamed text.
        EmitText(String),
        /// The turn ended with this answer.
        Respond(String),
        /// Run this tool.
        ExecuteTool(ToolCall),
        /// Ask the user whether this call may run; the reply carries
        /// `request_id`.
        RequestPermission {
            /// The id the reply must carry, minted by the machine.
            request_id: String,
            /// The call.
            call: ToolCall,
        },
        /// Ask the user these questions.
        AskUser {
            /// The id the answer must carry.
            request_id: String,
            /// The questions, as the model wrote them.
            questions: serde_json::Value,
        },
        /// Spawn a child agent.
        SpawnSubAgent {
            /// Its session id.
            session_id: String,
            /// Its task.
            prompt: String,
        },
        /// Pass the interrupt on to this child.
        InterruptSubAgent(String),
        /// Let the current tool finish; the turn then ends.
        InterruptAfterCurrentTool,
        /// The task was interrupted.
        Interrupted,
        /// The user denied this tool; the task ended.
        PermissionDenied(String),
        /// Something failed, in words.
        ReportError(String),
        /// A reply, result or answer that matches nothing pending; nothing changed.
        Reject(String),
        /// Input that arrived mid-turn: requeue it.
        DeferInput(String),
        /// An interrupt with nothing to interrupt.
        NothingToInterrupt,
        /// Stop the agent.
        Stop,
    }

    transitions! {
        // ------------------------------------------------------------ at rest
        Idle + UserInput(text) => { let message = ctx.begin_turn(text); } Processing / CallLlm(message),
        Idle + Interrupt => Idle / NothingToInterrupt,
        Done + UserInput(text) => { let message = ctx.begin_turn(text); } Processing / CallLlm(message),
        Done + Interrupt => Done / NothingToInterrupt,
        Error + UserInput(text) => { let message = ctx.begin_turn(text); } Processing / CallLlm(message),
        Error + Interrupt => Error / NothingToInterrupt,

        // --------------------------------------------------------- Processing
        Processing + LlmDelta(StreamDelta::Text(text))
            => { ctx.partial_text.push_str(&text); } Processing / EmitText(text),
        Processing + LlmDelta(StreamDelta::ToolUse(partial))
            => { ctx.partial_tool_calls.push(partial); } Processing / Nothing,
        Processing + LlmReply(reply) [reply.tool_calls.is_empty()]
            => { ctx.record_reply(&reply); } Idle / Respond(reply.text),
        /// Calls are told apart by id: a reply that repeats one runs
        /// nothing and is not recorded.
        Processing + LlmReply(reply) [repeated_id(&reply.tool_calls).is_some()]
            => {
                   ctx.drop_partial();
                   let message = format!(
                       "the model repeated the tool call id `{}`; no tool ran",
                       repeated_id(&reply.tool_calls).unwrap_or_default()
                   );
               }
               Error { message } / ReportError(message.clone()),
        Processing + LlmReply(reply) [ctx.next_step_for(&reply.tool_calls) == NextStep::RunTool]
            => { ctx.begin_tools(reply); let call = ctx.advance(); }
               ExecutingTool { tool_name: call.name, tool_use_id: call.id } / ExecuteTool(call.clone()),
        Processing + LlmReply(reply) [ctx.next_step_for(&reply.tool_calls) == NextStep::AskPermission]
            => { ctx.begin_tools(reply); let call = ctx.advance(); let request_id = ctx.issue_request(PERMISSION); }
               WaitingForPermission { tool_name: call.name, tool_use_id: call.id, input: call.arguments, request_id }
               / RequestPermission { request_id: request_id.clone(), call: call.clone() },
        Processing + LlmReply(reply) [ctx.next_step_for(&reply.tool_calls) == NextStep::AskUser]
            => { ctx.begin_tools(reply); let call = ctx.advance(); let request_id = ctx.issue_request(QUESTION); }
               WaitingForUserInput { request_id } / AskUser { request_id: request_id.clone(), questions: call.arguments },
        /// Every call denied by a rule: the denials go straight back.
        Processing + LlmReply(reply)
            => { ctx.begin_tools(reply); let message = ctx.finish_tools(); } Processing / CallLlm(message),
        Processing + LlmFailed(error)
            => { ctx.drop_partial(); let message = format!("LLM call failed: {}", error); }
               Error { message } / ReportError(message.clone()),
        Processing + Interrupt => { ctx.interrupt_stream(); } Done / Interrupted,
        Processing + UserInput(text) => Processing / DeferInput(text),

        // ----------------------------------------------- WaitingForPermission
        /// Matched by id: a reply for another call is refused, not applied.
        WaitingForPermission { request_id } + PermissionReply { request_id: id, .. } [id != request_id]
            => WaitingForPermission
               / Reject(format!("no permission request `{}` pending (waiting for `{}`)", id, request_id)),
        WaitingForPermission { tool_name, tool_use_id, input, .. } + PermissionReply { allowed: true, remember, .. }
            => { if remember { ctx.permissions.insert(tool_name.clone(), Permission::Allow); } }
               ExecutingTool { tool_name, tool_use_id }
               / ExecuteTool(ToolCall { id: tool_use_id.clone(), name: tool_name.clone(), arguments: input }),
        WaitingForPermission { tool_name } + PermissionReply { remember, .. }
            => {
                   if remember { ctx.permissions.insert(tool_name.clone(), Permission::Deny); }
                   let denied = format!("Permission denied by the user for `{}`", tool_name);
                   ctx.abort_turn(&denied, NOT_RUN);
               }
               Done / PermissionDenied(tool_name),
        WaitingForPermission + Interrupt => { ctx.interrupt_turn(); } Done / Interrupted,
        WaitingForPermission + UserInput(text) => WaitingForPermission / DeferInput(text),

        // ------------------------------------------------------ ExecutingTool
        ExecutingTool { tool_use_id } + ToolResult { tool_use_id: id, .. } [id != tool_use_id]
            => ExecutingTool / Reject(format!("no tool call `{}` running (running `{}`)", id, tool_use_id)),
        ExecutingTool + ToolResult { result, .. } [ctx.interrupt_requested]
            => { ctx.resolve_current_with(result); ctx.interrupt_turn(); } Done / Interrupted,
        ExecutingTool { tool_name } + ToolResult { result: Err(error), .. }
            => { let message = format!("tool `{}` failed: {}", tool_name, error); ctx.fail_turn(&message); }
               Error { message } / ReportError(message.clone()),
        ExecutingTool + ToolResult { result: Ok(output), .. } [ctx.next_step() == NextStep::RunTool]
            => { ctx.resolve_current(output, false); let call = ctx.advance(); }
               ExecutingTool { tool_name: call.name, tool_use_id: call.id } / ExecuteTool(call.clone()),
        ExecutingTool + ToolResult { result: Ok(output), .. } [ctx.next_step() == NextStep::AskPermission]
            => { ctx.resolve_current(output, false); let call = ctx.advance(); let request_id = ctx.issue_request(PERMISSION); }
               WaitingForPermission { tool_name: call.name, tool_use_id: call.id, input: call.arguments, request_id }
               / RequestPermission { request_id: request_id.clone(), call: call.clone() },
        ExecutingTool + ToolResult { result: Ok(output), .. } [ctx.next_step() == NextStep::AskUser]
            => { ctx.resolve_current(output, false); let call = ctx.advance(); let request_id = ctx.issue_request(QUESTION); }
               WaitingForUserInput { request_id } / AskUser { request_id: request_id.clone(), questions: call.arguments },
        ExecutingTool + ToolResult { result: Ok(output), .. }
            => { ctx.resolve_current(output, false); let message = ctx.finish_tools(); } Processing / CallLlm(message),
        ExecutingTool { tool_use_id } + SubAgentRequested { tool_use_id: id, .. } [id != tool_use_id]
            => ExecutingTool / Reject(format!("no tool call `{}` running (running `{}`)", id, tool_use_id)),
        ExecutingTool + SubAgentRequested { .. } [ctx.interrupt_requested]
            => { ctx.interrupt_turn(); } Done / Interrupted,
        ExecutingTool { tool_use_id } + SubAgentRequested { prompt, .. }
            => { let session_id = ctx.child_session_id(&tool_use_id); }
               WaitingForSubAgent { session_id } / SpawnSubAgent { session_id: session_id.clone(), prompt },
        ExecutingTool + Interrupt => { ctx.interrupt_requested = true; } ExecutingTool / InterruptAfterCurrentTool,
        ExecutingTool + UserInput(text) => ExecutingTool / DeferInput(text),

        // ------------------------------------------------- WaitingForSubAgent
        WaitingForSubAgent { session_id } + SubAgentFinished { session_id: id, .. } [id != session_id]
            => WaitingForSubAgent / Reject(format!("no subagent `{}` awaited (awaiting `{}`)", id, session_id)),
        WaitingForSubAgent + SubAgentFinished { result, .. } [ctx.interrupt_requested]
            => { ctx.resolve_current_with(result); ctx.interrupt_turn(); } Done / Interrupted,
        WaitingForSubAgent { session_id } + SubAgentFinished { result: Err(error), .. }
            => { let message = format!("subagent `{}` failed: {}", session_id, error); ctx.fail_turn(&message); }
               Error { message } / ReportError(message.clone()),
        WaitingForSubAgent + SubAgentFinished { result: Ok(output), .. } [ctx.next_step() == NextStep::RunTool]
            => { ctx.resolve_current(output, false); let call = ctx.advance(); }
               ExecutingTool { tool_name: call.name, tool_use_id: call.id } / ExecuteTool(call.clone()),
        WaitingForSubAgent + SubAgentFinished { result: Ok(output), .. } [ctx.next_step() == NextStep::AskPermission]
            => { ctx.resolve_current(output, false); let call = ctx.advance(); let request_id = ctx.issue_request(PERMISSION); }
               WaitingForPermission { tool_name: call.name, tool_use_id: call.id, input: call.arguments, request_id }
               / RequestPermission { request_id: request_id.clone(), call: call.clone() },
        WaitingForSubAgent + SubAgentFinished { result: Ok(output), .. } [ctx.next_step() == NextStep::AskUser]
            => { ctx.resolve_current(output, false); let call = ctx.advance(); let request_id = ctx.issue_request(QUESTION); }
               WaitingForUserInput { request_id } / AskUser { request_id: request_id.clone(), questions: call.arguments },
        WaitingForSubAgent + SubAgentFinished { result: Ok(output), .. }
            => { ctx.resolve_current(output, false); let message = ctx.finish_tools(); } Processing / CallLlm(message),
        WaitingForSubAgent { session_id } + Interrupt
            => { ctx.interrupt_requested = true; } WaitingForSubAgent / InterruptSubAgent(session_id.clone()),
        WaitingForSubAgent + UserInput(text) => WaitingForSubAgent / DeferInput(text),

        // ------------------------------------------------ WaitingForUserInput
        WaitingForUserInput { request_id } + QuestionAnswered { request_id: id, .. } [id != request_id]
            => WaitingForUserInput / Reject(format!("no question `{}` pending (waiting for `{}`)", id, request_id)),
        WaitingForUserInput + QuestionAnswered { answers, .. } [ctx.next_step() == NextStep::RunTool]
            => { ctx.resolve_current(answers.join("\n"), false); let call = ctx.advance(); }
               ExecutingTool { tool_name: call.name, tool_use_id: call.id } / ExecuteTool(call.clone()),
        WaitingForUserInput + QuestionAnswered { answers, .. } [ctx.next_step() == NextStep::AskPermission]
            => { ctx.resolve_current(answers.join("\n"), false); let call = ctx.advance(); let request_id = ctx.issue_request(PERMISSION); }
               WaitingForPermission { tool_name: call.name, tool_use_id: call.id, input: call.arguments, request_id }
               / RequestPermission { request_id: request_id.clone(), call: call.clone() },
        WaitingForUserInput + QuestionAnswered { answers, .. } [ctx.next_step() == NextStep::AskUser]
            => { ctx.resolve_current(answers.join("\n"), false); let call = ctx.advance(); let request_id = ctx.issue_request(QUESTION); }
               WaitingForUserInput { request_id } / AskUser { request_id: request_id.clone(), questions: call.arguments },
        WaitingForUserInput + QuestionAnswered { answers, .. }
            => { ctx.resolve_current(answers.join("\n"), false); let message = ctx.finish_tools(); }
               Processing / CallLlm(message),
        WaitingForUserInput + Interrupt => { ctx.interrupt_turn(); } Done / Interrupted,
        WaitingForUserInput + UserInput(text) => WaitingForUserInput / DeferInput(text),

        // ------------------------------------------------------- everywhere
        * + Shutdown => { ctx.shut_down(); } Done / Stop,
    }
}
