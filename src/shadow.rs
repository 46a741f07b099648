//! The Shadow agent runtime's states as one table: `Idle`, `Processing`,
//! `WaitingForPermission`, `ExecutingTool`, `WaitingForSubAgent`,
//! `WaitingForUserInput`, `Done` and `Error`, with the documented flows,
//! the documented interrupt semantics in every state, and the reference's
//! mistakes fixed.
//!
//! The machine is pure: the LLM call, the tools, the permission dialog, the
//! question dialog and the child agents are asked for by actions, and their
//! results come back as events: the model's as the library's
//! [`StreamEvent`]s and [`ProviderError`]s, so a provider's stream
//! drives it unchanged. The conversation (the library's [`Message`]s), the
//! permission rules and the tool calls of the current reply live in the
//! [`ShadowContext`].
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
//!   takes the next number of [`ShadowContext::next_request`], and its id
//!   joins that number to a fingerprint of the call asked about
//!   ([`request_id`]: `permission-0-3f0c…`, `question-1-…`): unique for
//!   the agent's life, snapshots included, and bound to its call, so that
//!   an agent restored from an earlier snapshot, which numbers its
//!   requests again from there, does not take a reply given to the
//!   request made under a number before for a request about another call
//!   made under it after; [`ShadowAction::RequestPermission`] carries it
//!   and [`ShadowEvent::PermissionReply`] must name it. A reply for another
//!   id (sent twice, left from an earlier request, or guessed) is refused
//!   with [`ShadowAction::Reject`] and changes nothing. Both replies and
//!   answers are `#[during_work]`: the executor delivers them as they come,
//!   so one sent while the model still replies reaches the machine before
//!   the request it names exists (and is dropped), rather than waiting in
//!   the inbox for that request and answering it. Should the counter
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
//!   LLM call ([`ShadowEvent::LlmFailed`] not retried, below), a failed tool (a
//!   [`ShadowEvent::ToolResult`] whose result is `Err`) and a failed
//!   subagent enter `Error { message }` with [`ShadowAction::ReportError`];
//!   the unanswered calls of the turn get error results so the conversation
//!   stays valid. `Error + UserInput` starts a new turn (`-> Processing`),
//!   as does `Done + UserInput` (the reference's "back to Idle on new
//!   input", then straight on with that input).
//! - **Model failures a retry can help are retried.** A
//!   [`ProviderError`] that [`is_retryable`](ProviderError::is_retryable)
//!   (rate limit, overload, a server error, a dropped connection) stays in
//!   `Processing` and asks for [`ShadowAction::ScheduleRetry`] with the
//!   server's [`retry_after`](ProviderError::retry_after), while fewer than
//!   [`ShadowContext::max_llm_attempts`] attempts have failed; the timer's
//!   [`ShadowEvent::RetryTimeoutFired`] (matched by the retry's number)
//!   calls the model again. What the failed attempt streamed is dropped.
//!   Any other failure, or the last, is `Error`.
//! - **The conversation is one a provider accepts**: the library's
//!   [`Message`]s, a reply's tool results one [`Message::Tool`] per call in
//!   call order, every call answered before the next model call, an
//!   interrupt a user message.
//! - **Subagents**: a tool that needs a child agent reports
//!   [`ShadowEvent::SubAgentRequested`]; the table answers
//!   [`ShadowAction::SpawnSubAgent`] with a session id derived from the
//!   parent's session and the call's id (`"{session}/{tool_use_id}"`, a
//!   `/` or `%` of the id escaped: no
//!   random ids, so replays are identical; with `~{n}` added for a call
//!   id the model used before, so that every call gets a child of its
//!   own, never an earlier one resumed from a store) and waits in
//!   `WaitingForSubAgent`. The child's `Ok` result is the call's result;
//!   its `Err` is the parent's `Error`. Children are spawned from a tool
//!   (as in the documented subagent flow and the reference's code), so the
//!   documented `Processing -> WaitingForSubAgent` has no row.
//! - **Questions** get a minted request id too (`question-{n}-{fingerprint}`), which
//!   [`ShadowEvent::QuestionAnswered`] must carry; the answers, joined by
//!   newlines, are the call's result.
//! - **Interrupts, state by state** ([`ShadowEvent::Interrupt`]):
//!   `Processing`: the partial text is kept as an assistant message,
//!   partial tool calls are dropped, a user message [`INTERRUPTED`] is
//!   added (after the tool results, when tools were interrupted), `-> Done`. `ExecutingTool`: the current tool runs to completion
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
//! - **Input mid-turn is handed back.** The executor holds
//!   [`ShadowEvent::UserInput`] in its input queue while work is in flight
//!   (a model stream, a tool, a child), but delivers it while the machine
//!   waits for a permission or an answer. When one reaches the machine
//!   mid-turn, the table hands it back untouched with
//!   [`ShadowAction::DeferInput`] (requeue it): never applied mid-turn,
//!   never dropped by the table (the reference consumed and lost it).
//!   This holds in `WaitingForUserInput` too: answers to a question come as
//!   [`ShadowEvent::QuestionAnswered`] with the request id, not as free
//!   input.
//! - **Shutdown** works in every state: unanswered calls get an error
//!   result, `-> Done` with [`ShadowAction::Stop`].

pub use context::{DEFAULT_LLM_ATTEMPTS, NextStep, Permission, ShadowContext, Turn};
pub use machine::{Shadow, ShadowAction, ShadowEvent, ShadowState};
use requests::repeated_id;
pub use requests::{PERMISSION, QUESTION, invariants, request_id};

mod context;
mod requests;

/// The conversation and the model's streamed reply are the library's
/// provider-neutral types, so a provider's stream drives this machine
/// unchanged.
pub use agent_fsm::llm::{AssistantMessage, Message, ProviderError, StreamEvent, ToolCall, ToolResult};

/// The result a call gets when an interrupt stops it (the reference's
/// word), and the user message an interrupt adds to the conversation.
pub const INTERRUPTED: &str = "Interrupted";

/// The result a call gets when its turn ended before its turn came.
pub const NOT_RUN: &str = "Not run: the turn ended before this call";

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
        /// An item of the model's streamed reply: a text, reasoning or
        /// tool-call delta, or the completed reply.
        LlmEvent(StreamEvent),
        /// The model call failed; the error says whether a retry can help.
        LlmFailed(ProviderError),
        /// The wait before retry number `attempt` of the model call is over
        /// ([`ShadowAction::ScheduleRetry`]).
        RetryTimeoutFired {
            /// The retry's number, as scheduled.
            attempt: u32,
        },
        /// The user answered a permission request. Delivered as it comes,
        /// even while the model replies or a tool runs: held back until
        /// then, a reply sent before its request would be taken once the
        /// request is made, as its answer.
        #[during_work]
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
        /// The user answered questions. Delivered as it comes, as a
        /// permission reply is.
        #[during_work]
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
        /// Call the model on the conversation so far; carries the messages
        /// this step added to it (the user's input, or one tool result per
        /// call in call order; none for a retry).
        CallLlm(Vec<Message>),
        /// Deliver [`ShadowEvent::RetryTimeoutFired`] with `attempt` after
        /// the retry policy's backoff, or the server's `retry-after`.
        ScheduleRetry {
            /// The retry about to be made (1 for the first).
            attempt: u32,
            /// The wait the server asked for, if it gave one.
            retry_after: Option<std::time::Duration>,
        },
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
        Idle + UserInput(text) => { let messages = ctx.begin_turn(text); } Processing / CallLlm(messages),
        Idle + Interrupt => Idle / NothingToInterrupt,
        Done + UserInput(text) => { let messages = ctx.begin_turn(text); } Processing / CallLlm(messages),
        Done + Interrupt => Done / NothingToInterrupt,
        Error + UserInput(text) => { let messages = ctx.begin_turn(text); } Processing / CallLlm(messages),
        Error + Interrupt => Error / NothingToInterrupt,

        // --------------------------------------------------------- Processing
        Processing + LlmEvent(StreamEvent::TextDelta(text))
            => { ctx.partial_text.push_str(&text); } Processing / EmitText(text),
        Processing + LlmEvent(StreamEvent::ToolCallDelta { index, id, name, arguments_fragment })
            => { ctx.partial_tool_calls.push(StreamEvent::ToolCallDelta { index, id, name, arguments_fragment }); }
               Processing / Nothing,
        /// A reasoning model's thoughts as they stream: expected, not kept
        /// (an interrupt drops them, as documented).
        Processing + LlmEvent(StreamEvent::ReasoningDelta(_)) => Processing / Nothing,
        Processing + LlmEvent(StreamEvent::Completed { message: reply, .. }) [reply.tool_calls.is_empty()]
            => { ctx.record_reply(&reply); } Idle / Respond(reply.text),
        /// Calls are told apart by id: a reply that repeats one runs
        /// nothing and is not recorded.
        Processing + LlmEvent(StreamEvent::Completed { message: reply, .. }) [repeated_id(&reply.tool_calls).is_some()]
            => {
                   ctx.end_call();
                   let message = format!(
                       "the model repeated the tool call id `{}`; no tool ran",
                       repeated_id(&reply.tool_calls).unwrap_or_default()
                   );
               }
               Error { message } / ReportError(message.clone()),
        Processing + LlmEvent(StreamEvent::Completed { message: reply, .. }) [ctx.next_step_for(&reply.tool_calls) == NextStep::RunTool]
            => { ctx.begin_tools(reply); let call = ctx.advance(); }
               ExecutingTool { tool_name: call.name, tool_use_id: call.id } / ExecuteTool(call.clone()),
        Processing + LlmEvent(StreamEvent::Completed { message: reply, .. }) [ctx.next_step_for(&reply.tool_calls) == NextStep::AskPermission]
            => { ctx.begin_tools(reply); let call = ctx.advance(); let request_id = ctx.issue_request(PERMISSION, &call); }
               WaitingForPermission { tool_name: call.name, tool_use_id: call.id, input: call.arguments, request_id }
               / RequestPermission { request_id: request_id.clone(), call: call.clone() },
        Processing + LlmEvent(StreamEvent::Completed { message: reply, .. }) [ctx.next_step_for(&reply.tool_calls) == NextStep::AskUser]
            => { ctx.begin_tools(reply); let call = ctx.advance(); let request_id = ctx.issue_request(QUESTION, &call); }
               WaitingForUserInput { request_id } / AskUser { request_id: request_id.clone(), questions: call.arguments },
        /// Every call denied by a rule: the denials go straight back.
        Processing + LlmEvent(StreamEvent::Completed { message: reply, .. })
            => { ctx.begin_tools(reply); let messages = ctx.finish_tools(); } Processing / CallLlm(messages),
        /// Only a failure a retry can help (rate limit, overload, a dropped
        /// connection) is retried, after the server's `retry-after` if it
        /// gave one, while attempts are left.
        Processing + LlmFailed(error) [ctx.may_retry(error)]
            => { let attempt = ctx.schedule_retry(); }
               Processing / ScheduleRetry { attempt, retry_after: error.retry_after() },
        Processing + LlmFailed(error)
            => { ctx.end_call(); let message = format!("LLM call failed: {}", error); }
               Error { message } / ReportError(message.clone()),
        /// Matched by number: a timer left from an earlier retry is refused.
        Processing + RetryTimeoutFired { attempt } [ctx.retry_due(*attempt)]
            => { ctx.retry_scheduled = false; } Processing / CallLlm(Vec::new()),
        Processing + RetryTimeoutFired { attempt }
            => Processing / Reject(format!("no retry {} of the model call scheduled", attempt)),
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
            => { ctx.resolve_current(output, false); let call = ctx.advance(); let request_id = ctx.issue_request(PERMISSION, &call); }
               WaitingForPermission { tool_name: call.name, tool_use_id: call.id, input: call.arguments, request_id }
               / RequestPermission { request_id: request_id.clone(), call: call.clone() },
        ExecutingTool + ToolResult { result: Ok(output), .. } [ctx.next_step() == NextStep::AskUser]
            => { ctx.resolve_current(output, false); let call = ctx.advance(); let request_id = ctx.issue_request(QUESTION, &call); }
               WaitingForUserInput { request_id } / AskUser { request_id: request_id.clone(), questions: call.arguments },
        ExecutingTool + ToolResult { result: Ok(output), .. }
            => { ctx.resolve_current(output, false); let messages = ctx.finish_tools(); } Processing / CallLlm(messages),
        ExecutingTool { tool_use_id } + SubAgentRequested { tool_use_id: id, .. } [id != tool_use_id]
            => ExecutingTool / Reject(format!("no tool call `{}` running (running `{}`)", id, tool_use_id)),
        ExecutingTool + SubAgentRequested { .. } [ctx.interrupt_requested]
            => { ctx.interrupt_turn(); } Done / Interrupted,
        ExecutingTool { tool_use_id } + SubAgentRequested { prompt, .. }
            => { let session_id = ctx.spawn_child(&tool_use_id); }
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
            => { ctx.resolve_current(output, false); let call = ctx.advance(); let request_id = ctx.issue_request(PERMISSION, &call); }
               WaitingForPermission { tool_name: call.name, tool_use_id: call.id, input: call.arguments, request_id }
               / RequestPermission { request_id: request_id.clone(), call: call.clone() },
        WaitingForSubAgent + SubAgentFinished { result: Ok(output), .. } [ctx.next_step() == NextStep::AskUser]
            => { ctx.resolve_current(output, false); let call = ctx.advance(); let request_id = ctx.issue_request(QUESTION, &call); }
               WaitingForUserInput { request_id } / AskUser { request_id: request_id.clone(), questions: call.arguments },
        WaitingForSubAgent + SubAgentFinished { result: Ok(output), .. }
            => { ctx.resolve_current(output, false); let messages = ctx.finish_tools(); } Processing / CallLlm(messages),
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
            => { ctx.resolve_current(answers.join("\n"), false); let call = ctx.advance(); let request_id = ctx.issue_request(PERMISSION, &call); }
               WaitingForPermission { tool_name: call.name, tool_use_id: call.id, input: call.arguments, request_id }
               / RequestPermission { request_id: request_id.clone(), call: call.clone() },
        WaitingForUserInput + QuestionAnswered { answers, .. } [ctx.next_step() == NextStep::AskUser]
            => { ctx.resolve_current(answers.join("\n"), false); let call = ctx.advance(); let request_id = ctx.issue_request(QUESTION, &call); }
               WaitingForUserInput { request_id } / AskUser { request_id: request_id.clone(), questions: call.arguments },
        WaitingForUserInput + QuestionAnswered { answers, .. }
            => { ctx.resolve_current(answers.join("\n"), false); let messages = ctx.finish_tools(); }
               Processing / CallLlm(messages),
        WaitingForUserInput + Interrupt => { ctx.interrupt_turn(); } Done / Interrupted,
        WaitingForUserInput + UserInput(text) => WaitingForUserInput / DeferInput(text),

        // ------------------------------------------------------- everywhere
        * + Shutdown => { ctx.shut_down(); } Done / Stop,
    }
}
