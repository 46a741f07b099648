//! The notification feed behind [`MachineHandle::subscribe`](super::MachineHandle::subscribe):
//! a bounded, multi-subscriber log of [`Notification`]s that the worker
//! appends to in batches.
//!
//! A tokio `broadcast` channel costs a lock, a slot lock and a wake-up per
//! notification, on both sides; with two notifications per event that was
//! most of what a subscriber added to a step. Here the worker collects a
//! burst's notifications in a local buffer ([`Notifier`]) and appends them
//! under one lock, with one wake-up per waiting subscriber; a
//! [`Subscription`] takes everything it has not read under one lock too
//! (the only subscription swaps the log's buffer for its own, so nothing is
//! copied) and returns it one by one.
//!
//! A subscription names the [`Topics`] it wants; the worker builds and
//! records only what some live subscription wants, so a subscriber of
//! transitions alone costs one notification per step, not two.
//!
//! What subscribers see is what a broadcast channel gives them:
//!
//! - every notification of their topics produced after `subscribe`
//!   returned, in order (each
//!   has a sequence number; a subscription starts at the next one, so a batch
//!   flushed later never shows it what came before it subscribed). One
//!   exception keeps unwatched machines cheap: the first subscription a
//!   machine ever gets, if made in the middle of a step (by the effects
//!   performing its action, or an observer), starts with the first output
//!   or fault that step publishes after it, or else with the next step,
//!   so that step's own transitions and action are not in it;
//! - the log keeps the last `capacity` notifications; a subscription that
//!   has not taken one before it is dropped from the log gets
//!   [`Notification::Lagged`] with the number of notifications dropped from
//!   the log before it read them (those of other topics included), then
//!   goes on with the oldest one still kept (what it has already taken is
//!   never lost);
//! - once the worker has exited and everything was read, the end.
//!
//! The worker flushes its buffer whenever it pauses, before it answers any
//! request, every 64 events of a long burst (the status's schedule, see
//! the [module docs](super)), and whenever the buffer holds `capacity`
//! notifications (so it stays bounded). A flush that woke waiting
//! subscriptions makes the worker yield to them before its next input
//! (events sent by effects included), and until it has yielded the log
//! keeps up to twice `capacity`, so that what the current step still hands
//! over cannot push out what they were woken for. So a subscriber task
//! waiting in `recv` on the worker's current-thread runtime (which runs it
//! when the worker yields) never lags, whatever the capacity, as long as no single step
//! publishes more than `capacity` notifications (an interrupt or a stop,
//! which settle all the work in flight at once, count as one step). A step
//! that publishes more overflows the log: even a waiting subscriber then
//! misses the oldest of them. On a current-thread runtime a subscriber
//! never runs before the notifications are there, and elsewhere it sees
//! them at most one short burst later.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::ops::BitOr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};

use futures::Stream;

use super::error::TryRecvError;
use super::notification::{Notification, StateCopy};
use crate::StateMachine;

mod subscription;

pub use subscription::Subscription;

/// Which [`Notification`]s a [`Subscription`] receives; combine with `|`.
/// [`Notification::Lagged`] reaches every subscription.
///
/// ```
/// use agent_fsm::runtime::Topics;
///
/// let topics = Topics::TRANSITIONS | Topics::OUTPUT;
/// assert!(topics.contains(Topics::OUTPUT));
/// assert!(!topics.contains(Topics::ACTIONS));
/// assert!(Topics::ALL.contains(topics));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Topics(u8);

impl Topics {
    /// [`Notification::Transition`]: every hop, transient ones included.
    pub const TRANSITIONS: Self = Self(1);
    /// [`Notification::Unhandled`]: events the machine refused.
    pub const UNHANDLED: Self = Self(1 << 1);
    /// [`Notification::Action`]: every action, performed or not.
    pub const ACTIONS: Self = Self(1 << 2);
    /// [`Notification::Output`]: what the effects publish.
    pub const OUTPUT: Self = Self(1 << 3);
    /// [`Notification::EffectFailed`] and [`Notification::Interrupted`].
    pub const FAULTS: Self = Self(1 << 4);
    /// [`Notification::State`]: the whole state after each step a row
    /// accepted, a copy per step. Received only by subscriptions made with
    /// [`subscribe_with_states`](super::MachineHandle::subscribe_with_states),
    /// which can copy the state; not part of [`ALL`](Self::ALL), so that
    /// the default subscription stays as cheap as it was.
    pub const STATES: Self = Self(1 << 5);
    /// Every topic but [`STATES`](Self::STATES)
    /// ([`subscribe`](super::MachineHandle::subscribe)).
    pub const ALL: Self = Self((1 << 5) - 1);
    /// Every topic, [`STATES`](Self::STATES) included.
    const EVERY: Self = Self((1 << KINDS) - 1);

    /// Whether every topic of `other` is in `self`.
    #[must_use]
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The topic of `notification`; `None` for a lag notice, which every
    /// subscription receives.
    fn of<M: StateMachine, O>(notification: &Notification<M, O>) -> Option<Self> {
        Some(match notification {
            Notification::Transition(_) => Self::TRANSITIONS,
            Notification::Unhandled(_) => Self::UNHANDLED,
            Notification::Action { .. } => Self::ACTIONS,
            Notification::State(_) => Self::STATES,
            Notification::Output(_) => Self::OUTPUT,
            Notification::EffectFailed { .. } | Notification::Interrupted { .. } => Self::FAULTS,
            Notification::Lagged(_) => return None,
        })
    }

    /// `self` without the topics of `other`.
    #[must_use]
    pub const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    /// The topics one by one, as indices into the feed's counts.
    fn bits(self) -> impl Iterator<Item = usize> {
        (0..KINDS).filter(move |&i| self.0 & (1 << i) != 0)
    }

    /// The index of a single topic.
    fn index(self) -> usize {
        self.0.trailing_zeros() as usize
    }
}

impl BitOr for Topics {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// How many topics there are.
const KINDS: usize = 6;

/// Copies a machine's state for [`Notification::State`].
type CopyState<M> = fn(&<M as StateMachine>::State) -> StateCopy<<M as StateMachine>::State>;

/// The log shared by the worker and the subscriptions.
pub(crate) struct Feed<M: StateMachine, O> {
    state: Mutex<FeedState<M, O>>,
    /// Live subscriptions: while there are none, the worker records nothing.
    subscribers: AtomicUsize,
    /// Live subscriptions by topic: the worker records a notification only
    /// if one wants it.
    wanted: [AtomicUsize; KINDS],
    /// Sequence number of the next notification the worker records; a new
    /// subscription starts there.
    produced: AtomicU64,
    capacity: usize,
    /// Copies the state, set by the first subscription that wants
    /// [`Topics::STATES`] (which can name the bounds a copy needs): the
    /// worker copies the state only with it.
    copy_state: OnceLock<CopyState<M>>,
}

struct FeedState<M: StateMachine, O> {
    /// The last `capacity` flushed notifications (at most), oldest first.
    ring: VecDeque<Notification<M, O>>,
    /// Sequence number of `ring[0]`.
    first: u64,
    /// Set when the worker exits: subscriptions end once they have read
    /// everything.
    closed: bool,
    /// Subscriptions waiting for more, by id.
    waiters: Vec<(u64, Waker)>,
    next_id: u64,
}

impl<M: StateMachine, O> FeedState<M, O> {
    /// One past the newest flushed sequence number.
    fn end(&self) -> u64 {
        self.first + self.ring.len() as u64
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding this lock but a notification's `clone`;
    // the log is still consistent then.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<M: StateMachine, O> Feed<M, O> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(FeedState {
                ring: VecDeque::new(),
                first: 0,
                closed: false,
                waiters: Vec::new(),
                next_id: 0,
            }),
            subscribers: AtomicUsize::new(0),
            wanted: Default::default(),
            produced: AtomicU64::new(0),
            capacity: capacity.max(1),
            copy_state: OnceLock::new(),
        }
    }

    /// A new subscription to `topics` and to [`Topics::STATES`].
    pub(crate) fn subscribe_with_states(self: &Arc<Self>, topics: Topics) -> Subscription<M, O>
    where
        M::State: Clone + Send + Sync + 'static,
    {
        let _ = self.copy_state.set(StateCopy::new);
        self.subscribe(topics | Topics::STATES)
    }

    /// A new subscription to `topics`, starting after every notification
    /// recorded so far.
    pub(crate) fn subscribe(self: &Arc<Self>, topics: Topics) -> Subscription<M, O> {
        let id = {
            let mut state = lock(&self.state);
            state.next_id += 1;
            state.next_id
        };
        // Counted before reading the position: the worker records whatever
        // it produces from here on, and the subscription skips what came
        // before its position.
        for i in topics.bits() {
            self.wanted[i].fetch_add(1, Ordering::SeqCst);
        }
        self.subscribers.fetch_add(1, Ordering::SeqCst);
        let next = self.produced.load(Ordering::SeqCst);
        Subscription { feed: Arc::clone(self), id, topics, next, taken: VecDeque::new() }
    }

    /// A subscription that ends at once (the worker is gone).
    pub(crate) fn ended() -> Subscription<M, O> {
        let feed = Arc::new(Self::new(1));
        lock(&feed.state).closed = true;
        feed.subscribe(Topics::ALL)
    }

    /// Ends every subscription once it has read what is kept.
    pub(crate) fn close(&self) {
        let waiters = {
            let mut state = lock(&self.state);
            state.closed = true;
            std::mem::take(&mut state.waiters)
        };
        for (_, waker) in waiters {
            waker.wake();
        }
    }
}

/// The worker's side: buffers a burst's notifications, free until someone
/// subscribes.
pub(crate) struct Notifier<M: StateMachine, O> {
    /// Boxed: an agent nobody ever watched carries one pointer for it.
    attached: Option<Box<Attached<M, O>>>,
}

/// The notifier of an agent someone subscribed to.
struct Attached<M: StateMachine, O> {
    feed: Arc<Feed<M, O>>,
    /// Recorded since the last flush.
    pending: VecDeque<Notification<M, O>>,
    /// Sequence number of the next notification recorded.
    produced: u64,
    /// Reused to wake the waiting subscriptions outside the lock.
    wake: Vec<(u64, Waker)>,
    /// A flush woke waiting subscriptions and the worker has not yielded
    /// since: until it does, the log keeps what they have not had a turn
    /// to read.
    woke: bool,
}

impl<M: StateMachine, O> Notifier<M, O> {
    pub(crate) fn new() -> Self {
        Self { attached: None }
    }

    /// Whether the feed was picked up (someone subscribed once).
    #[inline]
    pub(crate) fn attached(&self) -> bool {
        self.attached.is_some()
    }

    /// Picks up the feed created by a first `subscribe`.
    pub(crate) fn attach(&mut self, feed: Arc<Feed<M, O>>) {
        let produced = feed.produced.load(Ordering::SeqCst);
        self.attached =
            Some(Box::new(Attached { feed, pending: VecDeque::new(), produced, wake: Vec::new(), woke: false }));
    }

    /// Records the notification `make` builds, if a subscription wants
    /// its `topic`.
    #[inline]
    pub(crate) fn publish(&mut self, topic: Topics, make: impl FnOnce() -> Notification<M, O>) {
        if let Some(attached) = &mut self.attached
            && attached.feed.wanted[topic.index()].load(Ordering::Relaxed) > 0
        {
            attached.pending.push_back(make());
            attached.produced += 1;
            attached.feed.produced.store(attached.produced, Ordering::Release);
            // A long burst (an action publishing many outputs) is handed
            // over once it fills the log, so the buffer stays bounded.
            if attached.pending.len() >= attached.feed.capacity {
                attached.flush();
            }
        }
    }

    /// Records a copy of `state`, if a subscription wants
    /// [`Topics::STATES`] (then it set how to copy it).
    #[inline]
    pub(crate) fn publish_state(&mut self, state: &M::State) {
        if let Some(attached) = &self.attached
            && attached.feed.wanted[Topics::STATES.index()].load(Ordering::Relaxed) > 0
            && let Some(&copy) = attached.feed.copy_state.get()
        {
            self.publish(Topics::STATES, || Notification::State(copy(state)));
        }
    }

    /// Whether a flush woke waiting subscriptions since the worker last
    /// yielded: it must yield before its next input, so that they read
    /// what was handed over.
    #[inline]
    pub(crate) fn woke(&self) -> bool {
        matches!(&self.attached, Some(attached) if attached.woke)
    }

    /// Like [`woke`](Self::woke), and records that the worker yields now.
    #[inline]
    pub(crate) fn take_woke(&mut self) -> bool {
        match &mut self.attached {
            Some(attached) if attached.woke => {
                attached.woke = false;
                true
            }
            _ => false,
        }
    }

    /// Hands the recorded notifications to the subscriptions and wakes the
    /// waiting ones.
    #[inline]
    pub(crate) fn flush(&mut self) {
        if let Some(attached) = &mut self.attached
            && !attached.pending.is_empty()
        {
            attached.flush();
        }
    }

    /// Flushes and ends every subscription once it has read what is kept.
    pub(crate) fn close(&mut self) {
        self.flush();
        if let Some(attached) = self.attached.take() {
            attached.feed.close();
        }
    }
}

impl<M: StateMachine, O> Attached<M, O> {
    /// Hands the buffer over and wakes the waiting subscriptions.
    #[cold]
    fn flush(&mut self) {
        let feed = &self.feed;
        let start = self.produced - self.pending.len() as u64;
        {
            let mut state = lock(&feed.state);
            if state.ring.is_empty() {
                // The usual case (subscribers keep up): hand the buffer over
                // whole and keep the emptied one.
                std::mem::swap(&mut state.ring, &mut self.pending);
                state.first = start;
            } else {
                state.ring.extend(self.pending.drain(..));
            }
            // Subscriptions woken by an earlier flush have not had their
            // turn yet if the worker has not yielded since: the log then
            // keeps up to one more log's worth, so that what was handed over
            // since (at most one step's notifications) does not push out
            // what they were woken for.
            let keep = if self.woke { feed.capacity.saturating_mul(2) } else { feed.capacity };
            let excess = state.ring.len().saturating_sub(keep);
            if excess > 0 {
                state.ring.drain(..excess);
                state.first += excess as u64;
            }
            // Swapped rather than taken: both buffers keep their capacity.
            std::mem::swap(&mut state.waiters, &mut self.wake);
        }
        self.woke |= !self.wake.is_empty();
        for (_, waker) in self.wake.drain(..) {
            waker.wake();
        }
    }
}

#[cfg(test)]
mod tests;
