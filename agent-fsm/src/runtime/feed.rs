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

/// A stream of [`Notification`]s from one machine, from
/// [`MachineHandle::subscribe`](super::MachineHandle::subscribe). Ends when
/// the worker exits.
pub struct Subscription<M: StateMachine, O> {
    feed: Arc<Feed<M, O>>,
    id: u64,
    /// What it receives; the log may hold other topics for other
    /// subscriptions.
    topics: Topics,
    /// Sequence number of the next notification to take from the feed.
    next: u64,
    /// Taken from the feed, not returned yet.
    taken: VecDeque<Notification<M, O>>,
}

impl<M: StateMachine, O> fmt::Debug for Subscription<M, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let in_feed = {
            let state = lock(&self.feed.state);
            state.end().saturating_sub(self.next.max(state.first))
        };
        let queued = in_feed + self.taken.len() as u64;
        f.debug_struct("Subscription").field("topics", &self.topics).field("queued", &queued).finish()
    }
}

impl<M: StateMachine, O> Subscription<M, O> {
    /// The next taken notification of this subscription's topics; the
    /// others are dropped on the way.
    #[inline]
    fn next_taken(&mut self) -> Option<Notification<M, O>> {
        if self.topics == Topics::EVERY {
            return self.taken.pop_front();
        }
        while let Some(notification) = self.taken.pop_front() {
            if Topics::of(&notification).is_none_or(|t| self.topics.contains(t)) {
                return Some(notification);
            }
        }
        None
    }

    /// The topics this subscription receives.
    #[must_use]
    pub fn topics(&self) -> Topics {
        self.topics
    }
}

impl<M: StateMachine, O: Clone> Subscription<M, O> {
    /// Takes what the feed holds for this subscription (call it once
    /// `taken` is empty): a lag notice, a notification, `Ready(None)` at the
    /// end, or `Pending` (registering `waker`, if given).
    fn poll_feed(&mut self, waker: Option<&Waker>) -> Poll<Option<Notification<M, O>>> {
        loop {
            match self.poll_feed_once(waker) {
                // Everything taken was of other topics: look again.
                Poll::Ready(Some(Taken::Nothing)) => {}
                Poll::Ready(Some(Taken::One(notification))) => return Poll::Ready(Some(notification)),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    fn poll_feed_once(&mut self, waker: Option<&Waker>) -> Poll<Option<Taken<M, O>>> {
        let mut state = lock(&self.feed.state);
        if self.next < state.first {
            let missed = state.first - self.next;
            self.next = state.first;
            return Poll::Ready(Some(Taken::One(Notification::Lagged(missed))));
        }
        let end = state.end();
        if self.next < end {
            let skip = usize::try_from(self.next - state.first).unwrap_or(usize::MAX);
            if self.feed.subscribers.load(Ordering::SeqCst) == 1 {
                // The only subscription: take the whole log (later ones
                // start after it) and leave it the emptied buffer.
                std::mem::swap(&mut state.ring, &mut self.taken);
                state.first = end;
                self.taken.drain(..skip);
            } else {
                self.taken.extend(state.ring.range(skip..).cloned());
            }
            self.next = end;
            drop(state);
            return Poll::Ready(Some(self.next_taken().map_or(Taken::Nothing, Taken::One)));
        }
        if state.closed {
            return Poll::Ready(None);
        }
        if let Some(waker) = waker {
            let id = self.id;
            match state.waiters.iter_mut().find(|(w, _)| *w == id) {
                Some((_, registered)) => registered.clone_from(waker),
                None => state.waiters.push((id, waker.clone())),
            }
        }
        Poll::Pending
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Notification<M, O>>> {
        // Like a tokio channel, a subscriber that always finds something
        // still yields to the scheduler now and then: each visit to the feed
        // spends budget (what was taken in one visit, at most the feed's
        // capacity, is returned without).
        let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
        let polled = self.poll_feed(Some(cx.waker()));
        if polled.is_ready() {
            coop.made_progress();
        }
        polled
    }
}

impl<M: StateMachine, O: Clone + Send + 'static> Subscription<M, O> {
    /// The next notification; `None` once the worker has exited and every
    /// notification was read. Falling behind yields
    /// [`Notification::Lagged`] and the subscription carries on.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future loses nothing.
    pub fn recv(&mut self) -> impl Future<Output = Option<Notification<M, O>>> + '_ {
        Recv { subscription: self }
    }

    /// The next notification if one is ready, without waiting.
    ///
    /// # Errors
    /// [`TryRecvError::Empty`] if none is ready yet,
    /// [`TryRecvError::Closed`] once the worker has exited and every
    /// notification was read.
    pub fn try_recv(&mut self) -> Result<Notification<M, O>, TryRecvError> {
        if let Some(notification) = self.next_taken() {
            return Ok(notification);
        }
        match self.poll_feed(None) {
            Poll::Ready(Some(notification)) => Ok(notification),
            Poll::Ready(None) => Err(TryRecvError::Closed),
            Poll::Pending => Err(TryRecvError::Empty),
        }
    }

    /// The subscription as a [`Stream`].
    pub fn into_stream(self) -> impl Stream<Item = Notification<M, O>> + Send + 'static
    where
        M: 'static,
    {
        futures::stream::unfold(self, |mut this| async move { this.recv().await.map(|n| (n, this)) })
    }
}

impl<M: StateMachine, O> Drop for Subscription<M, O> {
    fn drop(&mut self) {
        for i in self.topics.bits() {
            self.feed.wanted[i].fetch_sub(1, Ordering::SeqCst);
        }
        let last = self.feed.subscribers.fetch_sub(1, Ordering::SeqCst) == 1;
        let freed = {
            let mut state = lock(&self.feed.state);
            let id = self.id;
            state.waiters.retain(|(w, _)| *w != id);
            if last {
                // Nobody is left to read what is kept (a later subscription
                // starts after it): free it, outside the lock.
                let end = state.end();
                state.first = end;
                std::mem::take(&mut state.ring)
            } else {
                VecDeque::new()
            }
        };
        drop(freed);
    }
}

/// What one visit to the feed took.
enum Taken<M: StateMachine, O> {
    One(Notification<M, O>),
    /// Only notifications of other topics.
    Nothing,
}

/// The future of [`Subscription::recv`]: written out rather than an `async`
/// block, which moved each notification through two more stack slots.
struct Recv<'a, M: StateMachine, O> {
    subscription: &'a mut Subscription<M, O>,
}

impl<M: StateMachine, O: Clone> Future for Recv<'_, M, O> {
    type Output = Option<Notification<M, O>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let subscription = &mut *self.get_mut().subscription;
        match subscription.next_taken() {
            Some(notification) => Poll::Ready(Some(notification)),
            None => subscription.poll_recv(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Step, state_machine};

    // Only some variants are built here.
    #[allow(dead_code, unreachable_pub)]
    #[state_machine(fallback = Dropped)]
    mod ab {
        #[states]
        #[derive(Clone, PartialEq)]
        pub enum State {
            #[initial]
            A,
            B,
        }
        #[events]
        pub enum Event {
            E,
        }
        #[actions]
        pub enum Action {
            Call,
            Ignored,
            Dropped,
        }
        transitions! {
            A + E => B / Call,
            B + E => A / Ignored,
        }
    }
    use ab::{ActionKind, EventKind, Machine, StateKind};

    type Note = Notification<Machine, ()>;

    fn hop(row: usize) -> Note {
        Notification::Transition(Step {
            from: StateKind::A,
            event: Some(EventKind::E),
            to: StateKind::B,
            action: None,
            row,
        })
    }

    fn rows(subscription: &mut Subscription<Machine, ()>) -> Vec<Result<usize, u64>> {
        std::iter::from_fn(|| subscription.try_recv().ok())
            .map(|n| match n {
                Notification::Transition(step) => Ok(step.row),
                Notification::Lagged(missed) => Err(missed),
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    /// A feed and its worker side, with `capacity`.
    fn feed(capacity: usize) -> (Arc<Feed<Machine, ()>>, Notifier<Machine, ()>) {
        let feed = Arc::new(Feed::new(capacity));
        let mut notifier = Notifier::new();
        notifier.attach(Arc::clone(&feed));
        (feed, notifier)
    }

    #[test]
    fn nothing_is_recorded_without_subscribers_and_a_subscription_starts_at_the_next_one() {
        let (feed, mut notifier) = feed(8);
        notifier.publish(Topics::TRANSITIONS, || hop(0));
        notifier.flush();
        let mut first = feed.subscribe(Topics::ALL);
        notifier.publish(Topics::TRANSITIONS, || hop(1));
        // Subscribed between a record and its flush: sees nothing before it.
        let mut second = feed.subscribe(Topics::ALL);
        notifier.publish(Topics::TRANSITIONS, || hop(2));
        assert_eq!(first.try_recv(), Err(TryRecvError::Empty), "nothing is visible before a flush");
        notifier.flush();
        assert_eq!(rows(&mut first), [Ok(1), Ok(2)]);
        assert_eq!(rows(&mut second), [Ok(2)]);
    }

    fn action(action: ActionKind) -> Note {
        Notification::Action { action, performed: true }
    }

    #[test]
    fn a_subscription_receives_its_topics_only_and_unwanted_topics_are_not_built() {
        let (feed, mut notifier) = feed(64);
        let built = std::cell::Cell::new(0);
        let mut hops = feed.subscribe(Topics::TRANSITIONS);
        notifier.publish(Topics::TRANSITIONS, || hop(0));
        notifier.publish(Topics::ACTIONS, || {
            built.set(built.get() + 1);
            action(ActionKind::Ignored)
        });
        notifier.flush();
        assert_eq!(built.get(), 0, "nobody wants actions, so none is built");
        assert_eq!(rows(&mut hops), [Ok(0)]);

        // A second subscription wants everything: the log holds both
        // topics, and each subscription reads its own.
        let mut all = feed.subscribe(Topics::TRANSITIONS | Topics::ACTIONS);
        notifier.publish(Topics::TRANSITIONS, || hop(1));
        notifier.publish(Topics::ACTIONS, || action(ActionKind::Call));
        notifier.publish(Topics::TRANSITIONS, || hop(2));
        notifier.flush();
        assert_eq!(rows(&mut hops), [Ok(1), Ok(2)]);
        let read: Vec<_> = std::iter::from_fn(|| all.try_recv().ok()).collect();
        assert_eq!(read, [hop(1), action(ActionKind::Call), hop(2)]);
        assert_eq!(hops.topics(), Topics::TRANSITIONS);

        // Once it is gone, actions are no longer built.
        drop(all);
        notifier.publish(Topics::ACTIONS, || {
            built.set(built.get() + 1);
            action(ActionKind::Dropped)
        });
        notifier.publish(Topics::TRANSITIONS, || hop(3));
        notifier.flush();
        assert_eq!(built.get(), 0);
        assert_eq!(rows(&mut hops), [Ok(3)]);
    }

    #[test]
    fn states_are_copied_only_while_a_subscription_asked_for_them() {
        let (feed, mut notifier) = feed(8);
        let mut plain = feed.subscribe(Topics::ALL);
        notifier.publish_state(&ab::State::B);
        notifier.publish(Topics::TRANSITIONS, || hop(0));
        notifier.flush();
        assert_eq!(rows(&mut plain), [Ok(0)], "no state without a subscription that asked for it");

        let mut full = feed.subscribe_with_states(Topics::TRANSITIONS);
        assert!(full.topics().contains(Topics::STATES));
        notifier.publish(Topics::TRANSITIONS, || hop(1));
        notifier.publish_state(&ab::State::B);
        notifier.flush();
        assert_eq!(full.try_recv(), Ok(hop(1)));
        let state = full.try_recv();
        assert_eq!(state, Ok(Notification::State(StateCopy::new(&ab::State::B))));
        assert_eq!(rows(&mut plain), [Ok(1)], "the plain subscription does not see the state");

        drop(full);
        let produced = feed.produced.load(Ordering::SeqCst);
        notifier.publish_state(&ab::State::A);
        notifier.flush();
        assert_eq!(feed.produced.load(Ordering::SeqCst), produced, "no copy once it is gone");
        assert_eq!(plain.try_recv(), Err(TryRecvError::Empty));
    }

    #[tokio::test(start_paused = true)]
    async fn recv_skips_a_batch_of_other_topics_and_waits_for_its_own() {
        let (feed, mut notifier) = feed(64);
        let _all = feed.subscribe(Topics::ALL);
        let mut hops = feed.subscribe(Topics::TRANSITIONS);
        notifier.publish(Topics::ACTIONS, || action(ActionKind::Call));
        notifier.flush();
        // Only an action in the log: nothing for this subscription yet.
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(1), hops.recv()).await;
        assert!(waiting.is_err(), "a batch of other topics is not a notification");
        notifier.publish(Topics::ACTIONS, || action(ActionKind::Ignored));
        notifier.publish(Topics::TRANSITIONS, || hop(7));
        notifier.flush();
        assert_eq!(hops.recv().await, Some(hop(7)));
        notifier.close();
        assert_eq!(hops.recv().await, None);
    }

    #[test]
    fn every_subscription_reads_every_notification_in_order() {
        let (feed, mut notifier) = feed(64);
        let mut a = feed.subscribe(Topics::ALL);
        let mut b = feed.subscribe(Topics::ALL);
        for row in 0..5 {
            notifier.publish(Topics::TRANSITIONS, || hop(row));
        }
        notifier.flush();
        assert_eq!(rows(&mut a), [Ok(0), Ok(1), Ok(2), Ok(3), Ok(4)]);
        notifier.publish(Topics::TRANSITIONS, || hop(5));
        notifier.flush();
        assert_eq!(rows(&mut a), [Ok(5)]);
        assert_eq!(rows(&mut b), [Ok(0), Ok(1), Ok(2), Ok(3), Ok(4), Ok(5)]);
        drop(b);
        // Alone now, `a` takes the log whole; nothing is lost or repeated.
        for row in 6..9 {
            notifier.publish(Topics::TRANSITIONS, || hop(row));
        }
        notifier.flush();
        assert_eq!(rows(&mut a), [Ok(6), Ok(7), Ok(8)]);
    }

    #[test]
    fn a_subscription_behind_by_more_than_the_capacity_lags_by_what_it_missed() {
        let (feed, mut notifier) = feed(3);
        let mut slow = feed.subscribe(Topics::ALL);
        for row in 0..5 {
            notifier.publish(Topics::TRANSITIONS, || hop(row));
            notifier.flush();
        }
        assert_eq!(rows(&mut slow), [Err(2), Ok(2), Ok(3), Ok(4)]);
        // What a subscription has taken is not lost by later overflows.
        for row in 5..7 {
            notifier.publish(Topics::TRANSITIONS, || hop(row));
        }
        notifier.flush();
        assert_eq!(slow.try_recv(), Ok(hop(5)));
        for row in 7..12 {
            notifier.publish(Topics::TRANSITIONS, || hop(row));
        }
        notifier.flush();
        assert_eq!(rows(&mut slow), [Ok(6), Err(2), Ok(9), Ok(10), Ok(11)]);
    }

    #[test]
    fn the_log_keeps_what_woken_subscriptions_have_not_read_until_the_worker_yields() {
        let (feed, mut notifier) = feed(4);
        let mut parked = feed.subscribe(Topics::ALL);
        let waker = futures::task::noop_waker();
        assert!(parked.poll_feed(Some(&waker)).is_pending(), "waiting, registered");
        // The fourth fills the log and wakes it; the rest of the step
        // follows before the worker yields, and the log keeps it all.
        for row in 0..7 {
            notifier.publish(Topics::TRANSITIONS, || hop(row));
        }
        notifier.flush();
        assert!(notifier.take_woke(), "the worker owes the subscription a turn");
        assert!(!notifier.take_woke());
        assert_eq!(rows(&mut parked), (0..7).map(Ok).collect::<Vec<_>>());
        // Once it has yielded, the log is back to its capacity: a
        // subscription that did not wait lags as before.
        let mut idle = feed.subscribe(Topics::ALL);
        for row in 7..13 {
            notifier.publish(Topics::TRANSITIONS, || hop(row));
        }
        notifier.flush();
        assert!(!notifier.take_woke(), "nobody was waiting");
        assert_eq!(rows(&mut idle), [Err(2), Ok(9), Ok(10), Ok(11), Ok(12)]);
    }

    #[test]
    fn closing_ends_subscriptions_after_what_is_kept() {
        let (feed, mut notifier) = feed(8);
        let mut subscription = feed.subscribe(Topics::ALL);
        notifier.publish(Topics::TRANSITIONS, || hop(0));
        notifier.close();
        assert_eq!(subscription.try_recv(), Ok(hop(0)));
        assert_eq!(subscription.try_recv(), Err(TryRecvError::Closed), "read to the end");
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        assert_eq!(rt.block_on(subscription.recv()), None);
        assert_eq!(rt.block_on(Feed::<Machine, ()>::ended().recv()), None);
    }

    #[test]
    fn a_waiting_subscription_is_woken_by_a_flush() {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        rt.block_on(async {
            let (feed, mut notifier) = feed(8);
            let mut subscription = feed.subscribe(Topics::ALL);
            let reader = tokio::spawn(async move { subscription.recv().await });
            tokio::task::yield_now().await;
            notifier.publish(Topics::TRANSITIONS, || hop(7));
            notifier.flush();
            assert_eq!(reader.await.ok().flatten(), Some(hop(7)));
        });
    }
}
