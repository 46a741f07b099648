//! The Loom machine written with each peer crate, and what they share: the
//! catch-all every wrapper falls back to.

pub(crate) mod rust_fsm;
pub(crate) mod smlang;
pub(crate) mod statig;

use agent_fsm_examples::loom::AgentAction;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many events the peer machines did not accept, over the whole
/// process: the verification asserts that the benched traces never get
/// there, as it does for `HandLoom`.
pub(crate) static PEER_UNHANDLED: AtomicUsize = AtomicUsize::new(0);

/// The catch-all of every peer (no row, or every guard refused): state
/// unchanged, the same warning as Loom's, and its fallback action.
#[cold]
#[inline(never)]
pub(crate) fn unhandled(state: &'static str, event: &'static str) -> AgentAction {
    PEER_UNHANDLED.fetch_add(1, Ordering::Relaxed);
    tracing::warn!(state, event, "no row for this state and event; state unchanged, fallback action returned");
    AgentAction::WaitForInput
}
