//! The worker: one task that owns the machine and its effects, and the one
//! ordered path by which events reach `handle_event`.
//!
//! [`spawn`] puts the worker on tokio (on the configured
//! [`TaskTracker`](tokio_util::task::TaskTracker)); [`pair`] hands it back
//! as a future for callers who run it themselves (inside a tokio runtime
//! with time enabled). Each turn of the worker's loop takes *one* input, in
//! this priority:
//!
//! 1. a control request from a handle (interrupt, shutdown, query, wait);
//! 2. the configured cancellation token (treated as a shutdown);
//! 3. if effect work is in flight: the next due timer, finished task or
//!    stream item ([`work`](super::work) polls them in that order);
//! 4. otherwise: the next event from the inbox.
//!
//! It delivers the input, performs the returned action (which may schedule
//! more work), then delivers the events the effects `send` for immediate
//! delivery, before taking the next input. The rules this gives are listed
//! in the [module docs](super).
//!
//! The loop runs inside one poll ([`Worker::poll_run`]) until there is
//! nothing to do: a burst of events goes through it without returning to
//! the future's machinery, and everything published to the handles (status,
//! notifications) is handed over once per burst, when the worker pauses or
//! answers someone, rather than once per event. A batch of notifications
//! that woke a subscriber makes the worker yield before its next input, so
//! that the subscriber reads it before the next batch can push it out of
//! the log.

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::config::ExecutorConfig;
use super::durable::StepJournal;
use super::effects::{EffectContext, Effects, Env};
use super::error::{Performing, WorkerError, drop_caught, panic_message};
use super::feed::{Notifier, Topics};
use super::handle::{Control, Envelope, Final, MachineHandle, Shared};
use super::history::{EventRecord, History};
use super::notification::Notification;
use super::outcome::{Delivered, DeliveredTo, Outcome, Seen, outcome_of};
use super::work::{Produced, Work};

mod journal;
// Through the crate's own name (`extern crate self as agent_fsm` in lib.rs),
// as generated code does; it also keeps that declaration in use.
use agent_fsm::{ActionKindOf, EventKindOf, Kind, Kinded, Observer, StateMachine, Status, StepOf, UnhandledOf};

/// Starts `machine` on a new tokio task (tracked by the configuration's
/// tracker), performing its actions with `effects`, and returns a handle.
///
/// # Panics
/// Like `tokio::spawn`, if called outside a tokio runtime.
///
/// # Examples
/// ```
/// # use agent_fsm::runtime::{self, ExecutorConfig};
/// # async fn demo<M>(machine: M, first: M::Event)
/// # where M: agent_fsm::StateMachine + Send + 'static, M::Event: Send + 'static {
/// let handle = runtime::spawn(machine, (), ExecutorConfig::new());
/// handle.send(first).await.expect("the worker is running");
/// handle.wait_idle().await.expect("the worker is running");
/// println!("now in {}", handle.status());
/// handle.shutdown().await.expect("the worker did not fail");
/// # }
/// ```
pub fn spawn<M, E>(machine: M, effects: E, config: ExecutorConfig<M>) -> MachineHandle<M, E::Output>
where
    M: StateMachine + Send + 'static,
    M::Event: Send + 'static,
    E: Effects<M>,
{
    let tracker = config.inner.tracker.clone();
    let (handle, worker) = pair(machine, effects, config);
    tracker.spawn(worker);
    handle
}

/// Like [`spawn`], but returns the worker as a future for the caller to run
/// (`tokio::spawn`, a `select!`, a `LocalSet`...). It must be polled inside
/// a tokio runtime with time enabled; otherwise the worker stops at once
/// with [`WorkerError::NoRuntime`] or [`WorkerError::NoTimers`]. Dropping the future before it completes
/// aborts the machine's tasks; handles then report `Closed`.
pub fn pair<M, E>(
    machine: M,
    effects: E,
    config: ExecutorConfig<M>,
) -> (MachineHandle<M, E::Output>, impl Future<Output = ()> + Send + 'static)
where
    M: StateMachine + Send + 'static,
    M::Event: Send + 'static,
    E: Effects<M>,
{
    pair_with(machine, effects, config, None)
}

/// [`pair`], with the journal of a durable agent.
pub(crate) fn pair_with<M, E>(
    machine: M,
    effects: E,
    config: ExecutorConfig<M>,
    journal: Option<Box<dyn StepJournal<M>>>,
) -> (MachineHandle<M, E::Output>, impl Future<Output = ()> + Send + 'static)
where
    M: StateMachine + Send + 'static,
    M::Event: Send + 'static,
    E: Effects<M>,
{
    let settings = config.inner;
    let initial = machine.status();
    // Allocated before the channel, whose parts are 128-byte aligned: in
    // this order the allocator packs an agent tighter.
    let shared = Arc::new(Shared::new(initial, Arc::clone(&settings)));
    let (tx, rx) = mpsc::channel(settings.inbox_capacity.max(1));
    let mut worker = Worker {
        history: None,
        hot: Hot {
            notifier: Notifier::new(),
            clock: None,
            visit: 0,
            status_dirty: false,
            terminal: machine.is_terminal(),
            failed: false,
            journaling: false,
        },
        machine,
        effects,
        inbox: rx,
        link: Link {
            shared: Arc::clone(&shared),
            extras: journal.map(|journal| Box::new(Extras { journal: Some(journal), ..Extras::default() })),
        },
        work: None,
        steps: 0,
    };
    // An `async` block over the captured worker rather than an `async fn`
    // taking it by value: an `async fn` keeps its argument and the moved
    // local in separate slots of the future, doubling what every agent
    // costs at rest.
    (MachineHandle::new(tx, shared), async move {
        worker.run().await;
        worker.park();
    })
}

/// How often, in events, a long burst refreshes the clock and publishes
/// the status and the notifications.
const STATUS_EVERY: u64 = 64;

/// How many events the steps of an unbroken chain of sends may send before
/// the worker looks at its control requests and cancellation token, or
/// yields to the other tasks of its thread (as tokio's budget makes a
/// flooded inbox do).
const CHAIN_LIMIT: u32 = 1024;
// The inbox path looks for a due yield on every eighth step only.
const _: () = assert!(STATUS_EVERY.is_multiple_of(8));

/// How the action returned by a delivered event is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Performed.
    Normal,
    /// Performed, but any work it schedules is discarded: the action that
    /// entered a terminal state, or the shutdown event's.
    Final,
    /// Not performed: events owed by cancelled work, and events drained
    /// from the inbox after the worker stopped.
    Draining,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopReason {
    Shutdown,
    Terminal,
    HandlesDropped,
}

struct Worker<M: StateMachine, E: Effects<M>> {
    machine: M,
    effects: E,
    /// Receiver of the handles' inbox; closed by the worker when it stops.
    inbox: mpsc::Receiver<Envelope<M::Event, DeliveredTo<M>>>,
    /// The state shared with the handles, and the rarely used parts.
    link: Link<M, E::Output>,
    /// Created on first use, so that idle agents stay small.
    history: Option<Box<History<M>>>,
    /// Allocated by the first action that schedules work.
    work: Option<Box<Work<M::Event>>>,
    /// The small fields a step's hops and its bookkeeping touch.
    hot: Hot<M, E::Output>,
    steps: u64,
}

impl<M, E> Worker<M, E>
where
    M: StateMachine + Send + 'static,
    M::Event: Send + 'static,
    E: Effects<M>,
{
    /// The worker's life. Every await is a `poll_fn` over `&mut self`, so
    /// the future holds little beyond the worker itself (about 150 bytes
    /// less per agent than awaiting nested `async fn`s).
    async fn run(&mut self) {
        if self.start() {
            if let Some(reason) = poll_fn(|cx| self.poll_run(cx)).await {
                poll_fn(|cx| self.poll_pause(cx)).await;
                self.begin_stop(reason);
            }
            if !self.hot.failed {
                poll_fn(|cx| self.poll_drain_inbox(cx)).await;
            }
        }
        poll_fn(|cx| self.poll_pause(cx)).await;
        // What the drain published is visible while the tasks wind down.
        self.flush_status();
        if let Some(work) = &mut self.work {
            // Cancelled tasks stop at their next await point; wait for them
            // so that none outlives the worker.
            work.abort_all();
            poll_fn(|cx| work.poll_join_aborted(cx)).await;
        }
        self.finish();
    }

    /// Checks the runtime; false if the worker cannot run.
    fn start(&mut self) -> bool {
        // Blaming the first event for it would name the wrong cause.
        if self.machine.is_poisoned() {
            self.fail(WorkerError::SpawnedPoisoned);
            return false;
        }
        if Handle::try_current().is_err() {
            self.fail(WorkerError::NoRuntime);
            return false;
        };
        // Creating a timer panics when the runtime's time driver is off;
        // find out now rather than in the middle of an action.
        if catch_unwind(|| drop(tokio::time::sleep(Duration::ZERO))).is_err() {
            self.fail(WorkerError::NoTimers);
            return false;
        }
        if let Err(error) = self.link.shared.settings.check() {
            self.fail(WorkerError::Config(error));
            return false;
        }
        if let Some(token) = &self.link.shared.settings.cancel {
            self.extras_mut().cancel = Some(Box::pin(token.clone().cancelled_owned()));
        }
        // The observer lives with the rarely used parts: a field of its own
        // would make every agent's task a cache line bigger.
        let settings = Arc::clone(&self.link.shared.settings);
        if let Some(make) = &settings.observer {
            match catch_unwind(AssertUnwindSafe(|| make())) {
                Ok(observer) => self.extras_mut().observer = Some(observer),
                Err(payload) => {
                    self.fail(WorkerError::ConfigPanicked { callback: "observer", message: panic_message(&*payload) });
                    return false;
                }
            }
        }
        self.link.shared.set_started(Instant::now());
        if self.link.extras.as_ref().is_some_and(|extras| extras.journal.is_some()) && !self.start_journal() {
            return false;
        }
        tracing::debug!(machine = M::DESCRIPTION.name, state = %self.machine.status(), "worker started");
        true
    }

    /// The loop: takes the inputs in priority order and handles each one
    /// as it comes, until the worker must stop (`Some(reason)`), has failed
    /// (`None`) or has nothing to do (`Pending`, once everything is
    /// published and the worker is registered for every source).
    fn poll_run(&mut self, cx: &mut Context<'_>) -> Poll<Option<StopReason>> {
        let mut replied = false;
        loop {
            // What effects sent comes first, before control requests too;
            // this stops early only to yield (below), or to cut a chain of
            // sends that keeps going.
            let cut = self.work.as_ref().is_some_and(|w| !w.ready.is_empty()) && self.drain_ready();
            if cut {
                // The chain keeps the worker from its other sources: the
                // cancellation token, then control requests (below, past
                // the yield to subscribers); with neither, let the other
                // tasks of the thread run.
                if self.cancelled(cx) {
                    return Poll::Ready(Some(StopReason::Shutdown));
                }
                if !self.link.shared.control_pending() {
                    self.yield_now(cx);
                    return Poll::Pending;
                }
            }
            if self.hot.failed {
                return Poll::Ready(None);
            }
            if self.hot.terminal {
                return Poll::Ready(Some(StopReason::Terminal));
            }
            if !cut && self.hot.notifier.woke() && self.input_waiting() {
                // A batch of notifications woke subscribers: let them read
                // it before the next input, whose batch could otherwise
                // push it out of the log. One test per input, and only a
                // worker someone subscribed to ever yields here. With no
                // input waiting the worker is about to sleep, which lets
                // them run without the cost of a yield (a round trip's
                // reply, say).
                self.yield_now(cx);
                return Poll::Pending;
            }
            let turn = match self.link.shared.pop_control() {
                Some(control) => self.on_control(control),
                None => match self.poll_sources(cx, &mut replied) {
                    Poll::Ready(turn) => turn,
                    Poll::Pending => {
                        // Going to sleep: publish, then register for control
                        // requests and look once more, so that none pushed in
                        // between is missed. Registering only here keeps it
                        // off the per-event path.
                        self.flush_status();
                        self.hot.clock = None;
                        self.link.shared.register(cx.waker());
                        match self.link.shared.pop_control() {
                            Some(control) => self.on_control(control),
                            None => {
                                // Sleeping lets the subscribers just woken
                                // run: no yield is owed to them any more.
                                self.hot.notifier.take_woke();
                                return Poll::Pending;
                            }
                        }
                    }
                },
            };
            // A turn that stops the worker delivers nothing, so nothing
            // sent by effects is left behind here; a failed worker is
            // seen at the top of the loop.
            if let Some(reason) = turn {
                return Poll::Ready(if self.hot.failed { None } else { Some(reason) });
            }
        }
    }

    /// Whether an input may be taken at once: an event effects sent, a
    /// control request, an event in the inbox, or effect work in flight
    /// (which may be ready).
    #[inline]
    fn input_waiting(&self) -> bool {
        self.work.as_ref().is_some_and(|w| w.in_flight() || !w.ready.is_empty())
            || self.link.shared.control_pending()
            || !self.inbox.is_empty()
            || self.link.extras.as_ref().is_some_and(|extras| !extras.held.is_empty())
    }

    /// Yields once if a batch of notifications woke subscribers since the
    /// worker last yielded (see [`poll_run`](Self::poll_run)); used on the
    /// way out, before the stop protocol and the last flushes.
    fn poll_pause(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.hot.notifier.woke() {
            self.yield_now(cx);
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }

    /// Yields the thread, to the subscribers a flush woke or to the other
    /// tasks, and publishes the status first: whoever runs meanwhile reads
    /// a state name and step count as current as the notifications it was
    /// handed (the status is otherwise published only when the worker
    /// sleeps, serves a request or every `STATUS_EVERY` events).
    fn yield_now(&mut self, cx: &mut Context<'_>) {
        // Time passes while others run: the next hop reads the clock again,
        // or the history would charge that time to the wrong state.
        self.hot.clock = None;
        self.flush_status();
        self.hot.notifier.take_woke();
        cx.waker().wake_by_ref();
    }

    /// Takes and handles the next input after control requests: the
    /// cancellation token, then effect work, then (only when no work is in
    /// flight) the inbox. `Ready(Some(reason))` asks the loop to stop.
    /// `replied`: the last input taken was a `call` (reset here).
    #[inline]
    fn poll_sources(&mut self, cx: &mut Context<'_>, replied: &mut bool) -> Poll<Option<StopReason>> {
        // The rarely used parts, looked at once.
        if self.cancelled(cx) {
            return Poll::Ready(Some(StopReason::Shutdown));
        }
        // Idle waiters, or external events held back while work was in
        // flight (see `poll_inbox_during_work`).
        let waiting =
            self.link.extras.as_ref().is_some_and(|extras| !extras.waiters.is_empty() || !extras.held.is_empty());
        if let Some(work) = &mut self.work
            && work.in_flight()
        {
            if let Poll::Ready(produced) = work.poll_next(cx) {
                if let Some(event) = self.resolve(produced) {
                    self.deliver(event, Mode::Normal, None);
                }
                return Poll::Ready(None);
            }
            if self.hot.journaling {
                // A stream may have ended: its end is written now, not with
                // a next step that may never come.
                self.journal_ended();
            }
            let Some(work) = &mut self.work else { return Poll::Pending };
            // External events wait while effect work is in flight (but for
            // deadlines, which let them through), except those the machine
            // takes during work. A stream that just ended may have left
            // nothing in flight: go on to the inbox then, or nothing would
            // wake the worker.
            if work.busy() {
                if self.link.shared.settings.takes_input_during_work() {
                    return self.poll_inbox_during_work(cx);
                }
                return Poll::Pending;
            }
        }
        if waiting {
            // The events held back go first, in the order received.
            if let Some(envelope) = self.link.extras.as_mut().and_then(|extras| extras.held.pop_front()) {
                self.deliver_envelope(envelope, Mode::Normal);
                return Poll::Ready(None);
            }
            if self.inbox.is_empty() {
                self.answer_idle_waiters();
            }
        }
        // Within a burst, seven events in eight are taken without a trip
        // through tokio's cooperative budget; the eighth goes through
        // `poll_recv`, which spends budget (so a flooded worker still yields
        // to its neighbours) and registers the worker when the inbox is empty.
        // After a reply the inbox is most likely empty (its caller waits
        // for the reply): straight to `poll_recv`, which looks and
        // registers in one go, rather than an empty `try_recv` first.
        let after_call = std::mem::take(replied);
        let next = if !after_call
            && !self.steps.is_multiple_of(8)
            && let Ok(envelope) = self.inbox.try_recv()
        {
            Poll::Ready(Some(envelope))
        } else {
            self.inbox.poll_recv(cx)
        };
        match next {
            // The hot path: inlined here only.
            Poll::Ready(Some(Envelope::Event(event))) => {
                self.deliver_inline(event, Mode::Normal, None);
                Poll::Ready(None)
            }
            Poll::Ready(Some(Envelope::Call(event, reply))) => {
                self.deliver(event, Mode::Normal, Some(reply));
                *replied = true;
                Poll::Ready(None)
            }
            // Every handle is gone: stop once nothing is in flight, the
            // timers that let input through included (a deadline with no one
            // left to answer before it still fires).
            Poll::Ready(None) if self.work.as_ref().is_some_and(|w| w.in_flight()) => Poll::Pending,
            Poll::Ready(None) => Poll::Ready(Some(StopReason::HandlesDropped)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Effect work is in flight and the machine takes some events during
    /// it: delivers the next of those from the inbox, and holds the other
    /// events received before it back (in order) until the work is done.
    /// At most an inbox's capacity is held back; past that, the inbox is
    /// left alone until the work ends, so senders still wait on a full
    /// inbox. Out of line: only such machines, while busy, come here.
    #[cold]
    #[inline(never)]
    fn poll_inbox_during_work(&mut self, cx: &mut Context<'_>) -> Poll<Option<StopReason>> {
        let settings = Arc::clone(&self.link.shared.settings);
        loop {
            let held = self.link.extras.as_ref().map_or(0, |extras| extras.held.len());
            if held >= settings.inbox_capacity.max(1) {
                return Poll::Pending;
            }
            // Registers the worker when the inbox is empty. Closed and
            // empty: the work in flight wakes the worker.
            let Poll::Ready(Some(envelope)) = self.inbox.poll_recv(cx) else {
                return Poll::Pending;
            };
            let kind = match &envelope {
                Envelope::Event(event) | Envelope::Call(event, _) => event.kind(),
            };
            if settings.is_during_work(kind) {
                self.deliver_envelope(envelope, Mode::Normal);
                return Poll::Ready(None);
            }
            self.extras_mut().held.push_back(envelope);
        }
    }

    /// Whether the cancellation token of `ExecutorConfig::cancel_on` has
    /// fired (once: it is dropped then).
    #[inline]
    fn cancelled(&mut self, cx: &mut Context<'_>) -> bool {
        if let Some(extras) = &mut self.link.extras
            && let Some(cancel) = &mut extras.cancel
            && cancel.as_mut().poll(cx).is_ready()
        {
            extras.cancel = None;
            return true;
        }
        false
    }

    /// Publishes the state name, the step count and the buffered
    /// notifications to the handles. Called when the worker is about to
    /// sleep, before it serves any request or reply, and every
    /// [`STATUS_EVERY`] events, rather than on every event: a burst of
    /// events costs one publication.
    fn flush_status(&mut self) {
        if self.hot.status_dirty {
            self.hot.status_dirty = false;
            self.link.shared.publish_state(self.machine.status());
        }
        self.link.shared.publish_steps(self.steps);
        self.hot.notifier.flush();
    }

    /// Picks up the notification feed once someone has subscribed; one
    /// atomic load until then.
    #[inline]
    fn refresh_notifier(&mut self) {
        if !self.hot.notifier.attached() && self.link.shared.has_feed() {
            self.attach_notifier();
        }
    }

    #[cold]
    fn attach_notifier(&mut self) {
        if let Some(feed) = self.link.shared.feed() {
            self.hot.notifier.attach(feed);
        }
    }

    fn extras_mut(&mut self) -> &mut Extras<M> {
        self.link.extras.get_or_insert_with(Box::default)
    }

    /// Answers the idle waiters (the caller checked that nothing is in
    /// flight and the inbox is empty).
    fn answer_idle_waiters(&mut self) {
        self.flush_status();
        // `take` rather than `retain`: frees the buffer, since an idle agent
        // should hold no allocation it does not need.
        let Some(extras) = &mut self.link.extras else {
            return;
        };
        for waiter in std::mem::take(&mut extras.waiters) {
            match waiter {
                Waiter::Idle(tx) => {
                    let _ = tx.send(());
                }
                finished @ Waiter::Finished(_) => extras.waiters.push(finished),
            }
        }
    }

    fn on_control(&mut self, control: Control<M>) -> Option<StopReason> {
        // Whoever asks sees everything up to here.
        self.flush_status();
        match control {
            Control::Interrupt { cause, done } => {
                self.interrupt(cause);
                self.flush_status();
                if !self.hot.failed {
                    let _ = done.send(());
                }
                None
            }
            Control::Shutdown => Some(StopReason::Shutdown),
            // The job catches its own panics and carries its reply.
            Control::Inspect(job) => {
                let history = history_mut(&mut self.history, &self.machine, &self.link.shared);
                history.mark_read(Instant::now());
                job(&self.machine, history);
                None
            }
            Control::WaitIdle(waiter) => {
                Waiter::Idle(waiter).join(&mut self.extras_mut().waiters);
                None
            }
            Control::WaitFinished(waiter) => {
                Waiter::Finished(waiter).join(&mut self.extras_mut().waiters);
                None
            }
        }
    }

    /// Delivers the events effects sent for immediate delivery. Stops
    /// early, leaving the rest first in line, when a batch of notifications
    /// woke subscribers (the worker yields to them, see
    /// [`poll_run`](Self::poll_run)), except once the machine is terminal.
    ///
    /// A chain of sends may not end (an action whose send leads back to
    /// it). Returns true, to cut the chain, each time the chain's own steps
    /// have sent another [`CHAIN_LIMIT`] events, counted across calls until
    /// the chain ends: the worker then serves the cancellation token and
    /// control requests, or yields to the other tasks of its thread. What
    /// one action sends at once, however much, is never cut.
    fn drain_ready(&mut self) -> bool {
        while !self.hot.failed {
            let Some(work) = self.work.as_mut() else {
                break;
            };
            if work.ready.is_empty() {
                work.chain = 0;
                break;
            }
            if !self.hot.terminal && self.hot.notifier.woke() {
                break;
            }
            let Some(super::work::Immediate { event, id, .. }) = work.ready.pop_front() else {
                break;
            };
            if let Some(track) = &mut work.track {
                track.end(super::durable::WorkKind::Send, id);
            }
            let (older, cleared) = (work.ready.len(), work.ready_cleared);
            // After a terminal state nothing more is performed.
            let mode = if self.hot.terminal { Mode::Draining } else { Mode::Normal };
            self.deliver(event, mode, None);
            if let Some(work) = self.work.as_mut()
                && work.ready_cleared == cleared
                && work.ready.len() > older
            {
                let sent = work.ready.len() - older;
                // What this step's action sent goes before the events sent
                // earlier: each lands in the state the step that sent it left.
                if older > 0 {
                    work.ready.rotate_right(sent);
                }
                work.chain = work.chain.saturating_add(u32::try_from(sent).unwrap_or(u32::MAX));
                if !self.hot.terminal && work.chain >= CHAIN_LIMIT {
                    work.chain = 0;
                    return true;
                }
            }
        }
        false
    }

    fn deliver_envelope(&mut self, envelope: Envelope<M::Event, DeliveredTo<M>>, mode: Mode) {
        match envelope {
            Envelope::Event(event) => self.deliver(event, mode, None),
            Envelope::Call(event, reply) => self.deliver(event, mode, Some(reply)),
        }
    }

    /// Feeds one event to the machine and treats its action per `mode`.
    #[inline(never)]
    fn deliver(&mut self, event: M::Event, mode: Mode, reply: Option<oneshot::Sender<DeliveredTo<M>>>) {
        self.deliver_inline(event, mode, reply);
    }

    /// [`deliver`](Self::deliver)'s body, inlined into the worker's hot path
    /// (an event from the inbox) and called out of line everywhere else.
    #[inline(always)]
    fn deliver_inline(&mut self, event: M::Event, mode: Mode, reply: Option<oneshot::Sender<DeliveredTo<M>>>) {
        self.steps += 1;
        let step = self.steps;
        let event_kind = event.kind();
        // Disabled (no `tracing` subscriber wants it), this is a level check.
        // The tasks and streams the step's action starts run in it too.
        let span = tracing::debug_span!(
            "step",
            machine = M::DESCRIPTION.name,
            agent = self.link.shared.settings.agent_id.as_deref(),
            event = event_kind.name(),
            step
        );
        let _entered = span.enter();
        if self.hot.journaling && !self.journal_begin(&event) {
            return;
        }

        self.refresh_notifier();
        let history = history_mut(&mut self.history, &self.machine, &self.link.shared);
        // The event's `Clone` is user code.
        let logged = match history.clone_event() {
            None => None,
            Some(clone) => match catch_unwind(AssertUnwindSafe(|| clone(&event))) {
                Ok(copy) => Some(copy),
                Err(payload) => {
                    self.fail(WorkerError::EventClonePanicked { event: event_kind, message: panic_message(&*payload) });
                    return;
                }
            },
        };
        let visit_before = self.hot.visit;
        let status_due = step.is_multiple_of(STATUS_EVERY);
        if status_due {
            // Long bursts still refresh the clock now and then.
            self.hot.clock = None;
        }
        // Read only for a call, which answers with the step's outcome.
        let before = reply.as_ref().map(|_| (self.machine.status(), self.hot.terminal));
        let mut recorder = Recorder {
            history,
            hot: &mut self.hot,
            user: self.link.extras.as_deref_mut().and_then(|e| e.observer.as_deref_mut()),
            seen: Seen::Nothing,
        };
        let machine = &mut self.machine;
        let action = match catch_unwind(AssertUnwindSafe(|| machine.handle_event_with(event, &mut recorder))) {
            Ok(action) => action,
            Err(payload) => {
                self.fail(WorkerError::MachinePanicked { event: event_kind, message: panic_message(&*payload) });
                return;
            }
        };
        recorder.history.on_step(step);
        let seen = recorder.seen;

        if self.machine.is_poisoned() {
            // A row's code left it early without a panic (after a hop into
            // a transient state, maybe): nothing of the step is performed.
            self.fail_poisoned(event_kind, reply);
            return;
        }
        if seen == Seen::Hop {
            // A copy of the state, only if a subscription asked for one.
            self.hot.notifier.publish_state(self.machine.state());
        }
        if self.hot.visit != visit_before {
            if let Some(work) = &mut self.work {
                work.retain_timers(self.hot.visit);
            }
            // Machines without terminal states skip the name lookup.
            self.hot.terminal = self.link.shared.settings.has_terminal && self.machine.is_terminal();
            self.hot.status_dirty = true;
        }
        let action_kind = action.kind();
        if let Some(event) = logged
            && let Some(history) = &mut self.history
        {
            let state = self.machine.status();
            history.record_event(|| EventRecord { event, action: action_kind, state });
        }

        let mode = if self.hot.terminal && mode == Mode::Normal { Mode::Final } else { mode };
        let performed = mode != Mode::Draining;
        if performed {
            self.perform(action, action_kind, mode == Mode::Final);
        } else {
            tracing::debug!(action = action_kind.name(), "action not performed: the worker is cancelling or draining");
            self.hot
                .notifier
                .publish(Topics::ACTIONS, || Notification::Action { action: action_kind, performed: false });
        }
        if self.hot.journaling {
            self.journal_commit();
        }
        // A failed worker owes no reply: dropped, it tells the caller the
        // worker failed, as every later request does.
        if let Some(reply) = reply.filter(|_| !self.hot.failed) {
            self.flush_status();
            // The caller may have stopped waiting.
            let (from, finished) = before.unwrap_or((Status::Poisoned, false));
            let outcome = outcome_of(from, finished, seen, &self.machine, action_kind);
            let _ = reply.send(Delivered { outcome, performed: performed && !finished });
        } else if status_due {
            // In the middle of a burst: subscribers it woke get to read
            // before the worker goes on (see `poll_run`).
            self.flush_status();
        }
    }

    /// Hands `action` (of kind `kind`) to the effects; with `discard`, any
    /// work it schedules is dropped. Inlined into both copies of
    /// [`deliver_inline`](Self::deliver_inline), its only caller.
    #[inline(always)]
    fn perform(&mut self, action: M::Action, kind: ActionKindOf<M>, discard: bool) {
        self.hot.notifier.publish(Topics::ACTIONS, || Notification::Action { action: kind, performed: true });
        let settings = &*self.link.shared.settings;
        let mut cx = EffectContext {
            machine: &self.machine,
            env: Env { work: &mut self.work, tracker: &settings.tracker, limit: settings.concurrency_limit },
            notifier: &mut self.hot.notifier,
            shared: &self.link.shared,
            settings,
            action: kind,
            visit: self.hot.visit,
            discard,
        };
        let effects = &mut self.effects;
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| effects.perform(action, &mut cx))) {
            self.fail(WorkerError::EffectsPanicked {
                performing: Performing::Action(kind),
                key: None,
                message: panic_message(&*payload),
            });
        }
    }

    /// Turns a product of the work into the event to deliver, calling the
    /// failure callback (user code) under `catch_unwind`.
    fn resolve(&mut self, produced: Produced<M::Event>) -> Option<M::Event> {
        let (key, failure, callback) = match produced {
            Produced::Event(event) => return Some(event),
            Produced::StreamFailed { key, on_failure, failure } => {
                let f = failure.clone();
                (key, failure, Box::new(move || on_failure(f)) as Box<dyn FnOnce() -> Option<M::Event>>)
            }
            Produced::TaskFailed { key, on_failure, failure } => {
                let (k, f) = (key.clone(), failure.clone());
                let call = Box::new(move || Some(on_failure(k, f))) as Box<dyn FnOnce() -> Option<M::Event>>;
                (Some(key), failure, call)
            }
        };
        match &failure {
            super::EffectFailure::Cancelled => {
                tracing::debug!(key = key.as_deref(), "effect cancelled")
            }
            other => tracing::warn!(key = key.as_deref(), failure = %other, "effect failed"),
        }
        self.refresh_notifier();
        let owner = key.clone();
        self.hot.notifier.publish(Topics::FAULTS, || Notification::EffectFailed { key, failure });
        match catch_unwind(AssertUnwindSafe(callback)) {
            Ok(event) => event,
            Err(payload) => {
                self.fail(WorkerError::EffectsPanicked {
                    performing: Performing::OnFailure,
                    key: owner,
                    message: panic_message(&*payload),
                });
                None
            }
        }
    }

    /// Cancels the work in flight and delivers what it owes, without
    /// performing the resulting actions. An `interrupt` leaves the tasks
    /// spawned to survive one.
    fn cancel_in_flight(&mut self, interrupt: bool) {
        let Some(work) = &mut self.work else {
            return;
        };
        for produced in work.cancel_all(interrupt) {
            if let Some(event) = self.resolve(produced) {
                self.deliver(event, Mode::Draining, None);
            }
            if self.hot.failed {
                return;
            }
        }
    }

    fn interrupt(&mut self, cause: Arc<str>) {
        tracing::info!(machine = M::DESCRIPTION.name, cause = &*cause, "interrupt");
        self.cancel_in_flight(true);
        if self.hot.failed {
            return;
        }
        history_mut(&mut self.history, &self.machine, &self.link.shared)
            .record_interrupt(Arc::clone(&cause), Instant::now());
        self.refresh_notifier();
        self.hot.notifier.publish(Topics::FAULTS, || Notification::Interrupted { cause: Arc::clone(&cause) });
        let settings = Arc::clone(&self.link.shared.settings);
        // The handle refuses an interrupt without an interrupt event.
        if let Some((kind, make)) = &settings.interrupt_event {
            match catch_unwind(AssertUnwindSafe(|| make(&cause))) {
                Ok(event) if event.kind() == *kind => self.deliver(event, Mode::Normal, None),
                Ok(event) => self.fail(WorkerError::Config(super::ConfigError::InterruptEventMismatch {
                    configured: *kind,
                    built: event.kind(),
                })),
                Err(payload) => self.fail(WorkerError::ConfigPanicked {
                    callback: "interrupt_event",
                    message: panic_message(&*payload),
                }),
            }
        }
    }

    /// The stop protocol shared by shutdown, terminal states and dropped
    /// handles (see the module docs), up to draining the inbox.
    fn begin_stop(&mut self, reason: StopReason) {
        tracing::debug!(machine = M::DESCRIPTION.name, ?reason, "stopping");
        // A durable agent's store keeps it as it was before the stop: the
        // work cancelled now is in flight there, to be performed again
        // when the agent is spawned from the store.
        self.stop_journal();
        self.cancel_in_flight(false);
        if self.hot.failed {
            return;
        }
        if reason == StopReason::Shutdown {
            let settings = Arc::clone(&self.link.shared.settings);
            if let Some(make) = &settings.shutdown_event {
                match catch_unwind(AssertUnwindSafe(|| make())) {
                    Ok(Some(event)) => self.deliver(event, Mode::Final, None),
                    Ok(None) => {}
                    Err(payload) => self.fail(WorkerError::ConfigPanicked {
                        callback: "shutdown_event",
                        message: panic_message(&*payload),
                    }),
                }
            }
        }
        // `close` refuses new sends; buffered events stay for the drain.
        self.inbox.close();
    }

    /// Accepted events are never lost: delivers what is still queued after
    /// a stop, without performing it. `poll_recv` returns `None` once the
    /// closed inbox is empty.
    fn poll_drain_inbox(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while !self.hot.failed {
            // Subscribers woken by a batch read it before the next event.
            if self.hot.notifier.woke() {
                self.yield_now(cx);
                return Poll::Pending;
            }
            // Events held back while work was in flight came first.
            if let Some(envelope) = self.link.extras.as_mut().and_then(|extras| extras.held.pop_front()) {
                self.deliver_envelope(envelope, Mode::Draining);
                continue;
            }
            match self.inbox.poll_recv(cx) {
                Poll::Ready(Some(envelope)) => self.deliver_envelope(envelope, Mode::Draining),
                Poll::Ready(None) => break,
                Poll::Pending => {
                    self.flush_status();
                    self.hot.notifier.take_woke();
                    return Poll::Pending;
                }
            }
        }
        Poll::Ready(())
    }

    /// [`fail`](Self::fail) for a machine poisoned without a panic; out of
    /// line, off the per-event path.
    #[cold]
    #[inline(never)]
    fn fail_poisoned(&mut self, event: EventKindOf<M>, reply: Option<oneshot::Sender<DeliveredTo<M>>>) {
        if let Some(reply) = reply {
            let _ = reply.send(Delivered { outcome: Outcome::Poisoned, performed: false });
        }
        self.fail(WorkerError::MachinePoisoned { event });
    }

    fn fail(&mut self, error: WorkerError<M>) {
        tracing::error!(machine = M::DESCRIPTION.name, error = %error, "worker failed");
        // A failed step: the name reads as poisoned from now on (see
        // `finish`), not only once the work in flight has stopped.
        if error.is_step_failure() {
            self.link.shared.publish_state(Status::Poisoned);
            // A state change earlier in the burst, not yet published, must
            // not overwrite it while the work in flight winds down.
            self.hot.status_dirty = false;
        }
        // Before closing the inbox, so that a refused send reads the failure.
        let _ = self.link.shared.outcome.set(Err(Arc::new(error)));
        self.inbox.close();
        self.hot.failed = true;
    }

    /// Hands the last notifications over; `park` then records the outcome
    /// and closes the shared state.
    fn finish(&mut self) {
        self.stop_journal();
        // The observer goes first, so that whatever its `Drop` flushes is
        // done before anyone waiting on the worker hears it finished.
        self.link.drop_observer();
        // A step that panicked fails the worker, which never touches the
        // machine again: it reads as poisoned even where the panic left
        // the state whole (a guard's panic), as `fail` published it.
        let step_failed = matches!(self.link.shared.outcome.get(), Some(Err(e)) if e.is_step_failure());
        let state = if step_failed { Status::Poisoned } else { self.machine.status() };
        self.hot.status_dirty = !step_failed;
        self.flush_status();
        self.hot.notifier.close();
        tracing::debug!(machine = M::DESCRIPTION.name, state = %state, failed = self.hot.failed, "worker finished");
    }

    /// The end of the worker's life, after [`run`](Self::run): unless it
    /// failed (its outcome is recorded already), records the outcome with
    /// the machine and its history, which the handles read from then on,
    /// and closes the shared state, which wakes whoever waits on the worker.
    fn park(self) {
        let Self { machine, history, mut link, hot, effects, .. } = self;
        // Before the outcome is recorded, so that whatever the effects'
        // `Drop` flushes is done before anyone hears the worker finished.
        if let Some(message) = drop_caught(effects) {
            tracing::error!(machine = M::DESCRIPTION.name, panic = %message, "the effects panicked while being dropped");
        }
        if hot.failed {
            return;
        }
        let mut history = match history {
            Some(history) => *history,
            None => *new_history(&machine, &link.shared),
        };
        // The last stay ends now: reads of the parked history count up
        // to here, however much later they come.
        history.mark_read(Instant::now());
        let last = Final::new(machine, history);
        // Before closing: a query that finds the worker closed finds the
        // machine there.
        let _ = link.shared.outcome.set(Ok(Arc::new(last)));
        link.close();
    }
}

/// What the worker shares with its handles, and its rarely used parts:
/// closes the shared state when the worker goes, however it goes.
struct Link<M: StateMachine, O> {
    shared: Arc<Shared<M, O>>,
    /// Waiters, the cancellation token, the attached observer and the
    /// events held back during work: rarely used, so boxed on first use
    /// (at start with an observer) to keep idle agents small.
    extras: Option<Box<Extras<M>>>,
}

/// What the inbox of machine `M` holds.
type InboxEnvelope<M> = Envelope<<M as StateMachine>::Event, DeliveredTo<M>>;

impl<M: StateMachine, O> Link<M, O> {
    /// Drops the attached observer, if any.
    fn drop_observer(&mut self) {
        if let Some(observer) = self.extras.as_mut().and_then(|extras| extras.observer.take())
            && let Some(message) = drop_caught(observer)
        {
            tracing::error!(panic = %message, "the observer panicked while being dropped");
        }
    }

    /// Closes the shared state. The observer is dropped first, the waiters
    /// last, once the handles can read everything.
    fn close(&mut self) {
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
struct Extras<M: StateMachine> {
    waiters: Vec<Waiter>,
    cancel: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    /// Set by [`ExecutorConfig::observer`].
    observer: Option<Box<dyn Observer<M> + Send>>,
    /// External events taken from the inbox while effect work was in
    /// flight, to reach a `#[during_work]` event behind them; delivered,
    /// in order, once the work is done.
    held: VecDeque<InboxEnvelope<M>>,
    /// A durable agent's journal.
    journal: Option<Box<dyn StepJournal<M>>>,
}

impl<M: StateMachine> Default for Extras<M> {
    fn default() -> Self {
        Self { waiters: Vec::new(), cancel: None, observer: None, held: VecDeque::new(), journal: None }
    }
}

/// Someone waiting on the worker.
enum Waiter {
    /// Answered when nothing is in flight and the inbox is empty.
    Idle(oneshot::Sender<()>),
    /// Never answered: dropped when the worker exits.
    Finished(oneshot::Sender<()>),
}

impl Waiter {
    fn is_closed(&self) -> bool {
        match self {
            Self::Idle(tx) | Self::Finished(tx) => tx.is_closed(),
        }
    }

    /// Joins `waiters`, dropping those whose caller gave up waiting (a
    /// `wait_idle` under a timeout, polled by a UI): they would otherwise
    /// pile up until the next answer.
    fn join(self, waiters: &mut Vec<Waiter>) {
        waiters.retain(|w| !w.is_closed());
        waiters.push(self);
    }
}

/// The history, created on first use with the machine's current state
/// (it is created no later than the first event, so that state is the
/// initial one, entered when the worker started).
#[inline]
fn history_mut<'h, M: StateMachine, O>(
    history: &'h mut Option<Box<History<M>>>,
    machine: &M,
    shared: &Shared<M, O>,
) -> &'h mut History<M> {
    history.get_or_insert_with(|| new_history(machine, shared))
}

/// Out of line: it runs once per agent, and keeping it out of
/// [`history_mut`] keeps that one a test and a branch.
#[cold]
#[inline(never)]
fn new_history<M: StateMachine, O>(machine: &M, shared: &Shared<M, O>) -> Box<History<M>> {
    let settings = &shared.settings;
    Box::new(History::new(machine.status(), settings.history_capacity, settings.record_events, shared.started()))
}

/// The observer the worker passes to `handle_event_with`: history, visit
/// counter, tracing, the user's observer and notifications, per hop.
struct Recorder<'a, M: StateMachine, O> {
    history: &'a mut History<M>,
    hot: &'a mut Hot<M, O>,
    user: Option<&'a mut (dyn Observer<M> + Send + 'static)>,
    /// What the step reported, for a call's [`Outcome`].
    seen: Seen,
}

/// The worker's small fields that a step's hops and its bookkeeping touch
/// (the step counter lives beside it), together:
/// a step's recorder reaches them through one pointer, and packed in one
/// struct they leave no padding that would make every agent's task a size
/// class bigger.
struct Hot<M: StateMachine, O> {
    notifier: Notifier<M, O>,
    /// The time read for the current burst of events; cleared when the
    /// worker sleeps and every [`STATUS_EVERY`] events, so one clock read
    /// serves a burst.
    clock: Option<Instant>,
    /// Incremented on every change of state (not on self-transitions);
    /// timers are stamped with it and die when it moves on.
    visit: u32,
    /// The state changed (or the machine was poisoned) since the status was
    /// last published.
    status_dirty: bool,
    terminal: bool,
    failed: bool,
    /// Each step is written to the durable agent's journal.
    journaling: bool,
}

impl<M: StateMachine, O> Observer<M> for Recorder<'_, M, O> {
    #[inline]
    fn on_transition(&mut self, hop: &StepOf<M>) {
        self.seen = Seen::Hop;
        let now = *self.hot.clock.get_or_insert_with(Instant::now);
        let changed = hop.from != hop.to;
        self.history.on_hop(hop, changed, now);
        if changed {
            // Wrapping: timers compare visits for equality only.
            self.hot.visit = self.hot.visit.wrapping_add(1);
        }
        tracing::debug!(
            from = hop.from.name(),
            to = hop.to.name(),
            event = hop.event.map(Kind::name),
            action = hop.action.map(Kind::name),
            "transition"
        );
        if let Some(user) = &mut self.user {
            user.on_transition(hop);
        }
        self.hot.notifier.publish(Topics::TRANSITIONS, || Notification::Transition(*hop));
    }

    fn on_unhandled(&mut self, unhandled: &UnhandledOf<M>) {
        self.seen = Seen::Unhandled(unhandled.reason);
        tracing::debug!(
            state = %unhandled.state,
            event = unhandled.event.name(),
            reason = %unhandled.reason,
            "event not handled"
        );
        if let Some(user) = &mut self.user {
            user.on_unhandled(unhandled);
        }
        self.hot.notifier.publish(Topics::UNHANDLED, || Notification::Unhandled(*unhandled));
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
