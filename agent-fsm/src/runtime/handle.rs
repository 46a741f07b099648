//! [`MachineHandle`]: the cloneable way in to a running machine, and the
//! state it shares with its worker ([`executor`](super::executor)).
//!
//! # Channels
//! - **Inbox** (bounded tokio mpsc): events from [`send`](MachineHandle::send),
//!   [`try_send`](MachineHandle::try_send) and [`call`](MachineHandle::call).
//!   Senders are the handles; the receiver is the worker, which reads it
//!   while no effect work is in flight, and during work only to reach the
//!   events the machine takes then (`#[during_work]`), holding back those
//!   before them. All handles dropped closes it; the
//!   worker closes it when it stops.
//! - **Control queue** (a `std::sync::Mutex<VecDeque>` plus a waker):
//!   interrupts, shutdown, queries and waits. The worker reads it before
//!   anything else, so these are prompt even while effects run. It is a
//!   plain queue rather than a second mpsc channel because a tokio channel
//!   preallocates a block of 32 slots, and an idle agent should cost little.
//!   The worker's waker sits beside the queue, under the same lock, so a
//!   request takes it while it queues; the worker stores it again only
//!   when a request took it or the worker's task changed (two loads
//!   otherwise), which keeps atomic read-modify-writes off a round trip.
//!   The worker closes it when it exits, dropping unanswered requests, which
//!   their callers read as the worker's outcome; queries still queued run
//!   on the final machine, which queries made later read too.
//! - **Status** (the state's kind, or poisoned, and the step count, two
//!   atomics): read without a round trip by
//!   [`status`](MachineHandle::status). The worker publishes it
//!   when it pauses, before it answers any request (so it is current when
//!   [`call`](MachineHandle::call), [`interrupt`](MachineHandle::interrupt)
//!   or [`wait_idle`](MachineHandle::wait_idle) return), and every 64
//!   events of a long burst: a burst costs one publication, not one per
//!   event.
//! - **Notifications** (the [`feed`](super::feed), created on the first
//!   [`subscribe`](MachineHandle::subscribe)): transitions, actions, outputs.
//!   The worker hands them over in batches, on the status's schedule, and
//!   closes the feed when it exits, which ends every [`Subscription`].
//!
//! The `std` mutexes are never held across an `.await`.

use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{RawWakerVTable, Waker};

use tokio::sync::{mpsc, oneshot};
use tokio_util::task::TaskTracker;

use super::config::Settings;

use super::error::{RequestError, SendError, WorkerError, panic_message};
use super::feed::{Feed, Subscription, Topics};
use super::history::History;
use super::outcome::{Delivered, DeliveredTo, Outcome};
use crate::{Kind, StateKindOf, StateMachine, Status};

mod shared;

use shared::lock;
pub(crate) use shared::{Control, Envelope, Final, Shared};

/// A cloneable handle to a machine running on its worker (see
/// [`spawn`](super::spawn) and [`pair`](super::pair)).
///
/// Dropping every handle lets the worker finish what is in flight (pending
/// timers of both kinds fire), deliver what is queued and exit; nothing is
/// cancelled, so a stream or task that never ends (or a state that sets a
/// timer again each time one fires) keeps the worker alive. Give streams
/// and tasks timeouts, or stop the agent with [`shutdown`](Self::shutdown)
/// or [`ExecutorConfig::cancel_on`](super::ExecutorConfig::cancel_on).
///
/// An effect's task or stream must not wait on its own agent's handle
/// ([`call`](Self::call), [`wait_idle`](Self::wait_idle), or
/// [`send`](Self::send) on a full inbox): the inbox is read only while no
/// work is in flight, so it would wait forever (see the
/// [module docs](super)).
pub struct MachineHandle<M: StateMachine, O = ()> {
    inbox: mpsc::Sender<Envelope<M::Event, DeliveredTo<M>>>,
    shared: Arc<Shared<M, O>>,
}

impl<M: StateMachine, O> Clone for MachineHandle<M, O> {
    fn clone(&self) -> Self {
        Self { inbox: self.inbox.clone(), shared: Arc::clone(&self.shared) }
    }
}

impl<M: StateMachine, O> fmt::Debug for MachineHandle<M, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MachineHandle")
            .field("machine", &M::DESCRIPTION.name)
            .field("status", &self.status())
            .field("steps", &self.steps())
            .finish_non_exhaustive()
    }
}

impl<M: StateMachine, O> MachineHandle<M, O> {
    /// The current state's kind, without a round trip to the worker, as of
    /// the worker's last pause or reply (see the [module docs](super)).
    /// Never a transient state (transient states resolve within a step).
    /// [`Status::Poisoned`] once a step panicked (in a guard too, which
    /// leaves the state whole) or left its row early: the worker has then
    /// failed, will not touch the machine again, and the other methods
    /// return its [`WorkerError`]. After any other failure (the effects
    /// panicked, say) the machine itself is whole, and this goes on
    /// answering the state it was left in, while the other methods return
    /// the error. Its [`Display`](fmt::Display) names the state.
    pub fn status(&self) -> Status<StateKindOf<M>> {
        self.shared.status()
    }

    /// How many events the machine has handled so far.
    pub fn steps(&self) -> u64 {
        self.shared.steps.load(Ordering::Relaxed)
    }

    /// Whether the worker has stopped (normally or not).
    pub fn is_finished(&self) -> bool {
        // A worker future dropped mid-run records no outcome, but closes.
        self.shared.outcome().is_some() || self.shared.closed.load(Ordering::Acquire)
    }

    /// The tracker the worker and its tasks run on (from the configuration).
    pub fn tracker(&self) -> &TaskTracker {
        &self.shared.settings.tracker
    }
}

impl<M, O> MachineHandle<M, O>
where
    M: StateMachine + 'static,
    M::Event: Send + 'static,
    O: Clone + Send + 'static,
{
    pub(crate) fn new(inbox: mpsc::Sender<Envelope<M::Event, DeliveredTo<M>>>, shared: Arc<Shared<M, O>>) -> Self {
        Self { inbox, shared }
    }

    fn failure(&self) -> Option<Arc<WorkerError<M>>> {
        match self.shared.outcome() {
            Some(Err(e)) => Some(Arc::clone(e)),
            _ => None,
        }
    }

    fn send_error(&self, event: M::Event) -> SendError<M> {
        match self.failure() {
            Some(e) => SendError::Failed(event, e),
            None => SendError::Closed(event),
        }
    }

    /// What a call whose event the worker did not take answers: the
    /// machine finished (the worker stopped normally), or the error.
    fn finished_or_closed(&self) -> Result<DeliveredTo<M>, RequestError<M>> {
        match self.shared.outcome() {
            Some(Ok(last)) => match last.status() {
                Status::In(state) => Ok(Delivered { outcome: Outcome::Finished { state }, performed: false }),
                Status::Poisoned => Ok(Delivered { outcome: Outcome::Poisoned, performed: false }),
            },
            _ => Err(self.closed_error()),
        }
    }

    fn closed_error(&self) -> RequestError<M> {
        match self.failure() {
            Some(e) => RequestError::Failed(e),
            None => RequestError::Closed,
        }
    }

    /// Queues `event` in the inbox, waiting while it is full.
    ///
    /// The event is delivered after every event effects produce for work
    /// already in flight (see the [module docs](super)), in the order the
    /// inbox received it, and never dropped once accepted; an event the
    /// table marks `#[during_work]` is delivered as it comes instead,
    /// between the events of that work. Pending
    /// [`pause`](super::EffectContext::pause) timers count as work in
    /// flight: they hold the event back until they fire or their state is
    /// left ([`deadline`](super::EffectContext::deadline) timers do not). Never await this from the agent's
    /// own tasks or streams: with a full inbox it waits forever.
    ///
    /// Returning means queued, not handled: requests such as
    /// [`state`](Self::state) are answered before queued events, so one
    /// made right after may still see the state before this event. To act
    /// on the outcome, use [`call`](Self::call), or
    /// [`wait_idle`](Self::wait_idle) before reading.
    ///
    /// # Errors
    /// [`SendError::Closed`] if the worker has stopped,
    /// [`SendError::Failed`] if it failed; both hand the event back.
    ///
    /// # Cancel safety
    /// Cancel safe: if the future is dropped, the event was not queued.
    pub async fn send(&self, event: M::Event) -> Result<(), SendError<M>> {
        // One unit of the task's tokio budget, as `Sender::send` spends, so
        // a loop of sends still yields to other tasks; with none left this
        // yields first, before anything is queued (cancel safe).
        let coop = std::future::poll_fn(tokio::task::coop::poll_proceed).await;
        let envelope = match self.inbox.try_send(Envelope::Event(event)) {
            Ok(()) => {
                coop.made_progress();
                return Ok(());
            }
            Err(mpsc::error::TrySendError::Closed(envelope)) => {
                return Err(self.send_error(envelope_event(envelope)));
            }
            // The inbox is full: the slow path waits, and spends budget itself.
            Err(mpsc::error::TrySendError::Full(envelope)) => envelope,
        };
        drop(coop);
        match self.inbox.send(envelope).await {
            Ok(()) => Ok(()),
            Err(mpsc::error::SendError(envelope)) => Err(self.send_error(envelope_event(envelope))),
        }
    }

    /// The fast path of [`call`](Self::call) (`send` has its own, which
    /// also spends budget): queues `envelope` at once if the inbox has room
    /// (`None`), or hands it back. Awaiting `Sender::send` builds a semaphore waiter even when a
    /// permit is free, which cost more than the worker's whole step; only a
    /// full inbox needs one. It cannot overtake senders already waiting
    /// (freed permits are handed to them directly). A task with no tokio
    /// budget left takes the slow path, which yields; `call` then spends
    /// budget awaiting the reply.
    #[inline]
    fn enqueue_now(
        &self,
        envelope: Envelope<M::Event, DeliveredTo<M>>,
    ) -> Option<mpsc::error::TrySendError<Envelope<M::Event, DeliveredTo<M>>>> {
        if !tokio::task::coop::has_budget_remaining() {
            return Some(mpsc::error::TrySendError::Full(envelope));
        }
        self.inbox.try_send(envelope).err()
    }

    /// Queues `event` if the inbox has room right now.
    ///
    /// # Errors
    /// [`SendError::Full`] if it has none, otherwise as [`send`](Self::send).
    pub fn try_send(&self, event: M::Event) -> Result<(), SendError<M>> {
        match self.inbox.try_send(Envelope::Event(event)) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(envelope)) => Err(SendError::Full(envelope_event(envelope))),
            Err(mpsc::error::TrySendError::Closed(envelope)) => Err(self.send_error(envelope_event(envelope))),
        }
    }

    /// Sends `event` like [`send`](Self::send), waits until the machine
    /// has handled it (and its action was performed or skipped), and
    /// answers what became of it, by kind (see [`Outcome`]): it moved the
    /// machine, a row kept the state, the table ignores the pair, no row
    /// accepts it, every guard refused it, the machine had finished (the
    /// worker stopped normally before taking it) or the event's row
    /// poisoned the machine. Never await this from the agent's own tasks
    /// or streams: the event waits until no work is in flight, them
    /// included, so it waits forever.
    ///
    /// # Errors
    /// [`RequestError::Closed`] or [`RequestError::Failed`] if the worker
    /// failed or was dropped before handling it; the event is then lost.
    ///
    /// # Cancel safety
    /// Not as [`send`](Self::send) is: once the event is queued, dropping
    /// the future (a caller's timeout) only drops the answer. The event is
    /// still delivered, as a sent one is, so a caller that gives up waiting
    /// and calls again has the event handled twice.
    pub async fn call(&self, event: M::Event) -> Result<DeliveredTo<M>, RequestError<M>> {
        let (tx, rx) = oneshot::channel();
        let queued = match self.enqueue_now(Envelope::Call(event, tx)) {
            None => true,
            Some(mpsc::error::TrySendError::Closed(_)) => false,
            Some(mpsc::error::TrySendError::Full(envelope)) => self.inbox.send(envelope).await.is_ok(),
        };
        match if queued { rx.await.ok() } else { None } {
            Some(delivered) => Ok(delivered),
            None => {
                // The inbox closes when the worker starts to stop, before it
                // records how it ended: waits for that record, so that a
                // call racing a terminal state reads `Finished`, not `Closed`.
                self.settled().await;
                self.finished_or_closed()
            }
        }
    }

    /// Returns once the worker has recorded how it ended, or is gone.
    async fn settled(&self) {
        if self.shared.outcome().is_some() {
            return;
        }
        let (tx, rx) = oneshot::channel();
        if self.shared.push_control(Control::WaitFinished(tx)).is_ok() {
            // Never answered: the sender is dropped when the worker exits.
            let _ = rx.await;
        }
    }

    async fn request(&self, control: Control<M>) -> Result<(), RequestError<M>> {
        match self.shared.push_control(control) {
            Ok(()) => Ok(()),
            Err(_) => Err(self.closed_error()),
        }
    }

    /// Runs `f` on the worker with the machine, between two steps, and
    /// returns its result. Requests like this one are served before pending
    /// events, even while effects run.
    ///
    /// Once the worker has stopped normally (a terminal state, a shutdown),
    /// `f` runs on the machine as the worker left it, on the caller's task:
    /// the final state and context stay readable for as long as a handle
    /// lives, as does the [`History`] (see [`history`](Self::history)).
    ///
    /// To snapshot a machine for resuming later, take it when the agent is
    /// idle ([`wait_idle`](Self::wait_idle), then `inspect`): a snapshot
    /// holds the state and context, not the streams, tasks and timers in
    /// flight, so a machine resumed from one taken mid-work waits for
    /// events that nothing will produce. A pending `deadline` timer does not
    /// keep the agent from idle (it waits for input), and is not in the
    /// snapshot: a resumed agent sets such a deadline again itself.
    ///
    /// # Errors
    /// [`RequestError::Failed`] if the worker failed,
    /// [`RequestError::Closed`] if its future was dropped before it
    /// finished, [`RequestError::InspectPanicked`] if `f` panicked (the
    /// worker carries on).
    pub async fn inspect<R, F>(&self, f: F) -> Result<R, RequestError<M>>
    where
        R: Send + 'static,
        F: FnOnce(&M) -> R + Send + 'static,
    {
        self.with_machine_and_history(move |machine, _| f(machine)).await
    }

    /// Like [`inspect`](Self::inspect), with the machine's [`History`].
    ///
    /// # Errors
    /// As [`inspect`](Self::inspect).
    pub async fn with_history<R, F>(&self, f: F) -> Result<R, RequestError<M>>
    where
        R: Send + 'static,
        F: FnOnce(&History<M>) -> R + Send + 'static,
    {
        self.with_machine_and_history(move |_, history| f(history)).await
    }

    async fn with_machine_and_history<R, F>(&self, f: F) -> Result<R, RequestError<M>>
    where
        R: Send + 'static,
        F: FnOnce(&M, &History<M>) -> R + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job = move |machine: &M, history: &History<M>| {
            let result = catch_unwind(AssertUnwindSafe(|| f(machine, history)));
            // The caller may have given up waiting; nothing to do then.
            let _ = tx.send(result.map_err(|payload| panic_message(&*payload)));
        };
        match self.shared.push_control(Control::Inspect(Box::new(job))) {
            Ok(()) => {}
            // The worker has stopped: what it left, if it stopped normally.
            Err(Control::Inspect(job)) => {
                if self.shared.inspect_final(job).is_err() {
                    return Err(self.closed_error());
                }
            }
            Err(_) => return Err(self.closed_error()),
        }
        match rx.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(message)) => Err(RequestError::InspectPanicked(message)),
            Err(_) => Err(self.closed_error()),
        }
    }

    /// A snapshot of the full state; the final one once the worker has
    /// stopped normally. Answered before events still queued in the inbox
    /// (see [`send`](Self::send)).
    ///
    /// # Errors
    /// [`RequestError::Poisoned`] if the machine is poisoned, otherwise as
    /// [`inspect`](Self::inspect).
    pub async fn state(&self) -> Result<M::State, RequestError<M>>
    where
        M::State: Clone + Send + 'static,
    {
        self.inspect(|m| (!m.is_poisoned()).then(|| m.state().clone())).await?.ok_or(RequestError::Poisoned)
    }

    /// A snapshot of the history (hops, time per state, interrupts and the
    /// event log if enabled). Once the worker has stopped normally, the
    /// history it stopped with, whose last stay ends when it stopped: its
    /// event log then reproduces the whole run ([`replay`](super::replay)).
    ///
    /// # Errors
    /// As [`inspect`](Self::inspect).
    pub async fn history(&self) -> Result<History<M>, RequestError<M>>
    where
        M::Event: Clone,
    {
        self.with_history(History::clone).await
    }

    /// Subscribes to all the machine's [`Notification`](super::Notification)s from now on; see
    /// [`subscribe_to`](Self::subscribe_to).
    pub fn subscribe(&self) -> Subscription<M, O> {
        self.subscribe_to(Topics::ALL)
    }

    /// Subscribes to the machine's [`Notification`](super::Notification)s of `topics` from now
    /// on. The notification log is created on the first call, so machines
    /// nobody watches pay nothing for it, and the worker builds only the
    /// notifications some live subscription wants (a subscriber of
    /// [`Topics::TRANSITIONS`] alone costs one per step, not two); it hands
    /// them over in batches, at the latest when it pauses or answers a
    /// request (see the [module docs](super)).
    ///
    /// [`Topics::STATES`] is left out here: see
    /// [`subscribe_with_states`](Self::subscribe_with_states).
    pub fn subscribe_to(&self, topics: Topics) -> Subscription<M, O> {
        match self.feed() {
            Ok(feed) => feed.subscribe(topics.without(Topics::STATES)),
            Err(ended) => ended,
        }
    }

    /// Like [`subscribe_to`](Self::subscribe_to), and also receives the
    /// whole state after each step a row accepted
    /// ([`Notification::State`](super::Notification::State), after the step's transitions and before
    /// its action), so that a subscriber can show the agent without keeping
    /// its own copy. The worker copies the state once per such step while
    /// a subscription like this one lives, and never otherwise. The state
    /// at the time of subscribing is not sent: read it with
    /// [`state`](Self::state).
    pub fn subscribe_with_states(&self, topics: Topics) -> Subscription<M, O>
    where
        M::State: Clone + Send + Sync + 'static,
    {
        match self.feed() {
            Ok(feed) => feed.subscribe_with_states(topics),
            Err(ended) => ended,
        }
    }

    /// The notification feed, created on first use; a subscription that
    /// ends at once if the worker is gone.
    fn feed(&self) -> Result<Arc<Feed<M, O>>, Subscription<M, O>> {
        let feed = {
            let mut locked = lock(&self.shared.locked);
            if self.shared.closed.load(Ordering::Relaxed) {
                // The worker is gone: a subscription that ends at once.
                return Err(Feed::ended());
            }
            let capacity = self.shared.settings.notification_capacity;
            let feed = Arc::clone(locked.rare().feed.get_or_insert_with(|| Arc::new(Feed::new(capacity))));
            self.shared.subscribed.store(true, Ordering::Release);
            feed
        };
        Ok(feed)
    }

    /// Interrupts the machine and waits until the interrupt is carried out:
    ///
    /// 1. what tasks and streams the effects cancelled themselves
    ///    ([`cancel_task`](super::EffectContext::cancel_task)) still owe is
    ///    delivered; then the open streams are dropped (their delivered
    ///    items stay delivered) and each yields its `on_failure(Cancelled)`
    ///    event, if any;
    /// 2. every pending task is cancelled and yields its
    ///    `on_failure(key, Cancelled)` event, in spawn order (a task that had
    ///    already finished yields its real result instead);
    /// 3. pending timers are dropped, and so are events the effects sent
    ///    ([`send`](super::EffectContext::send)) that are still waiting:
    ///    an interrupt served at one of a long chain's pauses (see the
    ///    [module docs](super), Ordering) cuts the chain there;
    /// 4. the cause is recorded in the history and notified;
    /// 5. the configured interrupt event is delivered and its action
    ///    performed: the table has a row (or an `=> ignore`) for it in
    ///    every state the machine can rest in, checked before the worker's
    ///    first step (see [`ExecutorConfig::interrupt_event`](super::ExecutorConfig::interrupt_event)),
    ///    so the machine lands where it can wait, never in a state whose
    ///    work was just cancelled.
    ///
    /// The actions returned by the events of steps 1–2 are *not* performed:
    /// an interrupt starts no new work except what the machine asks for in
    /// response to the interrupt event. Queued external events stay queued,
    /// and the worker takes them up as soon as the interrupt is carried
    /// out: by the time this returns, [`status`](Self::status) may
    /// already show the state the next input led to. A subscription to
    /// [`Topics::FAULTS`](super::Topics::FAULTS) and transitions sees the
    /// interrupt and the state it left in order.
    ///
    /// # Errors
    /// [`RequestError::NoInterruptEvent`] if the configuration has no
    /// interrupt event (nothing is cancelled);
    /// [`RequestError::Closed`]/[`RequestError::Failed`] if the worker has
    /// stopped.
    ///
    /// # Cancel safety
    /// Once the request is queued (at the first poll), dropping the future
    /// only stops the wait: the interrupt is still carried out.
    pub async fn interrupt(&self, cause: impl Into<String>) -> Result<(), RequestError<M>> {
        // Cancelling the work with nothing to move the machine on would
        // leave it waiting with nothing in flight: refused, untouched.
        // A stopped worker's own answer comes first, as for every request.
        if self.shared.settings.interrupt_event.is_none() {
            return Err(match self.shared.outcome() {
                Some(_) => self.closed_error(),
                None => RequestError::NoInterruptEvent,
            });
        }
        let (done, rx) = oneshot::channel();
        let cause: Arc<str> = Arc::from(cause.into());
        self.request(Control::Interrupt { cause, done }).await?;
        rx.await.map_err(|_| self.closed_error())
    }

    /// Shuts the machine down and waits for the worker to exit:
    /// in-flight work is cancelled as for an interrupt (the events it owes are
    /// delivered, their actions not performed; sent events still waiting
    /// are dropped), then the configured shutdown
    /// event is delivered and its action performed (any work it schedules
    /// is discarded), then the events still queued are delivered without
    /// performing their actions, every task is awaited, and the worker exits
    /// (see [`wait_finished`](Self::wait_finished) for the moment its own
    /// tokio task takes to return).
    ///
    /// # Errors
    /// [`RequestError::Failed`] if the worker failed;
    /// [`RequestError::Closed`] if it was dropped without finishing.
    /// Shutting down a machine that already stopped returns its final
    /// state again.
    pub async fn shutdown(&self) -> Result<StateKindOf<M>, RequestError<M>> {
        // A closed queue means the worker is stopping or gone anyway.
        let _ = self.shared.push_control(Control::Shutdown);
        self.wait_finished().await
    }

    /// Waits until no stream, task or [`pause`](super::EffectContext::pause)
    /// timer is in flight and the inbox is empty: everything sent before
    /// the call has been handled. A pending
    /// [`deadline`](super::EffectContext::deadline) timer does not count: the
    /// agent is idle, waiting for input. Never await
    /// this from the agent's own tasks or streams, which are in flight
    /// while they wait: it would wait forever.
    ///
    /// # Errors
    /// [`RequestError::Closed`]/[`RequestError::Failed`] if the worker has
    /// stopped (or stops while waiting).
    pub async fn wait_idle(&self) -> Result<(), RequestError<M>> {
        let (tx, rx) = oneshot::channel();
        self.request(Control::WaitIdle(tx)).await?;
        rx.await.map_err(|_| self.closed_error())
    }

    /// Waits until the worker has finished, every task it spawned ended,
    /// and returns the final state's kind.
    ///
    /// The worker answers as the last thing its future does, so its own
    /// tokio task may still be returning, for a moment, when this returns:
    /// a `JoinHandle` of it (from [`pair`](crate::runtime::pair)) may not
    /// be finished yet, and a `TaskTracker` given to
    /// [`ExecutorConfig::tracker`](crate::runtime::ExecutorConfig::tracker)
    /// may still count it. To know the tracker is empty, `close()` it and
    /// await its `wait()`.
    ///
    /// # Errors
    /// [`RequestError::Failed`] if the worker failed;
    /// [`RequestError::Closed`] if it was dropped without finishing.
    pub async fn wait_finished(&self) -> Result<StateKindOf<M>, RequestError<M>> {
        let (tx, rx) = oneshot::channel();
        if self.shared.push_control(Control::WaitFinished(tx)).is_ok() {
            // Never answered: the sender is dropped when the worker exits.
            let _ = rx.await;
        }
        match self.shared.outcome() {
            Some(Ok(last)) => last.status().state().ok_or(RequestError::Poisoned),
            Some(Err(e)) => Err(RequestError::Failed(Arc::clone(e))),
            None => Err(RequestError::Closed),
        }
    }
}

fn envelope_event<E, R>(envelope: Envelope<E, R>) -> E {
    match envelope {
        Envelope::Event(event) | Envelope::Call(event, _) => event,
    }
}
