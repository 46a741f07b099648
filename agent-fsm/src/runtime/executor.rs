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
//! the future's machinery. While nothing but the inbox has work, its
//! events are taken one after the other without the loop's look at every
//! source: only what a step, a handle or the cancellation token can change
//! between two events is looked at again, so the order and the priorities
//! above hold as they do input by input. Everything published to the
//! handles (status, notifications) is handed over once per burst, when the
//! worker pauses or answers someone, rather than once per event. A batch
//! of notifications that woke a subscriber makes the worker yield before
//! its next input, so that the subscriber reads it before the next batch
//! can push it out of the log.

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

mod control;
mod journal;
mod link;
mod recorder;
mod step;
mod stop;

use link::{Extras, Link, Waiter};
use recorder::{Hot, Recorder, history_mut, new_history};
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
            started: None,
            visit: 0,
            status_dirty: false,
            terminal: machine.is_terminal(),
            failed: false,
            journaling: false,
            #[cfg(feature = "otel")]
            turn: crate::telemetry::TurnState::new(),
            #[cfg(feature = "metrics")]
            hop_metrics: crate::telemetry::HopCounters::new(),
            #[cfg(any(feature = "metrics", feature = "otel"))]
            replaying: false,
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

/// Where a delivered event came from, as a durable agent's journal records
/// it (the step's origin in the store).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The handles' mailbox: `send`, `call`, `try_send`.
    Mailbox,
    /// The runtime itself: effect work, sends, timers, an interrupt, a
    /// replay.
    Runtime,
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
        self.hot.started = Some(Instant::now());
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
                        self.expire_clock();
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

    /// After an event or a call from the inbox: whether the next may be taken at
    /// once, without the loop's look at every source, because nothing but
    /// the inbox can have work. Only the sources an event's step can
    /// change, or a handle or a token can, are looked at again: effect
    /// work (ready or in flight), a failure, a terminal state,
    /// subscribers owed a yield, a control request and the cancellation
    /// token, if one is set up. Idle waiters and held-back
    /// events were looked at when the burst began; neither comes without a
    /// control request or effect work.
    #[inline]
    fn burst_goes_on(&self) -> bool {
        !self.hot.failed
            && !self.hot.terminal
            && !self.hot.notifier.woke()
            && !self.link.shared.control_pending()
            && self.work.as_ref().is_none_or(|w| w.ready.is_empty() && !w.in_flight())
            && !self.link.shared.settings.cancel.as_ref().is_some_and(|token| token.is_cancelled())
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
        self.expire_clock();
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
        // A durable agent's writer thread failed: the agent stops now, not
        // at a next step that may not come.
        if self.hot.journaling && self.journal_failed(cx) {
            return Poll::Ready(None);
        }
        // Idle waiters, or external events held back while work was in
        // flight (see `poll_inbox_during_work`).
        let waiting =
            self.link.extras.as_ref().is_some_and(|extras| !extras.waiters.is_empty() || !extras.held.is_empty());
        if let Some(work) = &mut self.work
            && work.in_flight()
        {
            if let Poll::Ready(produced) = work.poll_next(cx) {
                match self.resolve(produced) {
                    Some(event) => self.deliver(event, Mode::Normal, None, Source::Runtime),
                    // A failure mapped to no event ended its work without a
                    // step: its end is written now, as a stream's normal
                    // end is, or a crash before the next step would perform
                    // that work again.
                    None if self.hot.journaling => self.journal_ended(),
                    None => {}
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
        // Whether the events after this one may be taken as a burst (see
        // `burst_goes_on`): not while an idle waiter waits for the inbox
        // to empty, which the burst would not stop to look at.
        let mut burst = true;
        if waiting {
            // The events held back go first, in the order received.
            if let Some(envelope) = self.link.extras.as_mut().and_then(|extras| extras.held.pop_front()) {
                self.deliver_envelope(envelope, Mode::Normal);
                return Poll::Ready(None);
            }
            if self.inbox.is_empty() {
                self.answer_idle_waiters();
            }
            burst = self.link.extras.as_ref().is_none_or(|extras| extras.waiters.iter().all(Waiter::waits_for_finish));
        }
        // Within a burst, seven events in eight are taken without a trip
        // through tokio's cooperative budget; the eighth goes through
        // `poll_recv`, which spends budget (so a flooded worker still yields
        // to its neighbours) and registers the worker when the inbox is empty.
        // After a reply the inbox is most likely empty (its caller waits
        // for the reply): straight to `poll_recv`, which looks and
        // registers in one go, rather than an empty `try_recv` first.
        let mut after_call = std::mem::take(replied);
        loop {
            // The two ways of taking an envelope meet on the envelope itself,
            // not on `poll_recv`'s `Poll<Option<..>>`: the compiler then
            // moves it once instead of re-encoding it between the two types.
            let taken = if !after_call && !self.steps.is_multiple_of(8) { self.inbox.try_recv().ok() } else { None };
            let envelope = match taken {
                Some(envelope) => envelope,
                None => match self.inbox.poll_recv(cx) {
                    Poll::Ready(Some(envelope)) => envelope,
                    // Every handle is gone: stop once nothing is in flight,
                    // the timers that let input through included (a deadline
                    // with no one left to answer before it still fires).
                    Poll::Ready(None) if self.work.as_ref().is_some_and(|w| w.in_flight()) => return Poll::Pending,
                    Poll::Ready(None) => return Poll::Ready(Some(StopReason::HandlesDropped)),
                    Poll::Pending => return Poll::Pending,
                },
            };
            // The hot path: inlined here only, a call too (a round trip
            // pays it once per event). After a call the burst goes on
            // as after an event, straight to `poll_recv`: its caller
            // waits for the reply, so the inbox is most likely empty, and
            // a pass through the loop's look at every source would be
            // paid on every round trip.
            let (event, reply) = match envelope {
                Envelope::Event(event) => (event, None),
                Envelope::Call(event, reply) => (event, Some(reply)),
            };
            after_call = reply.is_some();
            self.deliver_inline(event, Mode::Normal, reply, Source::Mailbox);
            if !(burst && self.burst_goes_on()) {
                *replied = after_call;
                return Poll::Ready(None);
            }
        }
    }
}
