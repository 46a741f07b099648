//! The worker's tie to its handles (closed however the worker goes) and
//! its rarely used parts: waiters, the observer, held-back events.

use super::*;

/// What the worker shares with its handles, and its rarely used parts:
/// closes the shared state when the worker goes, however it goes.
pub(super) struct Link<M: StateMachine, O> {
    pub(super) shared: Arc<Shared<M, O>>,
    /// Waiters, the cancellation token, the attached observer and the
    /// events held back during work: rarely used, so boxed on first use
    /// (at start with an observer) to keep idle agents small.
    pub(super) extras: Option<Box<Extras<M>>>,
}

/// What the inbox of machine `M` holds.
pub(super) type InboxEnvelope<M> = Envelope<<M as StateMachine>::Event, DeliveredTo<M>>;

impl<M: StateMachine, O> Link<M, O> {
    /// Drops the attached observer, if any.
    pub(super) fn drop_observer(&mut self) {
        if let Some(observer) = self.extras.as_mut().and_then(|extras| extras.observer.take())
            && let Some(message) = drop_caught(observer)
        {
            tracing::error!(panic = %message, "the observer panicked while being dropped");
        }
    }

    /// Closes the shared state. The observer is dropped first, the waiters
    /// last, once the handles can read everything.
    pub(super) fn close(&mut self) {
        self.drop_observer();
        drop(self.shared.close());
        self.extras = None;
    }
}

impl<M: StateMachine, O> Drop for Link<M, O> {
    /// Runs alone when the worker future is dropped mid-run: handles then
    /// read `Closed`, and `Work`'s own drop aborts the tasks. After `park`,
    /// closing again changes nothing.
    fn drop(&mut self) {
        self.close();
    }
}

/// The worker's rarely used parts.
pub(super) struct Extras<M: StateMachine> {
    pub(super) waiters: Vec<Waiter>,
    pub(super) cancel: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    /// Set by [`ExecutorConfig::observer`].
    pub(super) observer: Option<Box<dyn Observer<M> + Send>>,
    /// External events taken from the inbox while effect work was in
    /// flight, to reach a `#[during_work]` event behind them; delivered,
    /// in order, once the work is done.
    pub(super) held: VecDeque<InboxEnvelope<M>>,
    /// A durable agent's journal.
    pub(super) journal: Option<Box<dyn StepJournal<M>>>,
}

impl<M: StateMachine> Default for Extras<M> {
    fn default() -> Self {
        Self { waiters: Vec::new(), cancel: None, observer: None, held: VecDeque::new(), journal: None }
    }
}

/// Someone waiting on the worker.
pub(super) enum Waiter {
    /// Answered when nothing is in flight and the inbox is empty.
    Idle(oneshot::Sender<()>),
    /// Never answered: dropped when the worker exits.
    Finished(oneshot::Sender<()>),
}

impl Waiter {
    /// Whether it waits for the worker to finish (never answered).
    pub(super) fn waits_for_finish(&self) -> bool {
        matches!(self, Self::Finished(_))
    }

    pub(super) fn is_closed(&self) -> bool {
        match self {
            Self::Idle(tx) | Self::Finished(tx) => tx.is_closed(),
        }
    }

    /// Joins `waiters`, dropping those whose caller gave up waiting (a
    /// `wait_idle` under a timeout, polled by a UI): they would otherwise
    /// pile up until the next answer.
    pub(super) fn join(self, waiters: &mut Vec<Waiter>) {
        waiters.retain(|w| !w.is_closed());
        waiters.push(self);
    }
}

#[cfg(test)]
mod tests {
    use super::Waiter;
    use tokio::sync::oneshot;

    #[test]
    fn waiters_whose_caller_gave_up_are_dropped_when_another_joins() {
        let mut waiters = Vec::new();
        let (given_up, gone) = oneshot::channel();
        Waiter::Idle(given_up).join(&mut waiters);
        let (finished, _keep_finished) = oneshot::channel();
        Waiter::Finished(finished).join(&mut waiters);
        drop(gone);
        let (idle, _keep_idle) = oneshot::channel();
        Waiter::Idle(idle).join(&mut waiters);
        assert_eq!(waiters.len(), 2, "the abandoned waiter is still kept");
        assert!(waiters.iter().all(|w| !w.is_closed()));
    }
}
