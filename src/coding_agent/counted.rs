//! Effects that count the tool calls they are asked to run, for a
//! session's [`Summary`](super::Summary).
//!
//! Counted from the notifications instead, the number would be short
//! whenever the subscriber falls behind the notification log: a reply with
//! more tool calls than the log holds publishes them all in one step, and
//! the oldest are dropped before anyone reads them, so a model could make
//! the summary (and the printed list of calls) leave some out.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_fsm::StateMachine;
use agent_fsm::runtime::{EffectContext, Effects};

/// `inner`, counting in `count` the calls of every action `calls` says
/// runs tools.
pub(crate) struct Counted<E, A> {
    inner: E,
    count: Arc<AtomicUsize>,
    calls: fn(&A) -> usize,
}

impl<E, A> Counted<E, A> {
    /// `inner` counted by `calls`, and the count, which the caller reads
    /// once the agent has stopped.
    pub(crate) fn new(inner: E, calls: fn(&A) -> usize) -> (Self, Arc<AtomicUsize>) {
        let count = Arc::new(AtomicUsize::new(0));
        (Counted { inner, count: Arc::clone(&count), calls }, count)
    }
}

impl<M, E> Effects<M> for Counted<E, M::Action>
where
    M: StateMachine,
    M::Action: 'static,
    E: Effects<M>,
{
    type Output = E::Output;

    fn perform(&mut self, action: M::Action, cx: &mut EffectContext<'_, M, Self::Output>) {
        self.count.fetch_add((self.calls)(&action), Ordering::Relaxed);
        self.inner.perform(action, cx);
    }
}

/// How many tools a Loom action runs.
pub(crate) fn loom_calls(action: &crate::loom::AgentAction) -> usize {
    match action {
        crate::loom::AgentAction::ExecuteTools(calls) => calls.len(),
        _ => 0,
    }
}
