//! Loom with a permission step: before any tool that is not known to only
//! read runs, the agent waits for the user to allow it. Declared as a variant of [`crate::loom`]:
//! one added state, two added events, one added action, seven added rows
//! and one replaced row; everything else is Loom's table, untouched.
//!
//! - `ProcessingLlmResponse` with a call of a tool not listed in
//!   [`AgentConfig::read_only_tools`](crate::loom::AgentConfig::read_only_tools)
//!   goes to `WaitingForPermission` (`AskPermission`) instead of
//!   `ExecutingTools`. The list names what may run unasked, not what must
//!   ask: a tool nobody listed (an MCP server's, a name the model made up)
//!   asks.
//! - **Replies name their request.** Each request has an id the machine
//!   derives from the request's position (the conversation's length when
//!   it was asked) and from the calls it asks about ([`request_id`]). The
//!   conversation only grows and every request follows a new reply of the
//!   model, so no two requests of an agent share one, whatever call ids
//!   the model repeats. The calls count as well as the position
//!   because the position alone repeats: an agent restored from an
//!   earlier snapshot, or resumed after a crash lost its last steps, asks
//!   again at a position it asked at before, for whatever calls the
//!   model's new reply holds, and a grant for the request made there
//!   before must not release those. A `PermissionGranted` or
//!   `PermissionDenied` for another id (sent twice, kept from an earlier
//!   round, or early) changes nothing: while a request waits it is
//!   refused with `DisplayError`; in any other state the table has no row
//!   for it, so it gets Loom's fallback (`WaitForInput`) and is dropped.
//!   Both replies are `#[during_work]`: the executor delivers them as they
//!   come, so one sent while the model still replies reaches the machine
//!   before the request it names exists (and is dropped), rather than
//!   waiting in the inbox for that request and answering it.
//! - `PermissionGranted` runs the calls; `PermissionDenied` answers every
//!   call with a "denied" tool result (so the next request has no
//!   unanswered call) and returns to waiting for input with a message.
//! - A message the user sends while the request waits (the executor
//!   delivers it: nothing is in flight) is not dropped: it denies every
//!   call, as `PermissionDenied` does (reason [`SUPERSEDED`]), joins the
//!   conversation after those results and goes to the model
//!   (`-> CallingLlm`), as if the user had denied and then written it.
//! - An interrupt while the user decides answers every call with a "not
//!   run" tool result before returning to waiting for input, as a denial
//!   does: the calls never ran, and the model's reply stays followed by a
//!   result per call, which both providers require of the next request.
//! - Replaced: a final LLM failure says `gave up: ..` instead of the bare
//!   error.
//! - Inherited without a word: `ShutdownRequested` from every state,
//!   `WaitingForPermission` included.

use crate::loom::{ConversationContext, ToolCall};

pub use machine::{AgentAction, AgentEvent, AgentState, LoomWithPermission};

/// Whether any call uses a tool that is not in `read_only`, the tools the
/// configuration lets run without asking.
#[must_use]
pub fn needs_permission(calls: &[ToolCall], read_only: &[String]) -> bool {
    calls.iter().any(|c| !read_only.contains(&c.name))
}

/// The id of a permission request asked when the conversation held
/// `position` messages, about `calls`: a 64-bit FNV-1a hash of the
/// position and of each call's id, name and arguments, so that a request
/// at another position, or about other calls, has another id (but for
/// the odds of a 64-bit collision). Deterministic and free of clocks and
/// randomness, as every row is; the same on every platform and build of
/// the same width.
#[must_use]
pub fn request_id(position: usize, calls: &[ToolCall]) -> usize {
    // Truncated where `usize` is narrower: still a hash of all of it.
    crate::fingerprint::fingerprint(position as u64, calls) as usize
}

/// Why the calls were denied when the user sent a message instead of
/// answering their request.
pub const SUPERSEDED: &str = "the user sent a new message instead of answering";

/// Answers every call with a "denied" tool result.
pub fn deny_all(calls: &[ToolCall], reason: &str, conversation: &mut ConversationContext) {
    for call in calls {
        conversation.push(crate::loom::Message::tool_error(call.id.clone(), format!("denied by the user: {reason}")));
    }
}

/// Answers every call with a "not run" tool result: the user interrupted
/// the turn (`cause`) before allowing the calls.
pub fn interrupt_all(calls: &[ToolCall], cause: &str, conversation: &mut ConversationContext) {
    for call in calls {
        conversation.push(crate::loom::Message::tool_error(
            call.id.clone(),
            format!("not run: interrupted by the user: {cause}"),
        ));
    }
}

/// The variant: Loom's table plus the differences below.
#[agent_fsm::state_machine(extends = crate::loom::machine::loom_machine, name = LoomWithPermission)]
pub mod machine {
    use super::{SUPERSEDED, deny_all, interrupt_all, needs_permission, request_id};
    use crate::loom::*;

    /// States added to Loom's.
    #[states]
    pub enum Added {
        /// Mutating tools wait for the user's permission.
        WaitingForPermission {
            /// The calls to allow or deny.
            calls: Vec<ToolCall>,
            /// The request's id, which the reply must carry: from the
            /// conversation's length when it was asked and the calls
            /// ([`request_id`]).
            request_id: usize,
        },
    }

    /// Events added to Loom's.
    #[events]
    pub enum AddedEvents {
        /// The user allows the calls. Delivered as it comes, even while
        /// the model replies or tools run: held back until then, a grant
        /// sent before its request would be taken once the request is
        /// made, as its answer.
        #[during_work]
        PermissionGranted {
            /// The request answered.
            request_id: usize,
        },
        /// The user denies them. Delivered as it comes, as a grant is.
        #[during_work]
        PermissionDenied {
            /// The request answered.
            request_id: usize,
            /// Why, shown to the model.
            reason: String,
        },
    }

    /// Actions added to Loom's.
    #[actions]
    pub enum AddedActions {
        /// Ask the user to allow these calls; the reply carries
        /// `request_id`.
        AskPermission {
            /// The id the reply must carry.
            request_id: usize,
            /// The calls.
            calls: Vec<ToolCall>,
        },
    }

    transitions! {
        ProcessingLlmResponse { response } [needs_permission(&response.tool_calls, &ctx.read_only_tools)]
            => { let id = request_id(conversation.len(), &response.tool_calls); }
               WaitingForPermission { calls: response.tool_calls, request_id: id }
               / AskPermission { request_id: id, calls: response.tool_calls.clone() },
        /// Matched by id: a reply to another request is refused, not applied.
        WaitingForPermission { request_id } + PermissionGranted { request_id: id } [id != request_id]
            => WaitingForPermission / DisplayError(format!("no permission request {id} pending (waiting for {request_id})")),
        WaitingForPermission { request_id } + PermissionDenied { request_id: id, .. } [id != request_id]
            => WaitingForPermission / DisplayError(format!("no permission request {id} pending (waiting for {request_id})")),
        WaitingForPermission { calls } + PermissionGranted { .. }
            => { let executions = Executions::pending(&calls); } ExecutingTools { executions } / ExecuteTools(calls),
        WaitingForPermission { calls } + PermissionDenied { reason, .. }
            => { deny_all(&calls, &reason, &mut conversation); }
               WaitingForUserInput / DisplayError(format!("permission denied: {reason}")),
        /// A message instead of an answer: the calls are denied (each
        /// answered) and the message goes to the model, as a new turn's.
        WaitingForPermission { calls } + UserInput(msg)
            => { deny_all(&calls, SUPERSEDED, &mut conversation); conversation.push(msg); }
               CallingLlm { retries: 0 } / SendLlmRequest(ctx.request(&conversation, 0)),
        /// Before Loom's interrupt row: the calls that waited are answered,
        /// so the next request has no unanswered call.
        WaitingForPermission { calls } + Interrupted { cause }
            => { interrupt_all(&calls, &cause, &mut conversation); }
               WaitingForUserInput / DisplayError(format!("interrupted: {cause}")),

        replace CallingLlm + LlmFailed(error)
            => WaitingForUserInput / DisplayError(format!("gave up: {error}")),
    }
}
