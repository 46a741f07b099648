//! The Loom machine written with smlang's `statemachine!` DSL.
//!
//! How smlang shapes it:
//! - **Its own event enum.** The macro generates `LoomEvents` with one data
//!   type per variant and cannot match inside a payload, so the nested
//!   `AgentEvent::LlmEvent(StreamEvent::..)` is flattened into `TextDelta`,
//!   `LlmCompleted`, ... by a `From<AgentEvent>` conversion (part of every
//!   measured step).
//! - **State data is read-only.** Guards and actions get a state's data by
//!   `&`, and the next state is rebuilt from what the action returns (even
//!   for a self-loop such as `= _`). Data that must be mutated in place or
//!   moved from state to state — the conversation and the tool executions —
//!   therefore lives in the context (`Agent`); moving it through the states
//!   would mean cloning it on every transition (and, for the conversation,
//!   copying its messages, since the old state still shares them when the
//!   action pushes). States carry what is only read: `CallingLlm(u32)`
//!   retries, `PostToolsHook(HookWait)`, `Error(RetryWait)`.
//! - **No eventless rows**: the transient `ProcessingLlmResponse` is resolved
//!   inline by guarded `LlmCompleted` rows (as `HandLoom` does).
//! - **Actions return nothing to the caller**: each action leaves the
//!   `AgentAction` in the context, and the wrapper takes it out after
//!   `process_event`. `Err(InvalidEvent | TransitionsFailed)` is the
//!   catch-all: fallback action, state unchanged.
//! - **`* + ShutdownRequested`** is smlang's wildcard row; since a wildcard
//!   action would have to take every state's data type at once, it has no
//!   action and the `on_entry_shutting_down` hook does the work.
//!   `* + Interrupted` is written state by state for the same reason.

use agent_fsm_examples::loom::{
    AgentAction, AgentConfig, AgentError, AgentEvent, AgentState, CompletedToolInfo, ConversationContext, ErrorOrigin,
    Executions, LlmRequest, Message, ProviderError, StreamEvent, ToolExecutionOutcome, ToolProgressEvent,
};
use agent_fsm_examples::loom::{AssistantMessage, repeated_id};
use std::mem;

/// A tool's result, as one event payload (smlang takes one type per event).
#[derive(Debug)]
pub(crate) struct ToolResult {
    /// The call it answers.
    call_id: String,
    /// How it ended.
    outcome: ToolExecutionOutcome,
}

/// `PostToolsHook`'s data: read once, when the hook is done.
#[derive(Debug)]
pub(crate) struct HookWait {
    /// The model call to make once the hook is done.
    pending_llm_request: LlmRequest,
    /// What the hook decides on (kept as Loom keeps it, though no row reads
    /// it back).
    _completed_tools: Vec<CompletedToolInfo>,
}

/// `Error`'s data.
#[derive(Debug)]
pub(crate) struct RetryWait {
    /// What failed (kept as Loom keeps it).
    _error: AgentError,
    /// Failed attempts so far.
    retries: u32,
    /// Where it failed, which decides the recovery.
    origin: ErrorOrigin,
}

::smlang::statemachine! {
    name: Loom,
    derive_states: [Debug],
    derive_events: [Debug],
    transitions: {
        *WaitingForUserInput + UserInput(Message) / start_turn = CallingLlm(u32),
        WaitingForUserInput + Interrupted(String) / interrupt = _,

        CallingLlm(u32) + TextDelta(String) / display_delta = _,
        CallingLlm(u32) + ToolCallDelta / skip_fragment = _,
        CallingLlm(u32) + ReasoningDelta / skip_reasoning = _,
        CallingLlm(u32) + LlmCompleted(AssistantMessage) [repeats_an_id] / refuse_reply = WaitingForUserInput,
        CallingLlm(u32) + LlmCompleted(AssistantMessage) [has_tool_calls] / execute_tools = ExecutingTools,
        CallingLlm(u32) + LlmCompleted(AssistantMessage) / finish_turn = WaitingForUserInput,
        CallingLlm(u32) + LlmFailed(ProviderError) [can_retry] / schedule_retry = Error(RetryWait),
        CallingLlm(u32) + LlmFailed(ProviderError) / give_up = WaitingForUserInput,
        CallingLlm(u32) + Interrupted(String) / interrupt_call = WaitingForUserInput,

        ExecutingTools + ToolCompleted(ToolResult) [result_not_pending] / report_unknown_result = _,
        ExecutingTools + ToolCompleted(ToolResult) [more_pending] / complete_tool = _,
        ExecutingTools + ToolCompleted(ToolResult) [round_mutates] / run_hook = PostToolsHook(HookWait),
        ExecutingTools + ToolCompleted(ToolResult) / resume_llm = CallingLlm(u32),
        ExecutingTools + ToolProgress(ToolProgressEvent) [progress_pending] / record_progress = _,
        ExecutingTools + ToolProgress(ToolProgressEvent) / report_unknown_progress = _,
        ExecutingTools + Interrupted(String) / interrupt_tools = WaitingForUserInput,

        PostToolsHook(HookWait) + PostToolsHookCompleted(bool) / send_pending = CallingLlm(u32),
        PostToolsHook(HookWait) + Interrupted(String) / interrupt_hook = WaitingForUserInput,

        Error(RetryWait) + RetryTimeoutFired [llm_failure] / retry = CallingLlm(u32),
        Error(RetryWait) + Interrupted(String) / interrupt_retry = WaitingForUserInput,

        // Listed before the wildcard, which then skips `ShuttingDown`.
        ShuttingDown + ShutdownRequested / shutdown = _,
        _ + ShutdownRequested = ShuttingDown,
    }
}

impl From<AgentEvent> for LoomEvents {
    /// Flattens Loom's nested events into smlang's one-level enum.
    #[inline]
    fn from(event: AgentEvent) -> Self {
        match event {
            AgentEvent::UserInput(message) => LoomEvents::UserInput(message),
            AgentEvent::LlmEvent(StreamEvent::TextDelta(content)) => LoomEvents::TextDelta(content),
            // The row reads nothing of it: the text is dropped here.
            AgentEvent::LlmEvent(StreamEvent::ReasoningDelta(_)) => LoomEvents::ReasoningDelta,
            AgentEvent::LlmEvent(StreamEvent::Completed { message, .. }) => LoomEvents::LlmCompleted(message),
            // Tool-call deltas and any stream event added later: Loom waits
            // through them.
            AgentEvent::LlmEvent(_) => LoomEvents::ToolCallDelta,
            AgentEvent::LlmFailed(error) => LoomEvents::LlmFailed(error),
            AgentEvent::ToolProgress(report) => LoomEvents::ToolProgress(report),
            AgentEvent::ToolCompleted { call_id, outcome } => {
                LoomEvents::ToolCompleted(ToolResult { call_id, outcome })
            }
            AgentEvent::PostToolsHookCompleted { action_taken } => LoomEvents::PostToolsHookCompleted(action_taken),
            AgentEvent::RetryTimeoutFired => LoomEvents::RetryTimeoutFired,
            AgentEvent::ShutdownRequested => LoomEvents::ShutdownRequested,
            AgentEvent::Interrupted { cause } => LoomEvents::Interrupted(cause),
        }
    }
}

/// The context: configuration, the data smlang's states cannot mutate or
/// move (conversation, executions), and the action of the last step.
#[derive(Debug)]
pub(crate) struct Agent {
    /// What the rows read as `ctx` in Loom.
    config: AgentConfig,
    /// The conversation every state but `ShuttingDown` carries in Loom.
    conversation: ConversationContext,
    /// `ExecutingTools`' data in Loom; empty in every other state.
    executions: Executions,
    /// The action the last accepted event produced.
    action: AgentAction,
}

impl LoomStateMachineContext for Agent {
    fn repeats_an_id(&self, _retries: &u32, response: &AssistantMessage) -> Result<bool, ()> {
        Ok(repeated_id(&response.tool_calls).is_some())
    }

    fn has_tool_calls(&self, _retries: &u32, response: &AssistantMessage) -> Result<bool, ()> {
        Ok(!response.tool_calls.is_empty())
    }

    fn can_retry(&self, retries: &u32, error: &ProviderError) -> Result<bool, ()> {
        Ok(error.is_retryable() && retries.saturating_add(1) < self.config.max_retries)
    }

    fn result_not_pending(&self, result: &ToolResult) -> Result<bool, ()> {
        Ok(!self.executions.is_pending(&result.call_id))
    }

    fn more_pending(&self, _result: &ToolResult) -> Result<bool, ()> {
        Ok(self.executions.pending_count() > 1)
    }

    fn round_mutates(&self, result: &ToolResult) -> Result<bool, ()> {
        Ok(self.executions.mutates_with(&result.call_id, &result.outcome, &self.config.mutating_tools))
    }

    fn progress_pending(&self, report: &ToolProgressEvent) -> Result<bool, ()> {
        Ok(self.executions.is_pending(&report.call_id))
    }

    fn llm_failure(&self, wait: &RetryWait) -> Result<bool, ()> {
        Ok(wait.origin == ErrorOrigin::Llm)
    }

    fn start_turn(&mut self, message: Message) -> Result<u32, ()> {
        self.conversation.push(message);
        self.action = AgentAction::SendLlmRequest(self.config.request(&self.conversation, 0));
        Ok(0)
    }

    fn interrupt(&mut self, cause: String) -> Result<(), ()> {
        self.executions = Executions::default();
        self.action = AgentAction::DisplayError(format!("interrupted: {cause}"));
        Ok(())
    }

    fn display_delta(&mut self, retries: &u32, content: String) -> Result<u32, ()> {
        self.action = AgentAction::DisplayMessage(content);
        Ok(*retries)
    }

    fn skip_fragment(&mut self, retries: &u32) -> Result<u32, ()> {
        self.action = AgentAction::WaitForInput;
        Ok(*retries)
    }

    fn skip_reasoning(&mut self, retries: &u32) -> Result<u32, ()> {
        self.action = AgentAction::WaitForInput;
        Ok(*retries)
    }

    fn refuse_reply(&mut self, _retries: &u32, response: AssistantMessage) -> Result<(), ()> {
        let id = repeated_id(&response.tool_calls).unwrap_or_default();
        self.action = AgentAction::DisplayError(format!("the model repeated the tool call id `{id}`; no tool ran"));
        Ok(())
    }

    fn execute_tools(&mut self, _retries: &u32, response: AssistantMessage) -> Result<(), ()> {
        let tool_calls = response.tool_calls.clone();
        self.conversation.push(Message::Assistant(response));
        self.executions = Executions::pending(&tool_calls);
        self.action = AgentAction::ExecuteTools(tool_calls);
        Ok(())
    }

    fn finish_turn(&mut self, _retries: &u32, response: AssistantMessage) -> Result<(), ()> {
        self.conversation.push(Message::Assistant(response));
        self.action = AgentAction::WaitForInput;
        Ok(())
    }

    fn schedule_retry(&mut self, retries: &u32, error: ProviderError) -> Result<RetryWait, ()> {
        let retries = retries.saturating_add(1);
        self.action = AgentAction::ScheduleRetry { attempt: retries, retry_after: error.retry_after() };
        Ok(RetryWait { _error: AgentError::Llm(error), retries, origin: ErrorOrigin::Llm })
    }

    fn give_up(&mut self, _retries: &u32, error: ProviderError) -> Result<(), ()> {
        self.action = AgentAction::DisplayError(format!("llm call failed: {error}"));
        Ok(())
    }

    fn interrupt_call(&mut self, _retries: &u32, cause: String) -> Result<(), ()> {
        self.interrupt(cause)
    }

    fn interrupt_tools(&mut self, cause: String) -> Result<(), ()> {
        // Leaving `ExecutingTools`: the calls still without results are
        // answered and the round recorded, as in Loom.
        let mut executions = mem::take(&mut self.executions);
        executions.interrupt_pending(&cause);
        executions.record_results(&mut self.conversation);
        self.action = AgentAction::DisplayError(format!("interrupted: {cause}"));
        Ok(())
    }

    fn report_unknown_result(&mut self, result: ToolResult) -> Result<(), ()> {
        let call_id = result.call_id;
        self.action = AgentAction::DisplayError(format!("tool result for unknown or finished call `{call_id}`"));
        Ok(())
    }

    fn complete_tool(&mut self, result: ToolResult) -> Result<(), ()> {
        self.executions.complete(&result.call_id, result.outcome);
        self.action = AgentAction::WaitForInput;
        Ok(())
    }

    fn run_hook(&mut self, result: ToolResult) -> Result<HookWait, ()> {
        // Leaving `ExecutingTools`: its executions go, as in Loom.
        let mut executions = mem::take(&mut self.executions);
        executions.complete(&result.call_id, result.outcome);
        let completed_tools = executions.record_results(&mut self.conversation);
        self.action = AgentAction::RunPostToolsHook { completed_tools: completed_tools.clone() };
        Ok(HookWait {
            pending_llm_request: self.config.request(&self.conversation, 0),
            _completed_tools: completed_tools,
        })
    }

    fn resume_llm(&mut self, result: ToolResult) -> Result<u32, ()> {
        let mut executions = mem::take(&mut self.executions);
        executions.complete(&result.call_id, result.outcome);
        executions.record_results(&mut self.conversation);
        self.action = AgentAction::SendLlmRequest(self.config.request(&self.conversation, 0));
        Ok(0)
    }

    fn record_progress(&mut self, report: ToolProgressEvent) -> Result<(), ()> {
        self.executions.progress(&report.call_id, report.progress);
        self.action = AgentAction::WaitForInput;
        Ok(())
    }

    fn report_unknown_progress(&mut self, report: ToolProgressEvent) -> Result<(), ()> {
        let call_id = report.call_id;
        self.action = AgentAction::DisplayError(format!("progress for unknown or finished call `{call_id}`"));
        Ok(())
    }

    fn send_pending(&mut self, wait: &HookWait, _action_taken: bool) -> Result<u32, ()> {
        // The state's data is only lent: the request is cloned (an `Arc`
        // and two integers), where Loom moves it out.
        self.action = AgentAction::SendLlmRequest(wait.pending_llm_request.clone());
        Ok(0)
    }

    fn interrupt_hook(&mut self, _wait: &HookWait, cause: String) -> Result<(), ()> {
        self.interrupt(cause)
    }

    fn retry(&mut self, wait: &RetryWait) -> Result<u32, ()> {
        self.action = AgentAction::SendLlmRequest(self.config.request(&self.conversation, wait.retries));
        Ok(wait.retries)
    }

    fn interrupt_retry(&mut self, _wait: &RetryWait, cause: String) -> Result<(), ()> {
        self.interrupt(cause)
    }

    fn shutdown(&mut self) -> Result<(), ()> {
        self.action = AgentAction::Shutdown;
        Ok(())
    }

    fn on_entry_shutting_down(&mut self) {
        // `ShuttingDown` carries nothing in Loom.
        self.conversation = ConversationContext::default();
        self.executions = Executions::default();
        self.action = AgentAction::Shutdown;
    }
}

/// The smlang machine behind Loom's calling convention: an `AgentEvent` in,
/// an `AgentAction` out. (Not `Debug`: smlang's machine type is not.)
pub(crate) struct SmlangLoom {
    /// The generated machine and its context.
    machine: LoomStateMachine<Agent>,
}

impl SmlangLoom {
    /// A machine resumed in `start`: its data split between the state and
    /// the context as the rows keep it. A transient state is resolved at
    /// once, as `Loom::with_state` does.
    pub(crate) fn with_state(start: AgentState, config: AgentConfig) -> Self {
        let mut executions = Executions::default();
        let (state, conversation) = match crate::hand::settle_transient(start) {
            AgentState::WaitingForUserInput { conversation } => (LoomStates::WaitingForUserInput, conversation),
            AgentState::CallingLlm { retries, conversation } => (LoomStates::CallingLlm(retries), conversation),
            AgentState::ExecutingTools { executions: calls, conversation } => {
                executions = calls;
                (LoomStates::ExecutingTools, conversation)
            }
            AgentState::PostToolsHook { pending_llm_request, completed_tools, conversation } => (
                LoomStates::PostToolsHook(HookWait { pending_llm_request, _completed_tools: completed_tools }),
                conversation,
            ),
            AgentState::Error { error, retries, origin, conversation } => {
                (LoomStates::Error(RetryWait { _error: error, retries, origin }), conversation)
            }
            AgentState::ShuttingDown => (LoomStates::ShuttingDown, ConversationContext::default()),
            AgentState::ProcessingLlmResponse { .. } => unreachable!("a transient state is settled above"),
        };
        let agent = Agent { config, conversation, executions, action: AgentAction::WaitForInput };
        SmlangLoom { machine: LoomStateMachine::new_with_state(agent, state) }
    }

    /// Feeds one event and returns the action to perform.
    #[inline]
    pub(crate) fn handle_event(&mut self, event: AgentEvent) -> AgentAction {
        let name = event.name();
        match self.machine.process_event(LoomEvents::from(event)) {
            Ok(_) => mem::replace(&mut self.machine.context_mut().action, AgentAction::WaitForInput),
            Err(_) => super::unhandled(self.state_name(), name),
        }
    }

    /// The current state's name, as Loom spells it.
    pub(crate) fn state_name(&self) -> &'static str {
        match self.machine.state() {
            LoomStates::WaitingForUserInput => "WaitingForUserInput",
            LoomStates::CallingLlm(_) => "CallingLlm",
            LoomStates::ExecutingTools => "ExecutingTools",
            LoomStates::PostToolsHook(_) => "PostToolsHook",
            LoomStates::Error(_) => "Error",
            LoomStates::ShuttingDown => "ShuttingDown",
        }
    }
}
