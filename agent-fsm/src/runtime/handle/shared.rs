//! The state a worker shares with its handles: the status word, the
//! control queue and its waker, the feed, and the outcome once it ends;
//! and the messages that travel from handles to the worker.

use super::*;

/// A message in the inbox.
pub(crate) enum Envelope<E, R> {
    Event(E),
    Call(E, oneshot::Sender<R>),
}

/// A query run with the machine and its history: on the worker, or on what
/// it left when it stopped.
pub(super) type InspectJob<M> = Box<dyn FnOnce(&M, &History<M>) + Send>;

/// How the worker ended when it stopped normally: the machine and its
/// history as it left them, for the handles to read from then on. Allocated only then, so an agent pays for it only
/// once it has stopped.
pub(crate) struct Final<M: StateMachine> {
    /// Behind a lock of its own, so that a query never runs under the
    /// shared one.
    parked: Mutex<(M, History<M>)>,
}

impl<M: StateMachine> Final<M> {
    pub(crate) fn new(machine: M, history: History<M>) -> Self {
        Self { parked: Mutex::new((machine, history)) }
    }

    /// The parked machine's status.
    pub(crate) fn status(&self) -> Status<StateKindOf<M>> {
        lock(&self.parked).0.status()
    }

    /// Runs a query on the parked machine. The query catches its own
    /// panics, so none poisons the lock.
    pub(super) fn run(&self, job: InspectJob<M>) {
        let parked = lock(&self.parked);
        job(&parked.0, &parked.1);
    }
}

/// A request that bypasses the inbox.
pub(crate) enum Control<M: StateMachine> {
    Interrupt {
        cause: Arc<str>,
        done: oneshot::Sender<()>,
    },
    Shutdown,
    /// Runs on the worker with the machine and its history; the closure
    /// carries its own reply channel and catches its own panics.
    Inspect(InspectJob<M>),
    /// Answered when nothing is in flight and the inbox is empty.
    WaitIdle(oneshot::Sender<()>),
    /// Never answered: dropped when the worker exits.
    WaitFinished(oneshot::Sender<()>),
}

/// The part of [`Shared`] behind its one mutex: everything that is rarely
/// touched (one lock instead of three keeps an idle agent small).
pub(super) struct Locked<M: StateMachine, O> {
    /// The control queue and the feed, boxed: an agent with no request
    /// queued and no subscriber carries one pointer for them (see
    /// [`Shared`] on why its size matters).
    pub(super) rare: Option<Box<Rare<M, O>>>,
    /// The worker's waker while it sleeps, taken by the next control
    /// request (see [`Shared::register`]).
    pub(super) waker: Option<Waker>,
}

/// What [`Locked`] holds only while a request is queued or once someone
/// subscribed.
pub(super) struct Rare<M: StateMachine, O> {
    /// Control requests, oldest first; emptied buffers are freed.
    pub(super) queue: VecDeque<Control<M>>,
    /// Created by the first `subscribe`; closed when the worker exits,
    /// which ends every subscription.
    pub(super) feed: Option<Arc<Feed<M, O>>>,
}

impl<M: StateMachine, O> Locked<M, O> {
    /// The rarely used parts, allocated if missing.
    pub(super) fn rare(&mut self) -> &mut Rare<M, O> {
        self.rare.get_or_insert_with(|| Box::new(Rare { queue: VecDeque::new(), feed: None }))
    }

    /// Frees the rarely used parts once they hold nothing.
    fn tidy(&mut self) {
        if let Some(rare) = &mut self.rare {
            if !rare.queue.is_empty() {
                return;
            }
            if rare.feed.is_none() {
                self.rare = None;
            } else {
                // Requests are rare: free the buffer rather than keep it
                // for the agent's lifetime.
                rare.queue = VecDeque::new();
            }
        }
    }
}

/// What a machine's handles and its worker share.
///
/// Its size is part of what every agent costs at rest: allocated at 104
/// bytes or less (this struct at 88 or less, with the `Arc`'s counts),
/// it fits in the gaps glibc's allocator leaves before the channel's and
/// the task's 128-byte aligned allocations, and an idle agent costs what a
/// bare actor's does; at 120 bytes it costs about 130 more, at 136 up to
/// about 220. A unit test holds it to that budget.
pub(crate) struct Shared<M: StateMachine, O> {
    pub(super) locked: Mutex<Locked<M, O>>,
    /// Whether a control request is queued, readable without the lock: the
    /// worker's fast path when none is waiting (the usual case).
    /// (`u32`s and `bool`s here keep every agent's `Shared` in a smaller
    /// allocation.)
    pub(super) pending: AtomicBool,
    /// Set by the worker when it exits, under the lock: no more requests
    /// or subscriptions.
    pub(super) closed: AtomicBool,
    /// Whether the notification feed exists, so the worker need not lock.
    pub(super) subscribed: AtomicBool,
    /// The registered waker's vtable and data pointers, so that the worker
    /// can tell without the lock that the waker it would register is
    /// already there. Only the worker stores them (under the lock); a
    /// request that takes the waker resets the vtable to null, which no
    /// waker has.
    pub(super) armed_vtable: AtomicPtr<RawWakerVTable>,
    pub(super) armed_data: AtomicPtr<()>,
    pub(super) steps: AtomicU64,
    /// The current state as its kind's position in `ALL` plus one,
    /// readable without the lock; 0: poisoned.
    pub(super) state: AtomicU32,
    /// Set once when the worker stops: how it ended (with the final machine
    /// for queries), or the failure. Nothing when its future was dropped
    /// mid-run.
    /// Boxed: one pointer beside the `Once` rather than two.
    outcome: OnceLock<Box<Ending<M>>>,
    /// The configuration, shared by every agent spawned from it.
    pub(crate) settings: Arc<Settings<M>>,
}

/// How a worker ended: normally, with the final machine for queries, or
/// with the failure every later call reports.
pub(crate) type Ending<M> = Result<Arc<Final<M>>, Arc<WorkerError<M>>>;

/// Whether the control queue holds a request, for `Shared::pending`.
pub(super) fn has_requests<M: StateMachine, O>(locked: &Locked<M, O>) -> bool {
    locked.rare.as_ref().is_some_and(|rare| !rare.queue.is_empty())
}

/// A status as [`Shared::state`] holds it: the kind's position in `ALL`
/// plus one, 0 for poisoned.
#[inline]
pub(super) fn encode<K: Kind>(status: Status<K>) -> u32 {
    match status {
        Status::In(kind) => u32::try_from(kind.index()).map_or(0, |index| index.saturating_add(1)),
        Status::Poisoned => 0,
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding this lock; if something did, the data
    // (a queue, a name) is still consistent, so poisoning is ignored.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<M: StateMachine, O> Shared<M, O> {
    pub(crate) fn new(initial: Status<StateKindOf<M>>, settings: Arc<Settings<M>>) -> Self {
        Self {
            locked: Mutex::new(Locked { rare: None, waker: None }),
            pending: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            subscribed: AtomicBool::new(false),
            armed_vtable: AtomicPtr::new(std::ptr::null_mut()),
            armed_data: AtomicPtr::new(std::ptr::null_mut()),
            steps: AtomicU64::new(0),
            state: AtomicU32::new(encode(initial)),
            outcome: OnceLock::new(),
            settings,
        }
    }

    pub(super) fn push_control(&self, control: Control<M>) -> Result<(), Control<M>> {
        let waker = {
            let mut locked = lock(&self.locked);
            if self.closed.load(Ordering::Relaxed) {
                return Err(control);
            }
            locked.rare().queue.push_back(control);
            // Under the lock, where the worker arms its waker: either the
            // waker is here to take, or the worker arms it after this and
            // then looks at the queue once more (see `register`).
            self.pending.store(has_requests(&locked), Ordering::Release);
            self.disarm(&mut locked)
        };
        // Woken outside the lock: a waker may run code of its own.
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// Takes the registered waker (under the lock).
    pub(super) fn disarm(&self, locked: &mut Locked<M, O>) -> Option<Waker> {
        self.armed_vtable.store(std::ptr::null_mut(), Ordering::Release);
        locked.waker.take()
    }

    /// Wakes the worker on the next control request. The worker calls this
    /// before its last check before sleeping, so no request is missed.
    /// Registering the waker that is already there, untaken, costs two
    /// loads: no lock, no read-modify-write. Only the worker arms, so a
    /// pair that reads as armed was armed by it; if a request has taken
    /// the waker since, that request wakes it.
    #[inline]
    pub(crate) fn register(&self, waker: &Waker) {
        let vtable: *const RawWakerVTable = waker.vtable();
        if std::ptr::eq(self.armed_vtable.load(Ordering::Acquire), vtable)
            && std::ptr::eq(self.armed_data.load(Ordering::Acquire), waker.data())
        {
            return;
        }
        self.register_locked(waker);
    }

    #[cold]
    pub(super) fn register_locked(&self, waker: &Waker) {
        // Cloned before locking (a clone runs the waker's code). The pair
        // armed is the kept clone's: it stays valid as long as the clone
        // is kept, where the borrowed waker's data may not, and a later
        // waker could then reuse its address.
        let kept = waker.clone();
        let old = {
            let mut locked = lock(&self.locked);
            if self.closed.load(Ordering::Relaxed) {
                return;
            }
            // The data first: the vtable arms the pair.
            self.armed_data.store(kept.data().cast_mut(), Ordering::Release);
            self.armed_vtable.store(std::ptr::from_ref(kept.vtable()).cast_mut(), Ordering::Release);
            locked.waker.replace(kept)
        };
        // Dropped outside the lock, as a waker may run code of its own.
        drop(old);
    }

    /// Whether a control request is waiting (one atomic load).
    #[inline]
    pub(crate) fn control_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// The next control request, if any: one atomic load when there is none
    /// (checked before every event).
    #[inline]
    pub(crate) fn pop_control(&self) -> Option<Control<M>> {
        if !self.pending.load(Ordering::Acquire) {
            return None;
        }
        self.pop_control_locked()
    }

    pub(super) fn pop_control_locked(&self) -> Option<Control<M>> {
        let mut locked = lock(&self.locked);
        let control = locked.rare.as_mut().and_then(|rare| rare.queue.pop_front());
        locked.tidy();
        self.pending.store(has_requests(&locked), Ordering::Release);
        control
    }

    /// How the worker ended, once it has.
    #[inline]
    pub(crate) fn outcome(&self) -> Option<&Ending<M>> {
        self.outcome.get().map(|ending| &**ending)
    }

    /// Records how the worker ended; the first record stands.
    pub(crate) fn set_outcome(&self, ending: Ending<M>) {
        let _ = self.outcome.set(Box::new(ending));
    }

    /// Publishes the current state (one atomic store).
    #[inline]
    pub(crate) fn publish_state(&self, status: Status<StateKindOf<M>>) {
        self.state.store(encode(status), Ordering::Release);
    }

    /// The state last published.
    pub(super) fn status(&self) -> Status<StateKindOf<M>> {
        let index = self.state.load(Ordering::Acquire).checked_sub(1);
        match index.and_then(|index| <StateKindOf<M> as Kind>::ALL.get(usize::try_from(index).ok()?)) {
            Some(kind) => Status::In(*kind),
            None => Status::Poisoned,
        }
    }

    pub(crate) fn publish_steps(&self, steps: u64) {
        self.steps.store(steps, Ordering::Relaxed);
    }

    /// Closes the control queue and the notification feed (subscriptions
    /// end once they have read what it holds). The queries still queued
    /// run on the final machine if the worker left one (the outcome is set
    /// first); the rest of what was left is returned, for the caller to
    /// drop outside the lock.
    pub(crate) fn close(&self) -> impl Sized + use<M, O> {
        let (queue, feed, _waker) = {
            let mut locked = lock(&self.locked);
            self.closed.store(true, Ordering::Release);
            self.pending.store(false, Ordering::Release);
            // The worker's waker is not needed any more; dropped below.
            let waker = self.disarm(&mut locked);
            let rare = locked.rare.take().map(|rare| (rare.queue, rare.feed));
            let (queue, feed) = rare.unwrap_or_default();
            (queue, feed, waker)
        };
        if let Some(feed) = &feed {
            feed.close();
        }
        let mut rest = Vec::new();
        for control in queue {
            match control {
                Control::Inspect(job) => {
                    if let Err(job) = self.inspect_final(job) {
                        rest.push(Control::Inspect(job));
                    }
                }
                other => rest.push(other),
            }
        }
        (rest, feed)
    }

    /// Runs `job` on the machine the worker left when it stopped normally;
    /// hands it back if there is none (the worker is running, failed or
    /// was dropped).
    pub(super) fn inspect_final(&self, job: InspectJob<M>) -> Result<(), InspectJob<M>> {
        match self.outcome() {
            Some(Ok(last)) => {
                last.run(job);
                Ok(())
            }
            _ => Err(job),
        }
    }

    /// Whether anyone ever subscribed (the feed exists); no lock.
    #[inline]
    pub(crate) fn has_feed(&self) -> bool {
        self.subscribed.load(Ordering::Acquire)
    }

    /// The notification feed, if anyone ever subscribed.
    pub(crate) fn feed(&self) -> Option<Arc<Feed<M, O>>> {
        lock(&self.locked).rare.as_ref().and_then(|rare| rare.feed.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::test_machine::ab;

    /// A request queued behind another survives the first one's pop, and
    /// the box that held them is freed once the queue is empty and nobody
    /// subscribed.
    #[test]
    fn queued_requests_are_kept_and_their_box_freed_once_empty() {
        let settings = crate::runtime::ExecutorConfig::<ab::Machine>::new().inner;
        let shared = Shared::<ab::Machine, ()>::new(Status::In(ab::StateKind::A), settings);
        assert!(!shared.control_pending());
        assert!(shared.push_control(Control::Shutdown).is_ok());
        assert!(shared.push_control(Control::Shutdown).is_ok());
        assert!(shared.control_pending());
        assert!(matches!(shared.pop_control(), Some(Control::Shutdown)));
        assert!(shared.control_pending(), "the second request is still queued");
        assert!(matches!(shared.pop_control(), Some(Control::Shutdown)));
        assert!(!shared.control_pending());
        assert!(shared.pop_control().is_none());
        assert!(lock(&shared.locked).rare.is_none(), "an empty queue with no feed holds no allocation");
    }

    /// The budget [`Shared`]'s docs explain: an idle agent costs what a
    /// bare actor does only while this allocation fits the allocator's
    /// gaps.
    #[test]
    fn the_shared_state_fits_in_the_allocators_gaps() {
        let size = std::mem::size_of::<Shared<ab::Machine, ()>>();
        assert!(size <= 88, "`Shared` takes {size} bytes, past the 88 that keep an idle agent small");
    }
}
