//! [`ExecutorConfig`]: every knob of one executor, built once and shared.
//!
//! The settings live behind an `Arc`, so spawning thousands of agents from
//! one configuration costs one pointer per agent, and the agents share one
//! [`TaskTracker`] to wait on at application shutdown.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::{ActionKindOf, EventKindOf, Kind, Observer, StateKindOf, StateMachine};

/// Builds the event delivered after an interrupt, from its cause.
pub(crate) type InterruptEventFn<E> = dyn Fn(&str) -> E + Send + Sync;
/// The interrupt event's kind and how to build it.
pub(crate) type InterruptEvent<M> = (EventKindOf<M>, Arc<InterruptEventFn<<M as StateMachine>::Event>>);
/// Clones an event, for the event log.
pub(crate) type CloneEventFn<E> = fn(&E) -> E;
/// Builds the event delivered on shutdown.
pub(crate) type ShutdownEventFn<E> = dyn Fn() -> Option<E> + Send + Sync;
/// Builds one agent's synchronous observer.
pub(crate) type MakeObserverFn<M> = dyn Fn() -> Box<dyn Observer<M> + Send> + Send + Sync;

/// How an executor runs one machine. Cheap to clone: clones share the
/// settings and the [`TaskTracker`].
///
/// The limits are per agent, even when one configuration is shared:
/// every agent spawned from it gets its own inbox, concurrency limit,
/// timeouts, history and notification log (and an observer of its own).
/// Only the tracker and the cancellation token, if any, are shared.
///
/// # Examples
/// ```
/// # use agent_fsm::runtime::ExecutorConfig;
/// # fn config<M: agent_fsm::StateMachine>() -> ExecutorConfig<M> {
/// use std::time::Duration;
///
/// ExecutorConfig::new()
///     .concurrency_limit(4)
///     .task_timeout(Duration::from_secs(30))
///     .stream_timeout(Duration::from_secs(120))
///     .history_capacity(256)
/// # }
/// ```
pub struct ExecutorConfig<M: StateMachine> {
    pub(crate) inner: Arc<Settings<M>>,
}

/// The settings; see the setters on [`ExecutorConfig`] for each meaning.
pub(crate) struct Settings<M: StateMachine> {
    pub(crate) inbox_capacity: usize,
    pub(crate) concurrency_limit: usize,
    pub(crate) task_timeout: Option<Duration>,
    pub(crate) stream_timeout: Option<Duration>,
    pub(crate) action_timeouts: Vec<(ActionKindOf<M>, Duration)>,
    /// Indexed by event kind: delivered from the inbox while effect work is
    /// in flight. Empty when no event is (the table marks none and the
    /// configuration lists none).
    pub(crate) during_work: Box<[bool]>,
    /// The agent's id, recorded in every span of its worker.
    pub(crate) agent_id: Option<Arc<str>>,
    pub(crate) history_capacity: usize,
    /// `Clone::clone` for the event type, set only by `record_events`, which
    /// is where the `M::Event: Clone` bound is checked.
    pub(crate) record_events: Option<CloneEventFn<M::Event>>,
    pub(crate) notification_capacity: usize,
    /// The interrupt event's kind (checked against the table at start)
    /// and how to build it.
    pub(crate) interrupt_event: Option<InterruptEvent<M>>,
    pub(crate) shutdown_event: Option<Arc<ShutdownEventFn<M::Event>>>,
    pub(crate) observer: Option<Arc<MakeObserverFn<M>>>,
    pub(crate) tracker: TaskTracker,
    pub(crate) cancel: Option<CancellationToken>,
    /// Whether the machine's description has a terminal state at all.
    pub(crate) has_terminal: bool,
    /// Where the agent's turns start and end, for their spans.
    #[cfg(feature = "otel")]
    pub(crate) turns: Option<Arc<crate::telemetry::AgentTurns<M>>>,
}

// Written by hand: a derive would require `M: Clone`.
impl<M: StateMachine> Clone for Settings<M> {
    fn clone(&self) -> Self {
        Self {
            inbox_capacity: self.inbox_capacity,
            concurrency_limit: self.concurrency_limit,
            task_timeout: self.task_timeout,
            stream_timeout: self.stream_timeout,
            action_timeouts: self.action_timeouts.clone(),
            during_work: self.during_work.clone(),
            agent_id: self.agent_id.clone(),
            history_capacity: self.history_capacity,
            record_events: self.record_events,
            notification_capacity: self.notification_capacity,
            interrupt_event: self.interrupt_event.clone(),
            shutdown_event: self.shutdown_event.clone(),
            observer: self.observer.clone(),
            tracker: self.tracker.clone(),
            cancel: self.cancel.clone(),
            has_terminal: self.has_terminal,
            #[cfg(feature = "otel")]
            turns: self.turns.clone(),
        }
    }
}

impl<M: StateMachine> Clone for ExecutorConfig<M> {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner) }
    }
}

impl<M: StateMachine> Default for ExecutorConfig<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: StateMachine> fmt::Debug for ExecutorConfig<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.inner;
        f.debug_struct("ExecutorConfig")
            .field("machine", &M::DESCRIPTION.name)
            .field("inbox_capacity", &s.inbox_capacity)
            .field("concurrency_limit", &s.concurrency_limit)
            .field("task_timeout", &s.task_timeout)
            .field("stream_timeout", &s.stream_timeout)
            .field("action_timeouts", &s.action_timeouts)
            .field("during_work", &s.during_work_kinds())
            .field("agent_id", &s.agent_id)
            .field("history_capacity", &s.history_capacity)
            .field("record_events", &s.record_events.is_some())
            .field("notification_capacity", &s.notification_capacity)
            .field("interrupt_event", &s.interrupt_event.as_ref().map(|(kind, _)| kind))
            .field("shutdown_event", &s.shutdown_event.is_some())
            .field("observer", &s.observer.is_some())
            .field("tracker", &s.tracker)
            .field("cancel", &s.cancel)
            .finish()
    }
}

/// Defaults, in one place so the docs and the code agree.
impl<M: StateMachine> ExecutorConfig<M> {
    /// Default inbox capacity: one tokio mpsc block, so the channel never
    /// allocates a second block for an agent that is merely busy.
    pub const DEFAULT_INBOX_CAPACITY: usize = 32;
    /// Default hop log capacity.
    pub const DEFAULT_HISTORY_CAPACITY: usize = 32;
    /// Default capacity of the notification log (created on the first
    /// [`subscribe`](super::MachineHandle::subscribe)).
    pub const DEFAULT_NOTIFICATION_CAPACITY: usize = 256;
    /// Largest accepted inbox or notification capacity; larger values are
    /// clamped, since tokio panics on absurd channel sizes.
    pub const MAX_CAPACITY: usize = 1 << 20;

    /// The defaults: inbox 32, unlimited task concurrency, no timeouts,
    /// history of 32 hops, no event log, 256 notifications, no interrupt
    /// or shutdown event, a fresh [`TaskTracker`].
    #[must_use]
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Settings {
                inbox_capacity: Self::DEFAULT_INBOX_CAPACITY,
                concurrency_limit: usize::MAX,
                task_timeout: None,
                stream_timeout: None,
                action_timeouts: Vec::new(),
                during_work: during_work_mask::<M>(M::DURING_WORK),
                agent_id: None,
                history_capacity: Self::DEFAULT_HISTORY_CAPACITY,
                record_events: None,
                notification_capacity: Self::DEFAULT_NOTIFICATION_CAPACITY,
                interrupt_event: None,
                shutdown_event: None,
                observer: None,
                tracker: TaskTracker::new(),
                cancel: None,
                has_terminal: M::DESCRIPTION.states.iter().any(|s| s.terminal),
                #[cfg(feature = "otel")]
                turns: None,
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Settings<M>)) -> Self {
        f(Arc::make_mut(&mut self.inner));
        self
    }

    /// Capacity of the bounded inbox of external events (clamped to
    /// `1..=MAX_CAPACITY`). When it is full, [`send`](super::MachineHandle::send)
    /// waits and [`try_send`](super::MachineHandle::try_send) fails.
    #[must_use]
    pub fn inbox_capacity(self, capacity: usize) -> Self {
        self.edit(|s| s.inbox_capacity = capacity.clamp(1, Self::MAX_CAPACITY))
    }

    /// How many tasks ([`EffectContext::spawn_task`](super::EffectContext::spawn_task))
    /// of one agent run at once; later ones wait, in the order they were
    /// spawned. `1` runs tasks one after the other; `0` is read as `1`.
    /// Unlimited by default. The limit is per agent: ten agents spawned
    /// from a configuration with a limit of 4 may run 40 tasks at once.
    #[must_use]
    pub fn concurrency_limit(self, limit: usize) -> Self {
        self.edit(|s| s.concurrency_limit = limit.max(1))
    }

    /// Default timeout of each task, counted from when it starts running
    /// (not while it waits for a concurrency slot). A timeout of 30 years
    /// or more is taken as none.
    #[must_use]
    pub fn task_timeout(self, timeout: Duration) -> Self {
        self.edit(|s| s.task_timeout = Some(timeout))
    }

    /// Default timeout of each stream, counted from when it is opened: the
    /// whole stream must end within it. A timeout of 30 years or more is
    /// taken as none.
    #[must_use]
    pub fn stream_timeout(self, timeout: Duration) -> Self {
        self.edit(|s| s.stream_timeout = Some(timeout))
    }

    /// Overrides both timeouts for the streams and tasks started while
    /// performing the actions of kind `action` (for example a longer one
    /// for `ActionKind::ExecuteTools` than for
    /// `ActionKind::RunPostToolsHook`). The kind is the machine's own
    /// generated `ActionKind`, so a misspelt action does not compile.
    #[must_use]
    pub fn action_timeout(self, action: ActionKindOf<M>, timeout: Duration) -> Self {
        self.edit(|s| {
            s.action_timeouts.retain(|(kind, _)| *kind != action);
            s.action_timeouts.push((action, timeout));
        })
    }

    /// Delivers the events of kind `event` from the inbox as they arrive,
    /// even while effect work is in flight, as the table's `#[during_work]`
    /// marker does (for a machine whose table does not mark them, or a
    /// hand-written one). Other external events still wait for the work to
    /// end; see the runtime's [ordering rules](super#ordering).
    ///
    /// ```
    /// # use agent_fsm::runtime::ExecutorConfig;
    /// # use agent_fsm::state_machine;
    /// #[state_machine(fallback = Nothing, name = Chat)]
    /// mod chat {
    ///     #[states]
    ///     pub enum State { #[initial] Idle, Working }
    ///     #[events]
    ///     pub enum Event { Ask(String), Note(String), Done }
    ///     #[actions]
    ///     pub enum Action { Nothing, Work, Queue(String) }
    ///     transitions! {
    ///         Idle + Ask(_) => Working / Work,
    ///         Working + Note(text) => Working / Queue(text),
    ///         Working + Done => Idle / Nothing,
    ///         Idle + Note(_) => ignore,
    ///         Working + Ask(_) => ignore,
    ///         Idle + Done => ignore,
    ///     }
    /// }
    /// // A note the user types while the work runs reaches `Working` at once.
    /// let config = ExecutorConfig::<chat::Chat>::new().during_work(chat::EventKind::Note);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn during_work(self, event: EventKindOf<M>) -> Self {
        self.edit(|s| {
            if s.during_work.is_empty() {
                s.during_work = vec![false; <EventKindOf<M> as Kind>::ALL.len()].into();
            }
            if let Some(slot) = s.during_work.get_mut(event.index()) {
                *slot = true;
            }
        })
    }

    /// The agent's id (a session id, a user's name), recorded as the
    /// `agent` field of every `tracing` span the worker opens: each step's,
    /// and through it every task and stream the step started. Agents
    /// spawned from one configuration share it; give each its own
    /// configuration (a clone with another id costs one allocation).
    #[must_use]
    pub fn agent_id(self, id: impl Into<Arc<str>>) -> Self {
        let id = id.into();
        self.edit(|s| s.agent_id = Some(id))
    }

    /// Where the agent's turns start and end: each turn is an
    /// `invoke_agent` span, the parent of the turn's model calls, tool
    /// calls and hops (see [`telemetry`](crate::telemetry)). The agent's
    /// [id](Self::agent_id) is its `gen_ai.agent.id`. Without it no
    /// `invoke_agent` span is opened.
    #[cfg(feature = "otel")]
    #[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
    #[must_use]
    pub fn agent_turns(self, turns: crate::telemetry::AgentTurns<M>) -> Self {
        let turns = Arc::new(turns);
        self.edit(|s| s.turns = Some(turns))
    }

    /// How many hops the history keeps (older ones are evicted, and
    /// counted), and how many interrupt records; `0` keeps none of either
    /// but still sums time per state.
    #[must_use]
    pub fn history_capacity(self, capacity: usize) -> Self {
        self.edit(|s| s.history_capacity = capacity)
    }

    /// Records every delivered event in the history's event log, for
    /// [`replay`](super::replay). The log is unbounded: enable it for tests,
    /// debugging or short-lived agents.
    #[must_use]
    pub fn record_events(self) -> Self
    where
        M::Event: Clone,
    {
        self.edit(|s| s.record_events = Some(<M::Event as Clone>::clone))
    }

    /// How many notifications the notification log keeps for subscribers
    /// that have not taken them yet (clamped to `1..=MAX_CAPACITY`). A
    /// subscriber further behind than that receives
    /// [`Notification::Lagged`](super::Notification::Lagged) with the number
    /// it missed; what it has already taken is never lost.
    ///
    /// A subscriber task waiting in [`recv`](super::Subscription::recv) on
    /// the worker's current-thread runtime never falls behind, however small
    /// the log: after handing it a batch, the worker yields so that it reads
    /// before the worker goes on. That holds as long as no single step
    /// publishes more than `capacity` notifications (each hop, action,
    /// output and failure is one; an interrupt or a stop counts as one
    /// step); a step that publishes more overflows the log, and even a
    /// waiting subscriber then misses the oldest of them. A yield is no
    /// promise that a reader on another thread (a multi-thread runtime, the
    /// future a `block_on` runs) gets there first: such a reader, like one
    /// busy elsewhere, keeps up only if it comes back before `capacity`
    /// more notifications are published, so give it a log to match the
    /// bursts it must follow.
    #[must_use]
    pub fn notification_capacity(self, capacity: usize) -> Self {
        self.edit(|s| s.notification_capacity = capacity.clamp(1, Self::MAX_CAPACITY))
    }

    /// The event delivered at the end of an
    /// [`interrupt`](super::MachineHandle::interrupt), of kind `kind`,
    /// built by `make` from the interrupt's cause.
    ///
    /// An interrupt cancels the work in flight, and the actions its
    /// cancellation events return are not performed: the interrupt event
    /// is what moves the machine somewhere it can wait (for input,
    /// usually). So the table must say what it does in every state the
    /// machine can rest in: each one that is neither terminal nor
    /// transient needs a row for `kind` without a guard or a payload
    /// pattern (a `*` row does it for all), or an `=> ignore` pair (a state
    /// that waits for input needs nothing). Otherwise the worker fails
    /// before its first step with
    /// [`ConfigError::InterruptEventUnhandled`](super::ConfigError::InterruptEventUnhandled),
    /// naming the states. `make` must build an event of `kind`: one of
    /// another kind fails the worker at the interrupt with
    /// [`ConfigError::InterruptEventMismatch`](super::ConfigError::InterruptEventMismatch).
    ///
    /// Without an interrupt event, an agent cannot be interrupted:
    /// [`interrupt`](super::MachineHandle::interrupt) answers
    /// [`RequestError::NoInterruptEvent`](super::RequestError::NoInterruptEvent)
    /// and cancels nothing.
    #[must_use]
    pub fn interrupt_event(
        self,
        kind: EventKindOf<M>,
        make: impl Fn(&str) -> M::Event + Send + Sync + 'static,
    ) -> Self {
        self.edit(|s| s.interrupt_event = Some((kind, Arc::new(make))))
    }

    /// The event delivered on [`shutdown`](super::MachineHandle::shutdown),
    /// after in-flight work is cancelled (for example `ShutdownRequested`).
    #[must_use]
    pub fn shutdown_event(self, f: impl Fn() -> Option<M::Event> + Send + Sync + 'static) -> Self {
        self.edit(|s| s.shutdown_event = Some(Arc::new(f)))
    }

    /// Attaches a synchronous [`Observer`] to every agent spawned with this
    /// configuration: `make` builds one per agent when its worker starts.
    /// The worker calls it on every hop (transient states included) and
    /// every refused event of every event it delivers, in order, inside the
    /// step, after the history has recorded the hop and before the action,
    /// if it is to be performed, is performed (events drained after a stop
    /// are observed too, though their actions are not performed). The
    /// observer is dropped when the worker finishes, before anyone waiting
    /// on it ([`wait_finished`](super::MachineHandle::wait_finished)) hears
    /// so.
    ///
    /// It costs one call per hop, with no allocation and no other task:
    /// metrics and logs belong here. It runs on the agent's task, so it
    /// must be quick and must not block; a panic in it fails the agent like
    /// a panicking machine
    /// ([`WorkerError::MachinePanicked`](super::WorkerError::MachinePanicked)),
    /// and a panic in `make` fails it with
    /// [`WorkerError::ConfigPanicked`](super::WorkerError::ConfigPanicked).
    /// To receive hops elsewhere, asynchronously, use
    /// [`subscribe_to`](super::MachineHandle::subscribe_to) instead.
    /// Calling it again replaces the earlier observer.
    ///
    /// ```
    /// # use agent_fsm::runtime::ExecutorConfig;
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use agent_fsm::{Observer, StateMachine, StepOf};
    ///
    /// /// Counts hops across every agent.
    /// struct Hops(Arc<AtomicU64>);
    ///
    /// impl<M: StateMachine> Observer<M> for Hops {
    ///     fn on_transition(&mut self, _: &StepOf<M>) {
    ///         self.0.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// # fn config<M: agent_fsm::StateMachine>() -> ExecutorConfig<M> {
    /// let hops = Arc::new(AtomicU64::new(0));
    /// ExecutorConfig::new().observer(move || Hops(Arc::clone(&hops)))
    /// # }
    /// ```
    #[must_use]
    pub fn observer<O>(self, make: impl Fn() -> O + Send + Sync + 'static) -> Self
    where
        O: Observer<M> + Send + 'static,
    {
        let make: Arc<MakeObserverFn<M>> = Arc::new(move || Box::new(make()));
        self.edit(|s| s.observer = Some(make))
    }

    /// The tracker that [`spawn`](super::spawn) puts the worker on and that
    /// every task goes on. Share one tracker between agents to wait for all
    /// of them at application shutdown.
    #[must_use]
    pub fn tracker(self, tracker: TaskTracker) -> Self {
        self.edit(|s| s.tracker = tracker)
    }

    /// Shuts the machine down (like [`shutdown`](super::MachineHandle::shutdown))
    /// when `token` is cancelled, for example an application-wide token.
    #[must_use]
    pub fn cancel_on(self, token: CancellationToken) -> Self {
        self.edit(|s| s.cancel = Some(token))
    }

    /// The tracker every task of this configuration runs on.
    #[must_use]
    pub fn task_tracker(&self) -> &TaskTracker {
        &self.inner.tracker
    }
}

/// The mask of `kinds`, or an empty one if there are none.
fn during_work_mask<M: StateMachine>(kinds: &[EventKindOf<M>]) -> Box<[bool]> {
    if kinds.is_empty() {
        return Box::default();
    }
    let mut mask = vec![false; <EventKindOf<M> as Kind>::ALL.len()];
    for kind in kinds {
        if let Some(slot) = mask.get_mut(kind.index()) {
            *slot = true;
        }
    }
    mask.into()
}

impl<M: StateMachine> Settings<M> {
    /// Whether events may be delivered while effect work is in flight.
    #[inline]
    pub(crate) fn takes_input_during_work(&self) -> bool {
        !self.during_work.is_empty()
    }

    /// Whether `event` is delivered while effect work is in flight.
    pub(crate) fn is_during_work(&self, event: EventKindOf<M>) -> bool {
        self.during_work.get(event.index()).copied().unwrap_or(false)
    }

    /// The kinds delivered while effect work is in flight, for `Debug`.
    fn during_work_kinds(&self) -> Vec<EventKindOf<M>> {
        <EventKindOf<M> as Kind>::ALL.iter().copied().filter(|k| self.is_during_work(*k)).collect()
    }

    /// The timeouts for streams and tasks started by `action`.
    pub(crate) fn timeouts_for(&self, action: ActionKindOf<M>) -> (Option<Duration>, Option<Duration>) {
        match self.action_timeouts.iter().find(|(kind, _)| *kind == action) {
            Some((_, timeout)) => (Some(*timeout), Some(*timeout)),
            None => (self.stream_timeout, self.task_timeout),
        }
    }

    /// Checks the configuration against the machine's table, before the
    /// worker's first step: every state the machine can rest in must say
    /// what the interrupt event does there (see
    /// [`ExecutorConfig::interrupt_event`]).
    pub(crate) fn check(&self) -> Result<(), super::ConfigError<M>> {
        let Some((kind, _)) = &self.interrupt_event else {
            return Ok(());
        };
        let (event, table) = (Kind::name(*kind), M::DESCRIPTION);
        let lands = |state: &str| {
            table.ignored.iter().any(|&(s, e)| s == state && e == event)
                || table
                    .transitions
                    .iter()
                    .any(|t| t.from == state && t.event == Some(event) && t.guard.is_none() && t.pattern.is_none())
        };
        let states: Vec<StateKindOf<M>> = <StateKindOf<M> as Kind>::ALL
            .iter()
            .copied()
            .filter(|state| table.state(state.name()).is_some_and(|s| !s.terminal && !s.transient && !lands(s.name)))
            .collect();
        if states.is_empty() {
            Ok(())
        } else {
            Err(super::ConfigError::InterruptEventUnhandled { event: *kind, states })
        }
    }
}
