//! `HandTupleLoom`: the same hand-written Loom table as `hand.rs`, but in
//! the generated code's shape: one `match (&mut self.state, event)` over
//! the pair, in-place arms through `&mut`, moving arms through
//! `std::mem::replace`. Not the baseline (`HandLoom` is faster); it is
//! measured to tell how much of the generated code's extra cost comes from
//! that shape alone and how much from what the macro adds on top of it.

use super::hand::{restore_unreachable, settle_transient, unhandled};
use agent_fsm_examples::loom::{
    AgentAction, AgentConfig, AgentError, AgentEvent, AgentState, ErrorOrigin, Executions, LlmEvent, Message,
};

/// The hand-written machine, tuple-shaped.
#[derive(Debug)]
pub(crate) struct HandTupleLoom {
    pub(crate) state: AgentState,
    pub(crate) config: AgentConfig,
}

impl HandTupleLoom {
    /// A machine resumed in `state`.
    /// A transient state is resolved at once, as the generated
    /// `with_state` does (the action of that step is dropped).
    pub(crate) fn with_state(state: AgentState, config: AgentConfig) -> Self {
        HandTupleLoom { state: settle_transient(state), config }
    }

    /// Feeds one event and returns the action to perform.
    #[inline]
    pub(crate) fn handle_event(&mut self, event: AgentEvent) -> AgentAction {
        use AgentAction as A;
        use AgentEvent as E;
        use AgentState as S;
        let ctx = &self.config;
        match (&mut self.state, event) {
            // --- CallingLlm -------------------------------------------------
            (S::CallingLlm { .. }, E::LlmEvent(LlmEvent::TextDelta { content })) => A::DisplayMessage(content),
            (S::CallingLlm { .. }, E::LlmEvent(LlmEvent::ToolCallDelta { .. })) => A::WaitForInput,
            (s @ S::CallingLlm { .. }, E::LlmEvent(LlmEvent::Completed(response))) => {
                let S::CallingLlm { mut conversation, .. } = std::mem::replace(s, S::ShuttingDown) else {
                    return restore_unreachable();
                };
                conversation.push(Message::assistant(response.content.clone(), response.tool_calls.clone()));
                // ProcessingLlmResponse, resolved inline.
                if !response.tool_calls.is_empty() {
                    let executions = Executions::pending(&response.tool_calls);
                    let action = A::ExecuteTools(response.tool_calls);
                    *s = S::ExecutingTools { executions, conversation };
                    action
                } else {
                    *s = S::WaitingForUserInput { conversation };
                    A::WaitForInput
                }
            }
            (s @ S::CallingLlm { .. }, E::LlmEvent(LlmEvent::Error(error))) => {
                let S::CallingLlm { retries, conversation } = std::mem::replace(s, S::ShuttingDown) else {
                    return restore_unreachable();
                };
                if retries.saturating_add(1) < ctx.max_retries {
                    *s = S::Error {
                        error: AgentError::Llm(error),
                        retries: retries.saturating_add(1),
                        origin: ErrorOrigin::Llm,
                        conversation,
                    };
                    A::ScheduleRetry { attempt: retries.saturating_add(1) }
                } else {
                    let action = A::DisplayError(error.to_string());
                    *s = S::WaitingForUserInput { conversation };
                    action
                }
            }

            // --- WaitingForUserInput ----------------------------------------
            (s @ S::WaitingForUserInput { .. }, E::UserInput(msg)) => {
                let S::WaitingForUserInput { mut conversation } = std::mem::replace(s, S::ShuttingDown) else {
                    return restore_unreachable();
                };
                conversation.push(msg);
                let action = A::SendLlmRequest(ctx.request(&conversation, 0));
                *s = S::CallingLlm { retries: 0, conversation };
                action
            }

            // --- ExecutingTools ---------------------------------------------
            (S::ExecutingTools { executions, .. }, E::ToolCompleted { call_id, outcome }) => {
                if !executions.is_pending(&call_id) {
                    A::DisplayError(format!("tool result for unknown or finished call `{call_id}`"))
                } else if executions.pending_count() > 1 {
                    executions.complete(&call_id, outcome);
                    A::WaitForInput
                } else {
                    let mutates = executions.mutates_with(&call_id, &outcome, &ctx.mutating_tools);
                    let S::ExecutingTools { mut executions, mut conversation } =
                        std::mem::replace(&mut self.state, S::ShuttingDown)
                    else {
                        return restore_unreachable();
                    };
                    executions.complete(&call_id, outcome);
                    if mutates {
                        let completed_tools = executions.record_results(&mut conversation);
                        let action = A::RunPostToolsHook { completed_tools: completed_tools.clone() };
                        self.state = S::PostToolsHook {
                            pending_llm_request: ctx.request(&conversation, 0),
                            completed_tools,
                            conversation,
                        };
                        action
                    } else {
                        executions.record_results(&mut conversation);
                        let action = A::SendLlmRequest(ctx.request(&conversation, 0));
                        self.state = S::CallingLlm { retries: 0, conversation };
                        action
                    }
                }
            }
            (S::ExecutingTools { executions, .. }, E::ToolProgress(report)) => {
                if executions.is_pending(&report.call_id) {
                    executions.progress(&report.call_id, report.progress);
                    A::WaitForInput
                } else {
                    A::DisplayError(format!("progress for unknown or finished call `{}`", report.call_id))
                }
            }

            // --- PostToolsHook ----------------------------------------------
            (s @ S::PostToolsHook { .. }, E::PostToolsHookCompleted { .. }) => {
                let S::PostToolsHook { pending_llm_request, conversation, .. } = std::mem::replace(s, S::ShuttingDown)
                else {
                    return restore_unreachable();
                };
                *s = S::CallingLlm { retries: 0, conversation };
                A::SendLlmRequest(pending_llm_request)
            }

            // --- Error ------------------------------------------------------
            (s @ S::Error { origin: ErrorOrigin::Llm, .. }, E::RetryTimeoutFired) => {
                let S::Error { retries, conversation, .. } = std::mem::replace(s, S::ShuttingDown) else {
                    return restore_unreachable();
                };
                let action = A::SendLlmRequest(ctx.request(&conversation, retries));
                *s = S::CallingLlm { retries, conversation };
                action
            }

            // --- * + ShutdownRequested --------------------------------------
            (S::ShuttingDown, E::ShutdownRequested) => A::Shutdown,
            (
                s @ (S::WaitingForUserInput { .. }
                | S::CallingLlm { .. }
                | S::ExecutingTools { .. }
                | S::PostToolsHook { .. }
                | S::Error { .. }),
                E::ShutdownRequested,
            ) => {
                *s = S::ShuttingDown;
                A::Shutdown
            }

            // --- * + Interrupted --------------------------------------------
            (S::WaitingForUserInput { .. }, E::Interrupted { cause }) => {
                A::DisplayError(format!("interrupted: {cause}"))
            }
            (
                s @ (S::CallingLlm { .. } | S::ExecutingTools { .. } | S::PostToolsHook { .. } | S::Error { .. }),
                E::Interrupted { cause },
            ) => {
                let action = A::DisplayError(format!("interrupted: {cause}"));
                let (S::CallingLlm { conversation, .. }
                | S::ExecutingTools { conversation, .. }
                | S::PostToolsHook { conversation, .. }
                | S::Error { conversation, .. }) = std::mem::replace(s, S::ShuttingDown)
                else {
                    return restore_unreachable();
                };
                *s = S::WaitingForUserInput { conversation };
                action
            }

            // --- no row accepts the event -----------------------------------
            (s, event) => unhandled(s, event.name()),
        }
    }
}
