//! The subscriber's end of the feed: [`Subscription`] and its ways to
//! read (wait, try, stream), and what dropping one releases.

use super::*;

/// A stream of [`Notification`]s from one machine, from
/// [`MachineHandle::subscribe`](crate::runtime::MachineHandle::subscribe). Ends when
/// the worker exits.
pub struct Subscription<M: StateMachine, O> {
    pub(super) feed: Arc<Feed<M, O>>,
    pub(super) id: u64,
    /// What it receives; the log may hold other topics for other
    /// subscriptions.
    pub(super) topics: Topics,
    /// Sequence number of the next notification to take from the feed.
    pub(super) next: u64,
    /// Taken from the feed, not returned yet.
    pub(super) taken: VecDeque<Notification<M, O>>,
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
    pub(super) fn poll_feed(&mut self, waker: Option<&Waker>) -> Poll<Option<Notification<M, O>>> {
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
