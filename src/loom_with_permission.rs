//! Loom with a permission step: before mutating tools run, the agent waits
//! for the user to allow them. Declared as a variant of [`crate::loom`]:
//! one added state, two added events, one added action, three added rows
//! and one replaced row; everything else is Loom's table, untouched.
//!
//! - `ProcessingLlmResponse` with a mutating tool call goes to
//!   `WaitingForPermission` (`AskPermission`) instead of `ExecutingTools`.
//! - `PermissionGranted` runs the calls; `PermissionDenied` answers every
//!   call with a "denied" tool result (so the next request has no
//!   unanswered call) and returns to waiting for input with a message.
//! - Replaced: a final LLM failure says `gave up: ..` instead of the bare
//!   error.
//! - Inherited without a word: `ShutdownRequested` from every state,
//!   `WaitingForPermission` included.

use crate::loom::{ConversationContext, ToolCall};

pub use machine::{AgentAction, AgentEvent, AgentState, LoomWithPermission};

/// Whether any call uses a tool the configuration calls mutating.
#[must_use]
pub fn needs_permission(calls: &[ToolCall], mutating: &[String]) -> bool {
    calls.iter().any(|c| mutating.contains(&c.name))
}

/// Answers every call with a "denied" tool result.
pub fn deny_all(calls: &[ToolCall], reason: &str, conversation: &mut ConversationContext) {
    for call in calls {
        conversation.push(crate::loom::Message::tool(call.id.clone(), format!("denied by the user: {reason}")));
    }
}

/// The variant: Loom's table plus the differences below.
#[agent_fsm::state_machine(extends = crate::loom::machine::loom_machine, name = LoomWithPermission)]
pub mod machine {
    use super::{deny_all, needs_permission};
    use crate::loom::*;

    /// States added to Loom's.
    #[states]
    pub enum Added {
        /// Mutating tools wait for the user's permission.
        WaitingForPermission {
            /// The calls to allow or deny.
            calls: Vec<ToolCall>,
        },
    }

    /// Events added to Loom's.
    #[events]
    pub enum AddedEvents {
        /// The user allows the calls.
        PermissionGranted,
        /// The user denies them.
        PermissionDenied {
            /// Why, shown to the model.
            reason: String,
        },
    }

    /// Actions added to Loom's.
    #[actions]
    pub enum AddedActions {
        /// Ask the user to allow these calls.
        AskPermission(Vec<ToolCall>),
    }

    transitions! {
        ProcessingLlmResponse { response } [needs_permission(&response.tool_calls, &ctx.mutating_tools)]
            => WaitingForPermission { calls: response.tool_calls } / AskPermission(response.tool_calls.clone()),
        WaitingForPermission { calls } + PermissionGranted
            => { let executions = Executions::pending(&calls); } ExecutingTools { executions } / ExecuteTools(calls),
        WaitingForPermission { calls } + PermissionDenied { reason }
            => { deny_all(&calls, &reason, &mut conversation); }
               WaitingForUserInput / DisplayError(format!("permission denied: {reason}")),

        replace CallingLlm + LlmEvent(LlmEvent::Error(error))
            => WaitingForUserInput / DisplayError(format!("gave up: {error}")),
    }
}
