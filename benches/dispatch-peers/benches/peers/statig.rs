//! The Loom machine written with statig's hierarchical `#[state_machine]`.
//!
//! How statig shapes it:
//! - **State-local storage carries Loom's data**: each state handler gets
//!   its fields by `&mut`, and a transition builds the next state from
//!   them. Moving the conversation out of a `&mut` takes `mem::take`,
//!   which leaves a fresh empty conversation behind (one allocation, for
//!   its `Arc`) in the state being left.
//! - **Events arrive by `&`** (`handle(&event)`), so whatever a row moves
//!   out of its event in Loom is cloned here: the user message, each
//!   `TextDelta`'s text, the tool calls, each tool outcome. The wrapper
//!   drops the event afterwards.
//! - **`* + ShutdownRequested` and `* + Interrupted`** are a superstate,
//!   `active`, over every state but `ShuttingDown`: it borrows the
//!   conversation from whichever state is current. `WaitingForUserInput`
//!   answers `Interrupted` itself (it stays where it is), and so does
//!   `ExecutingTools` (it answers the calls still without results first).
//! - **No eventless states**: the transient `ProcessingLlmResponse` is
//!   resolved inline in `calling_llm` (as `HandLoom` does).
//! - **The action goes out through the external context** (`&mut
//!   Option<AgentAction>`), since `handle` returns nothing. An event that
//!   climbs to statig's implicit top state leaves it `None`: that is the
//!   catch-all, and the wrapper returns Loom's fallback action.

use agent_fsm_examples::loom::{
    AgentAction, AgentConfig, AgentError, AgentEvent, AgentState, CompletedToolInfo, ConversationContext, ErrorOrigin,
    Executions, LlmRequest, Message, StreamEvent, repeated_id,
};
use statig::prelude::*;
use std::mem;

/// Shared storage: what the rows read as `ctx` in Loom.
#[derive(Debug)]
pub(crate) struct Agent {
    /// The agent's configuration.
    config: AgentConfig,
}

#[state_machine(
    initial = "State::waiting_for_user_input(ConversationContext::default())",
    state(derive(Debug)),
    superstate(derive(Debug))
)]
impl Agent {
    /// Idle between turns.
    #[state(superstate = "active")]
    fn waiting_for_user_input(
        &self,
        conversation: &mut ConversationContext,
        context: &mut Option<AgentAction>,
        event: &AgentEvent,
    ) -> Outcome<State> {
        match event {
            AgentEvent::UserInput(message) => {
                conversation.push(message.clone());
                *context = Some(AgentAction::SendLlmRequest(self.config.request(conversation, 0)));
                Transition(State::calling_llm(0, mem::take(conversation)))
            }
            AgentEvent::Interrupted { cause } => {
                *context = Some(AgentAction::DisplayError(format!("interrupted: {cause}")));
                Handled
            }
            _ => Super,
        }
    }

    /// A model call is in flight.
    #[state(superstate = "active")]
    fn calling_llm(
        &self,
        retries: &mut u32,
        conversation: &mut ConversationContext,
        context: &mut Option<AgentAction>,
        event: &AgentEvent,
    ) -> Outcome<State> {
        match event {
            AgentEvent::LlmEvent(StreamEvent::TextDelta(content)) => {
                *context = Some(AgentAction::DisplayMessage(content.clone()));
                Handled
            }
            AgentEvent::LlmEvent(StreamEvent::Completed { message: response, .. }) => {
                if let Some(id) = repeated_id(&response.tool_calls) {
                    *context = Some(AgentAction::DisplayError(format!(
                        "the model repeated the tool call id `{id}`; no tool ran"
                    )));
                    return Transition(State::waiting_for_user_input(mem::take(conversation)));
                }
                conversation.push(Message::Assistant(response.clone()));
                // `ProcessingLlmResponse`, resolved inline.
                if !response.tool_calls.is_empty() {
                    let executions = Executions::pending(&response.tool_calls);
                    *context = Some(AgentAction::ExecuteTools(response.tool_calls.clone()));
                    Transition(State::executing_tools(executions, mem::take(conversation)))
                } else {
                    *context = Some(AgentAction::WaitForInput);
                    Transition(State::waiting_for_user_input(mem::take(conversation)))
                }
            }
            AgentEvent::LlmEvent(StreamEvent::ReasoningDelta(_)) => {
                *context = Some(AgentAction::WaitForInput);
                Handled
            }
            // Tool-call deltas and any stream event added later.
            AgentEvent::LlmEvent(_) => {
                *context = Some(AgentAction::WaitForInput);
                Handled
            }
            AgentEvent::LlmFailed(error) => {
                if error.is_retryable() && retries.saturating_add(1) < self.config.max_retries {
                    let retries = retries.saturating_add(1);
                    *context = Some(AgentAction::ScheduleRetry { attempt: retries, retry_after: error.retry_after() });
                    Transition(State::error(
                        AgentError::Llm(error.clone()),
                        retries,
                        ErrorOrigin::Llm,
                        mem::take(conversation),
                    ))
                } else {
                    *context = Some(AgentAction::DisplayError(format!("llm call failed: {error}")));
                    Transition(State::waiting_for_user_input(mem::take(conversation)))
                }
            }
            _ => Super,
        }
    }

    /// Tool calls of one round, tracked by call id.
    #[state(superstate = "active")]
    fn executing_tools(
        &self,
        executions: &mut Executions,
        conversation: &mut ConversationContext,
        context: &mut Option<AgentAction>,
        event: &AgentEvent,
    ) -> Outcome<State> {
        match event {
            AgentEvent::ToolCompleted { call_id, outcome } => {
                if !executions.is_pending(call_id) {
                    *context = Some(AgentAction::DisplayError(format!(
                        "tool result for unknown or finished call `{call_id}`"
                    )));
                    return Handled;
                }
                if executions.pending_count() > 1 {
                    executions.complete(call_id, outcome.clone());
                    *context = Some(AgentAction::WaitForInput);
                    return Handled;
                }
                let mutates = executions.mutates_with(call_id, outcome, &self.config.mutating_tools);
                executions.complete(call_id, outcome.clone());
                if mutates {
                    let completed_tools = executions.record_results(conversation);
                    let pending_llm_request = self.config.request(conversation, 0);
                    *context = Some(AgentAction::RunPostToolsHook { completed_tools: completed_tools.clone() });
                    Transition(State::post_tools_hook(pending_llm_request, completed_tools, mem::take(conversation)))
                } else {
                    executions.record_results(conversation);
                    *context = Some(AgentAction::SendLlmRequest(self.config.request(conversation, 0)));
                    Transition(State::calling_llm(0, mem::take(conversation)))
                }
            }
            AgentEvent::ToolProgress(report) => {
                if executions.is_pending(&report.call_id) {
                    executions.progress(&report.call_id, report.progress.clone());
                    *context = Some(AgentAction::WaitForInput);
                } else {
                    let call_id = &report.call_id;
                    *context =
                        Some(AgentAction::DisplayError(format!("progress for unknown or finished call `{call_id}`")));
                }
                Handled
            }
            // Answered here, before `active`'s row: the calls still
            // without results get an "interrupted" error and the round is
            // recorded, as in Loom.
            AgentEvent::Interrupted { cause } => {
                executions.interrupt_pending(cause);
                executions.record_results(conversation);
                *context = Some(AgentAction::DisplayError(format!("interrupted: {cause}")));
                Transition(State::waiting_for_user_input(mem::take(conversation)))
            }
            _ => Super,
        }
    }

    /// After a mutating tool: the hook runs before the next model call.
    #[state(superstate = "active")]
    fn post_tools_hook(
        pending_llm_request: &mut LlmRequest,
        completed_tools: &mut Vec<CompletedToolInfo>,
        conversation: &mut ConversationContext,
        context: &mut Option<AgentAction>,
        event: &AgentEvent,
    ) -> Outcome<State> {
        // Kept as Loom keeps it; no row reads it back.
        let _ = completed_tools;
        match event {
            AgentEvent::PostToolsHookCompleted { .. } => {
                // The request is the state's own: cloned out of the `&mut`
                // (an `Arc` and two integers), as the state is left anyway.
                *context = Some(AgentAction::SendLlmRequest(pending_llm_request.clone()));
                Transition(State::calling_llm(0, mem::take(conversation)))
            }
            _ => Super,
        }
    }

    /// A failed call waiting for its retry timer.
    #[state(superstate = "active")]
    fn error(
        &self,
        error: &mut AgentError,
        retries: &mut u32,
        origin: &mut ErrorOrigin,
        conversation: &mut ConversationContext,
        context: &mut Option<AgentAction>,
        event: &AgentEvent,
    ) -> Outcome<State> {
        // Kept as Loom keeps it; no row reads it back.
        let _ = error;
        match event {
            AgentEvent::RetryTimeoutFired if *origin == ErrorOrigin::Llm => {
                *context = Some(AgentAction::SendLlmRequest(self.config.request(conversation, *retries)));
                Transition(State::calling_llm(*retries, mem::take(conversation)))
            }
            _ => Super,
        }
    }

    /// The end.
    #[state]
    fn shutting_down(context: &mut Option<AgentAction>, event: &AgentEvent) -> Outcome<State> {
        match event {
            AgentEvent::ShutdownRequested => {
                *context = Some(AgentAction::Shutdown);
                Handled
            }
            _ => Super,
        }
    }

    /// Loom's `*` rows, for every state that carries the conversation.
    #[superstate]
    fn active(
        conversation: &mut ConversationContext,
        context: &mut Option<AgentAction>,
        event: &AgentEvent,
    ) -> Outcome<State> {
        match event {
            AgentEvent::ShutdownRequested => {
                *context = Some(AgentAction::Shutdown);
                Transition(State::shutting_down())
            }
            AgentEvent::Interrupted { cause } => {
                *context = Some(AgentAction::DisplayError(format!("interrupted: {cause}")));
                Transition(State::waiting_for_user_input(mem::take(conversation)))
            }
            _ => Super,
        }
    }
}

/// The statig machine behind Loom's calling convention: an `AgentEvent` in,
/// an `AgentAction` out.
#[derive(Debug)]
pub(crate) struct StatigLoom {
    /// The statig machine, initialised.
    machine: InitializedStateMachine<Agent>,
}

impl StatigLoom {
    /// A machine resumed in `start`, its data in the state's local
    /// storage. A transient state is resolved at once, as
    /// `Loom::with_state` does.
    pub(crate) fn with_state(start: AgentState, config: AgentConfig) -> Self {
        let state = match crate::hand::settle_transient(start) {
            AgentState::WaitingForUserInput { conversation } => State::waiting_for_user_input(conversation),
            AgentState::CallingLlm { retries, conversation } => State::calling_llm(retries, conversation),
            AgentState::ExecutingTools { executions, conversation } => State::executing_tools(executions, conversation),
            AgentState::PostToolsHook { pending_llm_request, completed_tools, conversation } => {
                State::post_tools_hook(pending_llm_request, completed_tools, conversation)
            }
            AgentState::Error { error, retries, origin, conversation } => {
                State::error(error, retries, origin, conversation)
            }
            AgentState::ShuttingDown => State::shutting_down(),
            AgentState::ProcessingLlmResponse { .. } => unreachable!("a transient state is settled above"),
        };
        // statig lets the state of a machine not yet initialised be set.
        let mut machine = Agent { config }.uninitialized_state_machine();
        *machine.state_mut() = state;
        StatigLoom { machine: machine.init_with_context(&mut None) }
    }

    /// Feeds one event and returns the action to perform.
    #[inline]
    pub(crate) fn handle_event(&mut self, event: AgentEvent) -> AgentAction {
        let mut action = None;
        self.machine.handle_with_context(&event, &mut action);
        match action {
            Some(action) => action,
            None => super::unhandled(self.state_name(), event.name()),
        }
    }

    /// The current state's name, as Loom spells it.
    pub(crate) fn state_name(&self) -> &'static str {
        match self.machine.state() {
            State::WaitingForUserInput { .. } => "WaitingForUserInput",
            State::CallingLlm { .. } => "CallingLlm",
            State::ExecutingTools { .. } => "ExecutingTools",
            State::PostToolsHook { .. } => "PostToolsHook",
            State::Error { .. } => "Error",
            State::ShuttingDown {} => "ShuttingDown",
        }
    }
}
