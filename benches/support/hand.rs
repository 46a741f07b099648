//! `HandLoom`: the Loom table of `src/loom.rs` written by hand over the same
//! types, as the baseline the generated `Loom` is measured against.
//!
//! Row for row the same semantics as the generated `handle_event`:
//! - rows that keep their state (`CallingLlm + TextDelta`, the
//!   `ExecutingTools` self-loops, `ShuttingDown + ShutdownRequested`) mutate
//!   the state in place through `&mut`;
//! - rows that change state move the state out with
//!   `std::mem::replace(&mut self.state, AgentState::ShuttingDown)` and
//!   rebuild the target from its fields;
//! - the transient `ProcessingLlmResponse` is never stored: the
//!   `CallingLlm + Completed` row decides tools-or-done inline;
//! - the row bodies (effects, guards, payloads) are the table's own code,
//!   so the two differ only in dispatch, not in what the rows do;
//! - an event no row accepts leaves the state unchanged, logs the same
//!   `tracing` warning and returns `WaitForInput` (the table's fallback).

use agent_fsm_examples::loom::{
    AgentAction, AgentConfig, AgentError, AgentEvent, AgentState, ErrorOrigin, Executions, Message, StreamEvent,
};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many events the hand-written machine did not accept (catch-all and
/// refused pairs), over the whole process: the verification asserts that
/// the benched traces never get there.
pub(crate) static HAND_UNHANDLED: AtomicUsize = AtomicUsize::new(0);

/// The hand-written machine.
#[derive(Debug)]
pub(crate) struct HandLoom {
    pub(crate) state: AgentState,
    pub(crate) config: AgentConfig,
}

impl HandLoom {
    /// A machine resumed in `state`.
    /// A transient state is resolved at once, as the generated
    /// `with_state` does (the action of that step is dropped).
    pub(crate) fn with_state(state: AgentState, config: AgentConfig) -> Self {
        HandLoom { state: settle_transient(state), config }
    }

    /// Feeds one event and returns the action to perform.
    ///
    /// Dispatches on the event first, then checks the state: the shape
    /// that measured fastest of the ones tried (one `match (&mut state,
    /// event)` over the pair first copies the whole event into the
    /// scrutinee tuple). Always inlined into its caller, as the generated
    /// `handle_event` is: left to itself, the compiler inlines it in some
    /// crates and not in others, which moved its cost by 10 %.
    #[inline(always)]
    pub(crate) fn handle_event(&mut self, event: AgentEvent) -> AgentAction {
        use AgentAction as A;
        use AgentEvent as E;
        use AgentState as S;
        let ctx = &self.config;
        let state = &mut self.state;
        match event {
            // --- CallingLlm + LlmEvent ----------------------------------------
            E::LlmEvent(StreamEvent::TextDelta(content)) => match state {
                S::CallingLlm { .. } => A::DisplayMessage(content),
                _ => unhandled(state, "LlmEvent"),
            },
            E::LlmEvent(StreamEvent::ToolCallDelta { .. }) => match state {
                S::CallingLlm { .. } => A::WaitForInput,
                _ => unhandled(state, "LlmEvent"),
            },
            E::LlmEvent(StreamEvent::Completed { message: response, .. }) => {
                if !matches!(state, S::CallingLlm { .. }) {
                    return unhandled(state, "LlmEvent");
                }
                // Calls are told apart by id: a reply that repeats one runs
                // nothing (the table's guarded row above its plain one).
                if let Some(id) = agent_fsm_examples::loom::repeated_id(&response.tool_calls) {
                    let message = format!("the model repeated the tool call id `{id}`; no tool ran");
                    let S::CallingLlm { conversation, .. } = std::mem::replace(state, S::ShuttingDown) else {
                        return restore_unreachable();
                    };
                    *state = S::WaitingForUserInput { conversation };
                    return A::DisplayError(message);
                }
                let S::CallingLlm { mut conversation, .. } = std::mem::replace(state, S::ShuttingDown) else {
                    return restore_unreachable();
                };
                conversation.push(Message::Assistant(response.clone()));
                // ProcessingLlmResponse, resolved inline.
                if !response.tool_calls.is_empty() {
                    let executions = Executions::pending(&response.tool_calls);
                    let action = A::ExecuteTools(response.tool_calls);
                    *state = S::ExecutingTools { executions, conversation };
                    action
                } else {
                    *state = S::WaitingForUserInput { conversation };
                    A::WaitForInput
                }
            }
            // The library's stream events are `#[non_exhaustive]`: any
            // other is a delta the table waits through.
            E::LlmEvent(_) => match state {
                S::CallingLlm { .. } => A::WaitForInput,
                _ => unhandled(state, "LlmEvent"),
            },
            E::LlmFailed(error) => {
                if !matches!(state, S::CallingLlm { .. }) {
                    return unhandled(state, "LlmFailed");
                }
                let S::CallingLlm { retries, conversation } = std::mem::replace(state, S::ShuttingDown) else {
                    return restore_unreachable();
                };
                if error.is_retryable() && retries.saturating_add(1) < ctx.max_retries {
                    let retry_after = error.retry_after();
                    *state = S::Error {
                        error: AgentError::Llm(error),
                        retries: retries.saturating_add(1),
                        origin: ErrorOrigin::Llm,
                        conversation,
                    };
                    A::ScheduleRetry { attempt: retries.saturating_add(1), retry_after }
                } else {
                    let action = A::DisplayError(format!("llm call failed: {error}"));
                    *state = S::WaitingForUserInput { conversation };
                    action
                }
            }

            // --- WaitingForUserInput + UserInput ------------------------------
            E::UserInput(msg) => {
                if !matches!(state, S::WaitingForUserInput { .. }) {
                    return unhandled(state, "UserInput");
                }
                let S::WaitingForUserInput { mut conversation } = std::mem::replace(state, S::ShuttingDown) else {
                    return restore_unreachable();
                };
                conversation.push(msg);
                let action = A::SendLlmRequest(ctx.request(&conversation, 0));
                *state = S::CallingLlm { retries: 0, conversation };
                action
            }

            // --- ExecutingTools + ToolCompleted / ToolProgress ----------------
            E::ToolCompleted { call_id, outcome } => {
                let S::ExecutingTools { executions, .. } = state else {
                    return unhandled(state, "ToolCompleted");
                };
                let Some(at) = executions.pending_at(&call_id) else {
                    return A::DisplayError(format!("tool result for unknown or finished call `{call_id}`"));
                };
                if executions.pending_count() > 1 {
                    executions.complete_at(at, outcome);
                    return A::WaitForInput;
                }
                let mutates = executions.mutates_at(at, &outcome, &ctx.mutating_tools);
                let S::ExecutingTools { mut executions, mut conversation } = std::mem::replace(state, S::ShuttingDown)
                else {
                    return restore_unreachable();
                };
                executions.complete_at(at, outcome);
                if mutates {
                    let completed_tools = executions.record_results(&mut conversation);
                    let action = A::RunPostToolsHook { completed_tools: completed_tools.clone() };
                    *state = S::PostToolsHook {
                        pending_llm_request: ctx.request(&conversation, 0),
                        completed_tools,
                        conversation,
                    };
                    action
                } else {
                    executions.record_results(&mut conversation);
                    let action = A::SendLlmRequest(ctx.request(&conversation, 0));
                    *state = S::CallingLlm { retries: 0, conversation };
                    action
                }
            }
            E::ToolProgress(report) => {
                let S::ExecutingTools { executions, .. } = state else {
                    return unhandled(state, "ToolProgress");
                };
                if let Some(at) = executions.pending_at(&report.call_id) {
                    executions.progress_at(at, report.progress);
                    A::WaitForInput
                } else {
                    A::DisplayError(format!("progress for unknown or finished call `{}`", report.call_id))
                }
            }

            // --- PostToolsHook + PostToolsHookCompleted -----------------------
            E::PostToolsHookCompleted { .. } => {
                if !matches!(state, S::PostToolsHook { .. }) {
                    return unhandled(state, "PostToolsHookCompleted");
                }
                let S::PostToolsHook { pending_llm_request, conversation, .. } =
                    std::mem::replace(state, S::ShuttingDown)
                else {
                    return restore_unreachable();
                };
                *state = S::CallingLlm { retries: 0, conversation };
                A::SendLlmRequest(pending_llm_request)
            }

            // --- Error { origin: Llm } + RetryTimeoutFired --------------------
            E::RetryTimeoutFired => {
                if !matches!(state, S::Error { origin: ErrorOrigin::Llm, .. }) {
                    return unhandled(state, "RetryTimeoutFired");
                }
                let S::Error { retries, conversation, .. } = std::mem::replace(state, S::ShuttingDown) else {
                    return restore_unreachable();
                };
                let action = A::SendLlmRequest(ctx.request(&conversation, retries));
                *state = S::CallingLlm { retries, conversation };
                action
            }

            // --- * + ShutdownRequested ----------------------------------------
            E::ShutdownRequested => match state {
                // `*` covers the states that take events, and `ShuttingDown`
                // itself (kept in place); a transient state is never current
                // (only `with_state` can put the machine there).
                S::ProcessingLlmResponse { .. } => unhandled(state, "ShutdownRequested"),
                S::ShuttingDown => A::Shutdown,
                _ => {
                    *state = S::ShuttingDown;
                    A::Shutdown
                }
            },

            // --- * + Interrupted ----------------------------------------------
            E::Interrupted { cause } => match state {
                S::WaitingForUserInput { .. } => A::DisplayError(format!("interrupted: {cause}")),
                S::ProcessingLlmResponse { .. } | S::ShuttingDown => unhandled(state, "Interrupted"),
                // Calls still without results are answered, and the
                // round recorded, before the turn ends.
                S::ExecutingTools { .. } => {
                    let S::ExecutingTools { mut executions, mut conversation } =
                        std::mem::replace(state, S::ShuttingDown)
                    else {
                        return restore_unreachable();
                    };
                    executions.interrupt_pending(&cause);
                    executions.record_results(&mut conversation);
                    *state = S::WaitingForUserInput { conversation };
                    A::DisplayError(format!("interrupted: {cause}"))
                }
                _ => {
                    let action = A::DisplayError(format!("interrupted: {cause}"));
                    let (S::CallingLlm { conversation, .. }
                    | S::PostToolsHook { conversation, .. }
                    | S::Error { conversation, .. }) = std::mem::replace(state, S::ShuttingDown)
                    else {
                        return restore_unreachable();
                    };
                    *state = S::WaitingForUserInput { conversation };
                    action
                }
            },
        }
    }
}

/// `ProcessingLlmResponse`'s eventless rows, for `with_state`.
pub(crate) fn settle_transient(state: AgentState) -> AgentState {
    match state {
        AgentState::ProcessingLlmResponse { response, conversation } => {
            if !response.tool_calls.is_empty() {
                AgentState::ExecutingTools { executions: Executions::pending(&response.tool_calls), conversation }
            } else {
                AgentState::WaitingForUserInput { conversation }
            }
        }
        other => other,
    }
}

/// The catch-all (and the refused `Error { origin: Tool/Io } +
/// RetryTimeoutFired`): state unchanged, a warning, the fallback action.
#[cold]
#[inline(never)]
pub(crate) fn unhandled(state: &AgentState, event: &'static str) -> AgentAction {
    HAND_UNHANDLED.fetch_add(1, Ordering::Relaxed);
    tracing::warn!(
        state = state.name(),
        event,
        "no row for this state and event; state unchanged, fallback action returned"
    );
    AgentAction::WaitForInput
}

/// The `else` of a move-out whose variant was matched a moment before:
/// unreachable, and written without a panic, as the generated code does.
/// (The placeholder `ShuttingDown` stays; it cannot happen.)
#[cold]
#[inline(never)]
pub(crate) fn restore_unreachable() -> AgentAction {
    HAND_UNHANDLED.fetch_add(1, Ordering::Relaxed);
    AgentAction::WaitForInput
}
