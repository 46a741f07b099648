//! Answering an approval from the page: the approval an agent's state
//! holds now, numbered so that a click on one already answered or
//! replaced does nothing, and the event its button sends through the
//! agent's handle, once taken, whatever becomes of the click's request.

use std::sync::{Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;

use super::view::Approval;
use crate::StateMachine;
use crate::runtime::MachineHandle;

/// Why a click did not send anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// That approval is not the one pending (answered, replaced, or none).
    NotPending,
    /// The agent's worker has exited.
    Ended,
}

/// Answers an agent's approvals, whatever its machine.
pub(super) trait Control: Send + Sync {
    /// Sends approval `id`'s approve (or deny) event.
    fn decide(&self, id: u64, approve: bool) -> BoxFuture<'_, Result<(), Refusal>>;

    /// Approval `id`'s whole summary, while it is the one shown.
    fn summary(&self, id: u64) -> Option<String>;
}

/// The approval shown.
struct Current<E> {
    id: u64,
    approval: Approval<E>,
    /// Its approve event as `Debug` writes it: what tells a new request
    /// with the same summary (a request id in the event) from the one
    /// shown, when the page did not see the state between the two.
    key: String,
    /// A button was clicked: the same approval found again (the event not
    /// handled yet) is not offered again.
    answered: bool,
}

/// The approval pending in an agent's latest state.
pub(super) struct Pending<E> {
    current: Mutex<(u64, Option<Current<E>>)>,
}

impl<E: Clone + std::fmt::Debug> Pending<E> {
    pub(super) fn new() -> Self {
        Self { current: Mutex::new((0, None)) }
    }

    fn lock(&self) -> MutexGuard<'_, (u64, Option<Current<E>>)> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the latest state holds; the approval to show if that changed
    /// (`Some(None)`: none any more).
    pub(super) fn update(&self, found: Option<Approval<E>>) -> Option<Option<(u64, String)>> {
        let mut guard = self.lock();
        let (last, current) = &mut *guard;
        match (found, current.as_ref()) {
            (None, None) => None,
            (None, Some(_)) => {
                *current = None;
                Some(None)
            }
            (Some(found), shown) => {
                let key = format!("{:?}", found.approve);
                if shown.is_some_and(|shown| found.summary == shown.approval.summary && key == shown.key) {
                    return None;
                }
                *last += 1;
                let shown = (*last, found.summary.clone());
                *current = Some(Current { id: *last, approval: found, key, answered: false });
                Some(Some(shown))
            }
        }
    }

    /// Approval `id`'s summary, if it is the one shown.
    fn summary(&self, id: u64) -> Option<String> {
        let guard = self.lock();
        guard.1.as_ref().filter(|c| c.id == id).map(|c| c.approval.summary.clone())
    }

    /// Takes approval `id`'s event, once.
    fn answer(&self, id: u64, approve: bool) -> Option<E> {
        let mut guard = self.lock();
        let current = guard.1.as_mut().filter(|c| c.id == id && !c.answered)?;
        current.answered = true;
        Some(if approve { current.approval.approve.clone() } else { current.approval.deny.clone() })
    }
}

/// [`Control`] for machine `M`.
pub(super) struct Typed<M: StateMachine, O> {
    pub(super) handle: MachineHandle<M, O>,
    pub(super) pending: std::sync::Arc<Pending<M::Event>>,
}

impl<M, O> Control for Typed<M, O>
where
    M: StateMachine + Send + 'static,
    M::Event: Clone + Send + Sync + 'static,
    O: Clone + Send + Sync + 'static,
{
    fn decide(&self, id: u64, approve: bool) -> BoxFuture<'_, Result<(), Refusal>> {
        Box::pin(async move {
            let event = self.pending.answer(id, approve).ok_or(Refusal::NotPending)?;
            // Sent by a task of its own: the approval is taken now and
            // cannot be clicked again, so its event must reach the agent
            // even if this request goes (the page closed, the inspector
            // stopped) while the agent's full inbox holds the send back.
            let handle = self.handle.clone();
            let sent = tokio::spawn(async move { handle.send(event).await.is_ok() });
            match sent.await {
                Ok(true) => Ok(()),
                Ok(false) | Err(_) => Err(Refusal::Ended),
            }
        })
    }

    fn summary(&self, id: u64) -> Option<String> {
        self.pending.summary(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking(summary: &str) -> Option<Approval<&'static str>> {
        Some(Approval { summary: summary.to_owned(), approve: "yes", deny: "no" })
    }

    #[test]
    fn a_new_summary_replaces_the_approval_and_the_same_one_keeps_it() {
        let pending = Pending::new();
        assert_eq!(pending.update(None), None, "none before, none now: no change");
        assert_eq!(pending.update(asking("a")), Some(Some((1, "a".to_owned()))));
        assert_eq!(pending.update(asking("a")), None, "the same approval found again");
        assert_eq!(pending.update(asking("b")), Some(Some((2, "b".to_owned()))), "another one replaces it");
        assert_eq!(pending.answer(1, true), None, "the replaced one cannot be answered");
        assert_eq!(pending.answer(2, false), Some("no"));
        assert_eq!(pending.answer(2, true), None, "answered once");
        assert_eq!(pending.update(asking("b")), None, "not offered again while its state lasts");
        assert_eq!(pending.update(None), Some(None));
        assert_eq!(pending.update(asking("b")), Some(Some((3, "b".to_owned()))), "a later request is new");
        assert_eq!(pending.answer(3, true), Some("yes"));
    }

    /// A new request with the same summary, found without the state in
    /// between (the page's feed fell behind), is a new approval: its
    /// approve event differs (it names the request).
    #[test]
    fn the_same_summary_for_another_request_is_a_new_approval() {
        let pending = Pending::new();
        let request = |n: &'static str| Some(Approval { summary: "edit_file a".to_owned(), approve: n, deny: "no" });
        assert_eq!(pending.update(request("grant 1")), Some(Some((1, "edit_file a".to_owned()))));
        assert_eq!(pending.answer(1, true), Some("grant 1"));
        assert_eq!(pending.update(request("grant 1")), None, "the one answered, found again");
        assert_eq!(pending.update(request("grant 2")), Some(Some((2, "edit_file a".to_owned()))), "a new request");
        assert_eq!(pending.answer(2, true), Some("grant 2"), "and it can be answered");
    }
}
