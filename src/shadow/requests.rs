//! Shadow's requests to the user and the invariants of its snapshots.
//!
//! Permission requests and questions carry ids the machine mints from
//! [`ShadowContext::next_request`] and the call asked about
//! ([`request_id`]), never the model's `tool_use_id`s alone: the model may
//! repeat an id within a reply or reuse one in a later reply, and a reply
//! matched by such an id could settle a request it was not sent to. The
//! call counts as well as the number because the number alone repeats:
//! an agent restored from an earlier snapshot (or resumed after a crash
//! lost its last steps) numbers its requests again from the snapshot's
//! counter, and a reply given to the request made under a number before
//! must not settle a request about another call made under it after.
//! [`invariants`] holds a resumed snapshot to what a live agent reaches,
//! so that its next event behaves as a live one's.

use super::{NextStep, Permission, ShadowContext, ShadowState, ToolCall, Turn};
use crate::fingerprint::{fingerprint, request_number};

/// The prefix of permission request ids.
pub const PERMISSION: &str = "permission";

/// The prefix of question ids.
pub const QUESTION: &str = "question";

/// The id of request number `n` of `kind` ([`PERMISSION`] or
/// [`QUESTION`]), about `call`: `{kind}-{n}-{fingerprint}`, the
/// fingerprint 16 hex digits of a hash of `n` and the call's id, name and
/// arguments. Requests of one number about other calls have other ids
/// (but for the odds of a 64-bit collision).
#[must_use]
pub fn request_id(kind: &str, n: u64, call: &ToolCall) -> String {
    crate::fingerprint::labelled_id(kind, n, call)
}

/// The first id two of `calls` share.
pub(super) fn repeated_id(calls: &[ToolCall]) -> Option<String> {
    first_repeat(calls.iter().map(|c| c.id.as_str()))
}

fn first_repeat<'a>(ids: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    for id in ids {
        if !seen.insert(id) {
            return Some(id.to_owned());
        }
    }
    None
}

// ===== impl ShadowContext =====

impl ShadowContext {
    /// Whether a request id is left. The last number is never issued, so
    /// that the counter neither wraps nor issues one id twice.
    fn can_ask(&self) -> bool {
        self.next_request < u64::MAX
    }

    /// What `call` needs, or `None` if it is answered without running: a
    /// rule denies it, or it needs a request and no id is left.
    pub(super) fn step_for(&self, call: &ToolCall) -> Option<NextStep> {
        if call.name == self.question_tool {
            return self.can_ask().then_some(NextStep::AskUser);
        }
        match self.permission_for(&call.name) {
            Permission::Deny => None,
            Permission::Allow => Some(NextStep::RunTool),
            Permission::Ask => self.can_ask().then_some(NextStep::AskPermission),
        }
    }

    /// The error result of a call [`step_for`](Self::step_for) answers
    /// without running.
    pub(super) fn not_run_because(&self, call: &ToolCall) -> String {
        if call.name != self.question_tool && self.permission_for(&call.name) == Permission::Deny {
            format!("Permission denied by rule for `{}`", call.name)
        } else {
            format!("Not run: no request id is left to ask about `{}`", call.name)
        }
    }

    /// A fresh id for a request of `kind` about `call`. The rows call this
    /// only after [`step_for`](Self::step_for) found an id left.
    pub(super) fn issue_request(&mut self, kind: &str, call: &ToolCall) -> String {
        let id = request_id(kind, self.next_request, call);
        self.next_request = self.next_request.saturating_add(1);
        id
    }
}

/// The invariants a resumed snapshot must hold: those of every state a
/// live agent reaches. At rest and in `Processing` no turn is open; in
/// the other states the turn's current call is the one the state names;
/// a request id is one the counter issued, about the turn's current call
/// (when written with a fingerprint); the turn's calls have distinct
/// ids; only a running tool or subagent has an interrupt waiting; only
/// `Processing` counts failed model calls or has a retry scheduled (and a
/// retry only after a failure).
///
/// # Errors
/// The first one broken, in words.
pub fn invariants(state: &ShadowState, ctx: &ShadowContext) -> Result<(), String> {
    let turn = &ctx.turn;
    let ids = turn.pending.iter().map(|c| c.id.as_str()).chain(turn.current.iter().map(|c| c.id.as_str()));
    if let Some(id) = first_repeat(ids.chain(turn.results.iter().map(|r| r.call_id.as_str()))) {
        return Err(format!("two calls of the turn share the id `{id}`"));
    }
    let waits = matches!(state, ShadowState::ExecutingTool { .. } | ShadowState::WaitingForSubAgent { .. });
    if ctx.interrupt_requested && !waits {
        return Err("an interrupt waits with no tool or subagent running".to_owned());
    }
    if (ctx.retry_scheduled || ctx.llm_failures > 0) && *state != ShadowState::Processing {
        return Err("a model call's retry outside `Processing`".to_owned());
    }
    if ctx.retry_scheduled && ctx.llm_failures == 0 {
        return Err("a retry scheduled with no failed attempt".to_owned());
    }
    match state {
        ShadowState::Idle | ShadowState::Processing | ShadowState::Done | ShadowState::Error { .. } => {
            if *turn != Turn::default() {
                return Err("tool calls of a turn outside a turn".to_owned());
            }
            Ok(())
        }
        ShadowState::WaitingForPermission { tool_name, tool_use_id, input, request_id } => {
            let call = current(turn, tool_use_id)?;
            if call.name != *tool_name || call.arguments != *input {
                return Err(format!("the call `{tool_use_id}` awaiting permission is not the turn's current call"));
            }
            issued(ctx, PERMISSION, request_id, call)
        }
        ShadowState::ExecutingTool { tool_name, tool_use_id } => {
            let call = current(turn, tool_use_id)?;
            if call.name != *tool_name {
                return Err(format!("the running call `{tool_use_id}` is not the turn's current call"));
            }
            Ok(())
        }
        ShadowState::WaitingForSubAgent { session_id } => {
            let call = turn.current.as_ref().ok_or("waiting for a subagent with no current call")?;
            if !child_of(ctx, &call.id, session_id) {
                return Err(format!("subagent `{session_id}` is not the current call's"));
            }
            Ok(())
        }
        ShadowState::WaitingForUserInput { request_id } => {
            let call = turn.current.as_ref().ok_or("a question with no current call")?;
            issued(ctx, QUESTION, request_id, call)
        }
    }
}

/// Whether `session_id` is a child [`ShadowContext::spawn_child`] gave
/// call `tool_use_id`: its first id or one with `~{n}` added, recorded in
/// [`ShadowContext::children`]; or, in a snapshot from before children
/// were recorded (none are), the first, or the call id joined as it was
/// then, unescaped.
fn child_of(ctx: &ShadowContext, tool_use_id: &str, session_id: &str) -> bool {
    let first = ctx.child_session_id(tool_use_id);
    if ctx.children.is_empty() {
        return session_id == first || session_id == format!("{}/{}", ctx.session_id, tool_use_id);
    }
    let derived = session_id == first
        || session_id
            .strip_prefix(first.as_str())
            .and_then(|rest| rest.strip_prefix('~'))
            .is_some_and(|n| n.parse::<u64>().is_ok_and(|k| k >= 2 && k.to_string() == n));
    derived && ctx.children.contains(session_id)
}

/// The turn's current call, which must have `id`.
fn current<'a>(turn: &'a Turn, id: &str) -> Result<&'a ToolCall, String> {
    match &turn.current {
        Some(call) if call.id == id => Ok(call),
        _ => Err(format!("the call `{id}` is not the turn's current call")),
    }
}

/// `Ok` if `id` is a request id of `kind` the counter issued, about
/// `call` (an id written without a fingerprint names no call).
fn issued(ctx: &ShadowContext, kind: &str, id: &str, call: &ToolCall) -> Result<(), String> {
    match request_number(kind, id) {
        Some((n, print)) if n < ctx.next_request => match print {
            Some(print) if print != fingerprint(n, std::slice::from_ref(call)) => {
                Err(format!("`{id}` is not the id of a request about the call `{}`", call.id))
            }
            _ => Ok(()),
        },
        _ => Err(format!("`{id}` is not a {kind} id the machine issued (below `{kind}-{}`)", ctx.next_request)),
    }
}
