//! The Loom machine written with rust-fsm's `state_machine!` DSL.
//!
//! How rust-fsm shapes it:
//! - **States, inputs and outputs are plain unit variants**: no data, no
//!   guards. The table decides only which state comes next and which kind
//!   of output to emit. Every piece of data Loom keeps in its states (the
//!   conversation, retries, executions, the pending request, the error)
//!   lives in `LoomData`, beside the machine: that is how rust-fsm's users
//!   carry data.
//! - **Guards become inputs.** Before consuming an event the driver
//!   evaluates Loom's guards against the data and picks the input that names
//!   the outcome (`LlmFailedRetry` / `LlmFailedFinal`, `ToolResultUnknown` /
//!   `ToolResultMore` / `ToolResultLastMutating` / `ToolResultLast`, ...).
//! - **Outputs become actions.** `consume` returns an output kind; the
//!   driver then performs it on the data with the event's payload and builds
//!   the `AgentAction`. So every event is matched three times: to pick the
//!   input, by the table (`transition` and `output`, one match each over the
//!   state and input), and to perform the output.
//! - **No wildcard rows**: `* + ShutdownRequested` and `* + Interrupted` are
//!   written out per state. No eventless rows: the transient
//!   `ProcessingLlmResponse` is resolved when the input is picked (tools or
//!   not).
//! - **The catch-all** is `consume`'s `Err(TransitionImpossibleError)`: no
//!   output, state unchanged, Loom's fallback action.

use agent_fsm_examples::loom::{
    AgentAction, AgentConfig, AgentError, AgentEvent, AgentState, CompletedToolInfo, ConversationContext, ErrorOrigin,
    Executions, LlmRequest, Message, StreamEvent, repeated_id,
};
use std::mem;

::rust_fsm::state_machine! {
    /// Loom's control flow: which state follows, which action kind is due.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[state_machine(input(crate::peers::rust_fsm::LoomInput))]
    pub(crate) loom(WaitingForUserInput)

    WaitingForUserInput => {
        UserInput => CallingLlm [SendUserTurn],
        Interrupted => WaitingForUserInput [ReportInterrupt],
        ShutdownRequested => ShuttingDown [Shutdown]
    },
    CallingLlm => {
        TextDelta => CallingLlm [Display],
        ToolCallDelta => CallingLlm [Wait],
        ReasoningDelta => CallingLlm [Wait],
        CompletedRepeatingId => WaitingForUserInput [RefuseReply],
        CompletedWithTools => ExecutingTools [ExecuteTools],
        CompletedText => WaitingForUserInput [FinishTurn],
        LlmFailedRetry => Error [ScheduleRetry],
        LlmFailedFinal => WaitingForUserInput [GiveUp],
        Interrupted => WaitingForUserInput [ReportInterrupt],
        ShutdownRequested => ShuttingDown [Shutdown]
    },
    ExecutingTools => {
        ToolResultUnknown => ExecutingTools [ReportUnknownResult],
        ToolResultMore => ExecutingTools [RecordResult],
        ToolResultLastMutating => PostToolsHook [RunHook],
        ToolResultLast => CallingLlm [SendAfterTools],
        ToolProgressKnown => ExecutingTools [RecordProgress],
        ToolProgressUnknown => ExecutingTools [ReportUnknownProgress],
        Interrupted => WaitingForUserInput [InterruptTools],
        ShutdownRequested => ShuttingDown [Shutdown]
    },
    PostToolsHook => {
        PostToolsHookCompleted => CallingLlm [SendPending],
        Interrupted => WaitingForUserInput [ReportInterrupt],
        ShutdownRequested => ShuttingDown [Shutdown]
    },
    Error => {
        RetryTimeoutFiredLlm => CallingLlm [Retry],
        Interrupted => WaitingForUserInput [ReportInterrupt],
        ShutdownRequested => ShuttingDown [Shutdown]
    },
    ShuttingDown(ShutdownRequested) => ShuttingDown [Shutdown],
}

/// The input alphabet, declared by hand so that it can hold an input no
/// row takes: rust-fsm builds its own input enum from the rows only. (`pub`:
/// the generated `Impl`, which is `pub`, names it.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoomInput {
    /// `UserInput`.
    UserInput,
    /// `LlmEvent(TextDelta)`.
    TextDelta,
    /// `LlmEvent(ToolCallDelta)`, or any stream event added later.
    ToolCallDelta,
    /// `LlmEvent(ReasoningDelta)`.
    ReasoningDelta,
    /// `LlmEvent(Completed)` whose tool calls repeat an id.
    CompletedRepeatingId,
    /// `LlmEvent(Completed)` asking for tools.
    CompletedWithTools,
    /// `LlmEvent(Completed)` with text only.
    CompletedText,
    /// `LlmFailed` with a retryable error and attempts left.
    LlmFailedRetry,
    /// `LlmFailed` otherwise.
    LlmFailedFinal,
    /// `ToolCompleted` for a call that is not pending.
    ToolResultUnknown,
    /// `ToolCompleted` with other calls still pending.
    ToolResultMore,
    /// The round's last `ToolCompleted`, a mutating tool having succeeded.
    ToolResultLastMutating,
    /// The round's last `ToolCompleted`, nothing mutated.
    ToolResultLast,
    /// `ToolProgress` for a pending call.
    ToolProgressKnown,
    /// `ToolProgress` for a call that is not pending.
    ToolProgressUnknown,
    /// `PostToolsHookCompleted`.
    PostToolsHookCompleted,
    /// `RetryTimeoutFired` after a model error.
    RetryTimeoutFiredLlm,
    /// `RetryTimeoutFired` after a tool or I/O error: no row takes it (Loom
    /// refuses that pair).
    RetryTimeoutFiredOther,
    /// `ShutdownRequested`.
    ShutdownRequested,
    /// `Interrupted`.
    Interrupted,
}

/// The data Loom's states carry, kept beside the unit-state machine.
#[derive(Debug, Default)]
pub(crate) struct LoomData {
    /// The conversation (every state but `ShuttingDown`).
    conversation: ConversationContext,
    /// `CallingLlm` and `Error`: failed attempts so far.
    retries: u32,
    /// `ExecutingTools`: this round's calls.
    executions: Executions,
    /// `PostToolsHook`: the model call to make once the hook is done.
    pending_llm_request: Option<LlmRequest>,
    /// `PostToolsHook`: what the hook decides on (kept as Loom keeps it).
    completed_tools: Vec<CompletedToolInfo>,
    /// `Error`: what failed (kept as Loom keeps it).
    error: Option<AgentError>,
    /// `Error`: where it failed, which decides the recovery.
    origin: Option<ErrorOrigin>,
}

/// The rust-fsm machine and its data, behind Loom's calling convention.
#[derive(Debug)]
pub(crate) struct RustFsmLoom {
    /// Control: the generated unit-state machine.
    machine: loom::StateMachine,
    /// Data, beside it.
    data: LoomData,
    /// What the rows read as `ctx` in Loom.
    config: AgentConfig,
}

impl RustFsmLoom {
    /// A machine resumed in `start`: the unit state beside its data. A
    /// transient state is resolved at once, as `Loom::with_state` does.
    pub(crate) fn with_state(start: AgentState, config: AgentConfig) -> Self {
        use loom::State;
        let (state, data) = match crate::hand::settle_transient(start) {
            AgentState::WaitingForUserInput { conversation } => {
                (State::WaitingForUserInput, LoomData { conversation, ..LoomData::default() })
            }
            AgentState::CallingLlm { retries, conversation } => {
                (State::CallingLlm, LoomData { conversation, retries, ..LoomData::default() })
            }
            AgentState::ExecutingTools { executions, conversation } => {
                (State::ExecutingTools, LoomData { conversation, executions, ..LoomData::default() })
            }
            AgentState::PostToolsHook { pending_llm_request, completed_tools, conversation } => (
                State::PostToolsHook,
                LoomData {
                    conversation,
                    pending_llm_request: Some(pending_llm_request),
                    completed_tools,
                    ..LoomData::default()
                },
            ),
            AgentState::Error { error, retries, origin, conversation } => (
                State::Error,
                LoomData { conversation, retries, error: Some(error), origin: Some(origin), ..LoomData::default() },
            ),
            AgentState::ShuttingDown => (State::ShuttingDown, LoomData::default()),
            AgentState::ProcessingLlmResponse { .. } => unreachable!("a transient state is settled above"),
        };
        RustFsmLoom { machine: loom::StateMachine::from_state(state), data, config }
    }

    /// Feeds one event and returns the action to perform.
    #[inline]
    pub(crate) fn handle_event(&mut self, event: AgentEvent) -> AgentAction {
        let input = self.input(&event);
        match self.machine.consume(&input) {
            Ok(Some(output)) => self.perform(output, event),
            // Every row has an output; kept for completeness.
            Ok(None) => AgentAction::WaitForInput,
            Err(_) => super::unhandled(self.state_name(), event.name()),
        }
    }

    /// The current state's name, as Loom spells it.
    pub(crate) fn state_name(&self) -> &'static str {
        match self.machine.state() {
            loom::State::WaitingForUserInput => "WaitingForUserInput",
            loom::State::CallingLlm => "CallingLlm",
            loom::State::ExecutingTools => "ExecutingTools",
            loom::State::PostToolsHook => "PostToolsHook",
            loom::State::Error => "Error",
            loom::State::ShuttingDown => "ShuttingDown",
        }
    }

    /// Loom's guards, evaluated on the data: the input that names the
    /// event and the guards' outcome. Only meaningful in the state the
    /// input has rows for; in any other state the table refuses it anyway.
    #[inline]
    fn input(&self, event: &AgentEvent) -> LoomInput {
        use LoomInput as I;
        let data = &self.data;
        match event {
            AgentEvent::UserInput(_) => I::UserInput,
            AgentEvent::LlmEvent(StreamEvent::TextDelta(_)) => I::TextDelta,
            AgentEvent::LlmEvent(StreamEvent::ReasoningDelta(_)) => I::ReasoningDelta,
            AgentEvent::LlmEvent(StreamEvent::Completed { message: response, .. }) => {
                if repeated_id(&response.tool_calls).is_some() {
                    I::CompletedRepeatingId
                } else if response.tool_calls.is_empty() {
                    I::CompletedText
                } else {
                    I::CompletedWithTools
                }
            }
            AgentEvent::LlmEvent(_) => I::ToolCallDelta,
            AgentEvent::LlmFailed(error) => {
                if error.is_retryable() && data.retries.saturating_add(1) < self.config.max_retries {
                    I::LlmFailedRetry
                } else {
                    I::LlmFailedFinal
                }
            }
            AgentEvent::ToolCompleted { call_id, outcome } => {
                if !data.executions.is_pending(call_id) {
                    I::ToolResultUnknown
                } else if data.executions.pending_count() > 1 {
                    I::ToolResultMore
                } else if data.executions.mutates_with(call_id, outcome, &self.config.mutating_tools) {
                    I::ToolResultLastMutating
                } else {
                    I::ToolResultLast
                }
            }
            AgentEvent::ToolProgress(report) => {
                if data.executions.is_pending(&report.call_id) {
                    I::ToolProgressKnown
                } else {
                    I::ToolProgressUnknown
                }
            }
            AgentEvent::PostToolsHookCompleted { .. } => I::PostToolsHookCompleted,
            AgentEvent::RetryTimeoutFired => {
                if data.origin == Some(ErrorOrigin::Llm) {
                    I::RetryTimeoutFiredLlm
                } else {
                    I::RetryTimeoutFiredOther
                }
            }
            AgentEvent::ShutdownRequested => I::ShutdownRequested,
            AgentEvent::Interrupted { .. } => I::Interrupted,
        }
    }

    /// Performs `output` on the data with the event's payload; the table
    /// has already moved the machine to its next state.
    #[inline]
    fn perform(&mut self, output: loom::Output, event: AgentEvent) -> AgentAction {
        use AgentAction as A;
        use loom::Output as O;
        let data = &mut self.data;
        let ctx = &self.config;
        match output {
            O::SendUserTurn => {
                let AgentEvent::UserInput(message) = event else { return mismatch() };
                data.conversation.push(message);
                data.retries = 0;
                A::SendLlmRequest(ctx.request(&data.conversation, 0))
            }
            O::Display => {
                let AgentEvent::LlmEvent(StreamEvent::TextDelta(content)) = event else { return mismatch() };
                A::DisplayMessage(content)
            }
            O::Wait => A::WaitForInput,
            O::RefuseReply => {
                let AgentEvent::LlmEvent(StreamEvent::Completed { message, .. }) = event else { return mismatch() };
                let id = repeated_id(&message.tool_calls).unwrap_or_default();
                A::DisplayError(format!("the model repeated the tool call id `{id}`; no tool ran"))
            }
            O::ExecuteTools => {
                let AgentEvent::LlmEvent(StreamEvent::Completed { message, .. }) = event else { return mismatch() };
                let tool_calls = message.tool_calls.clone();
                data.conversation.push(Message::Assistant(message));
                data.executions = Executions::pending(&tool_calls);
                A::ExecuteTools(tool_calls)
            }
            O::FinishTurn => {
                let AgentEvent::LlmEvent(StreamEvent::Completed { message, .. }) = event else { return mismatch() };
                data.conversation.push(Message::Assistant(message));
                A::WaitForInput
            }
            O::ScheduleRetry => {
                let AgentEvent::LlmFailed(error) = event else { return mismatch() };
                data.retries = data.retries.saturating_add(1);
                let retry_after = error.retry_after();
                data.error = Some(AgentError::Llm(error));
                data.origin = Some(ErrorOrigin::Llm);
                A::ScheduleRetry { attempt: data.retries, retry_after }
            }
            O::GiveUp => {
                let AgentEvent::LlmFailed(error) = event else { return mismatch() };
                data.retries = 0;
                A::DisplayError(format!("llm call failed: {error}"))
            }
            O::ReportUnknownResult => {
                let AgentEvent::ToolCompleted { call_id, .. } = event else { return mismatch() };
                A::DisplayError(format!("tool result for unknown or finished call `{call_id}`"))
            }
            O::RecordResult => {
                let AgentEvent::ToolCompleted { call_id, outcome } = event else { return mismatch() };
                data.executions.complete(&call_id, outcome);
                A::WaitForInput
            }
            O::RunHook => {
                let AgentEvent::ToolCompleted { call_id, outcome } = event else { return mismatch() };
                // Leaving `ExecutingTools`: its executions go, as in Loom.
                let mut executions = mem::take(&mut data.executions);
                executions.complete(&call_id, outcome);
                let completed_tools = executions.record_results(&mut data.conversation);
                data.pending_llm_request = Some(ctx.request(&data.conversation, 0));
                data.completed_tools = completed_tools.clone();
                A::RunPostToolsHook { completed_tools }
            }
            O::SendAfterTools => {
                let AgentEvent::ToolCompleted { call_id, outcome } = event else { return mismatch() };
                let mut executions = mem::take(&mut data.executions);
                executions.complete(&call_id, outcome);
                executions.record_results(&mut data.conversation);
                data.retries = 0;
                A::SendLlmRequest(ctx.request(&data.conversation, 0))
            }
            O::RecordProgress => {
                let AgentEvent::ToolProgress(report) = event else { return mismatch() };
                data.executions.progress(&report.call_id, report.progress);
                A::WaitForInput
            }
            O::ReportUnknownProgress => {
                let AgentEvent::ToolProgress(report) = event else { return mismatch() };
                A::DisplayError(format!("progress for unknown or finished call `{}`", report.call_id))
            }
            O::SendPending => {
                // Leaving `PostToolsHook`: its data goes.
                data.completed_tools = Vec::new();
                data.retries = 0;
                match data.pending_llm_request.take() {
                    Some(request) => A::SendLlmRequest(request),
                    None => mismatch(),
                }
            }
            O::Retry => {
                data.error = None;
                data.origin = None;
                A::SendLlmRequest(ctx.request(&data.conversation, data.retries))
            }
            O::ReportInterrupt => {
                let AgentEvent::Interrupted { cause } = event else { return mismatch() };
                // Back to `WaitingForUserInput`: only the conversation stays.
                *data = LoomData { conversation: mem::take(&mut data.conversation), ..LoomData::default() };
                A::DisplayError(format!("interrupted: {cause}"))
            }
            O::InterruptTools => {
                let AgentEvent::Interrupted { cause } = event else { return mismatch() };
                // The calls still without results are answered and the
                // round recorded, as in Loom; then only the conversation
                // stays.
                data.executions.interrupt_pending(&cause);
                data.executions.record_results(&mut data.conversation);
                *data = LoomData { conversation: mem::take(&mut data.conversation), ..LoomData::default() };
                A::DisplayError(format!("interrupted: {cause}"))
            }
            O::Shutdown => {
                // `ShuttingDown` carries nothing.
                *data = LoomData::default();
                A::Shutdown
            }
        }
    }
}

/// An output that does not fit its event: cannot happen, since the input
/// was picked from that very event; no panic in the dispatch path.
#[cold]
#[inline(never)]
fn mismatch() -> AgentAction {
    super::unhandled("(rust-fsm output without its event)", "")
}
