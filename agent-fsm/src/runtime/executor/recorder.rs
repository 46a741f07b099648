//! The observer each step runs with: history, visit counter, tracing, the
//! user's observer and notifications, per hop; and the small hot fields.

use super::*;

/// The history, created on first use with the machine's current state
/// (it is created no later than the first event, so that state is the
/// initial one, entered when the worker started).
#[inline]
pub(super) fn history_mut<'h, M: StateMachine, O>(
    history: &'h mut Option<Box<History<M>>>,
    machine: &M,
    shared: &Shared<M, O>,
    started: Option<Instant>,
) -> &'h mut History<M> {
    history.get_or_insert_with(|| new_history(machine, shared, started))
}

/// Out of line: it runs once per agent, and keeping it out of
/// [`history_mut`] keeps that one a test and a branch.
#[cold]
#[inline(never)]
pub(super) fn new_history<M: StateMachine, O>(
    machine: &M,
    shared: &Shared<M, O>,
    started: Option<Instant>,
) -> Box<History<M>> {
    let settings = &shared.settings;
    let started = started.unwrap_or_else(Instant::now);
    Box::new(History::new(machine.status(), settings.history_capacity, settings.record_events, started))
}

/// The observer the worker passes to `handle_event_with`: history, visit
/// counter, tracing, the user's observer and notifications, per hop.
pub(super) struct Recorder<'a, M: StateMachine, O> {
    pub(super) history: &'a mut History<M>,
    pub(super) hot: &'a mut Hot<M, O>,
    pub(super) user: Option<&'a mut (dyn Observer<M> + Send + 'static)>,
    /// What the step reported, for a call's [`Outcome`].
    pub(super) seen: Seen,
}

/// Notifies a hop, for an agent someone subscribed to.
#[inline(never)]
fn publish_hop<M: StateMachine, O>(notifier: &mut Notifier<M, O>, hop: &StepOf<M>) {
    notifier.publish(Topics::TRANSITIONS, || Notification::Transition(*hop));
}

/// The worker's small fields that a step's hops and its bookkeeping touch
/// (the step counter lives beside it), together:
/// a step's recorder reaches them through one pointer, and packed in one
/// struct they leave no padding that would make every agent's task a size
/// class bigger.
pub(super) struct Hot<M: StateMachine, O> {
    pub(super) notifier: Notifier<M, O>,
    /// When the worker started, i.e. entered the initial state (`None`
    /// until then): the history, created later, starts its first stay
    /// there. Kept here rather than in the shared state, where every idle
    /// agent would pay for it in a bigger allocation.
    pub(super) started: Option<Instant>,
    /// Incremented on every change of state (not on self-transitions);
    /// timers are stamped with it and die when it moves on.
    pub(super) visit: u32,
    /// The state changed (or the machine was poisoned) since the status was
    /// last published.
    pub(super) status_dirty: bool,
    pub(super) terminal: bool,
    pub(super) failed: bool,
    /// Each step is written to the durable agent's journal.
    pub(super) journaling: bool,
    /// The agent turn open, whose span each step enters.
    #[cfg(feature = "otel")]
    pub(super) turn: crate::telemetry::TurnState<M>,
    /// The handles on the hop metrics.
    #[cfg(feature = "metrics")]
    pub(super) hop_metrics: crate::telemetry::HopCounters,
    /// A durable agent's logged steps are being fed again at its start:
    /// the run that took them counted them and exported their hops, so
    /// they count for nothing and open no `transition` span.
    #[cfg(any(feature = "metrics", feature = "otel"))]
    pub(super) replaying: bool,
}

impl<M: StateMachine, O> Observer<M> for Recorder<'_, M, O> {
    /// Kept small, so that it inlines into the machine's dispatch: what
    /// runs only sometimes (a new record in the history, a subscriber's
    /// notification) is out of line behind one test each.
    #[inline(always)]
    fn on_transition(&mut self, hop: &StepOf<M>) {
        self.seen = Seen::Hop;
        #[cfg(feature = "metrics")]
        if !self.hot.replaying {
            // The first hop of a burst reads the clock; the others reuse it.
            self.history.read_clock_once();
            self.hot.hop_metrics.hop::<M>(hop, self.history.entered(), self.history.now());
        }
        #[cfg(feature = "otel")]
        self.hot.turn.hop(hop, !self.hot.replaying);
        let changed = hop.from != hop.to;
        // Reads the clock if the hop is the burst's first.
        self.history.on_hop(hop, changed);
        // Counts changes of state, without a branch. Wrapping: timers
        // compare visits for equality only.
        self.hot.visit = self.hot.visit.wrapping_add(u32::from(changed));
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
        if self.hot.notifier.attached() {
            publish_hop(&mut self.hot.notifier, hop);
        }
    }

    fn on_unhandled(&mut self, unhandled: &UnhandledOf<M>) {
        self.seen = Seen::Unhandled(unhandled.reason);
        #[cfg(feature = "metrics")]
        if !self.hot.replaying {
            crate::telemetry::count_refused::<M>(unhandled);
        }
        #[cfg(feature = "otel")]
        self.hot.turn.unhandled(unhandled.reason);
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
