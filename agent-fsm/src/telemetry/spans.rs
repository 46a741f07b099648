//! The spans of a turn and of a hop: [`AgentTurns`] says where a turn
//! starts and ends, the worker opens the turn's `invoke_agent` span and
//! every hop's `transition` span; [`layer`] exports them.

use std::fmt;
use std::sync::Arc;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::registry::LookupSpan;

use crate::{EventKindOf, StateKindOf, StateMachine};

/// The `tracing` layer that exports the spans through `provider`, its
/// tracer named `agent-fsm`.
pub fn layer<S>(provider: &SdkTracerProvider) -> OpenTelemetryLayer<S, Tracer>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    tracing_opentelemetry::layer().with_tracer(provider.tracer("agent-fsm"))
}

/// Where an agent's turns start and end: the `invoke_agent {name}` span
/// under which a turn's model calls, tool calls and hops are recorded.
///
/// A turn starts when one of the [`starts_on`](Self::starts_on) events is
/// delivered while no turn is open (a user's input), and ends with the
/// step whose hop enters one of the [`ends_in`](Self::ends_in) states (the
/// agent waits for input again) or a terminal state. A turn whose first
/// event the table does not handle ends with that step, its `error.type`
/// the reason (`no_row`, `refused`, `ignored`, `poisoned`); a turn the
/// worker's failure cuts short ends then, its `error.type` the failure's
/// kind (`machine_panicked`, `effects_panicked`, ..). Events outside a
/// turn (a shutdown while idle) have no `invoke_agent` parent.
///
/// A durable agent spawned again does not export again the turns that the
/// steps fed back from its log open and close (the run that took them
/// did). The turn it is in once rebuilt (left open by the run that
/// stopped, or met in the middle: a state that is not an end state)
/// goes on in a span of its own, which holds the steps that follow.
/// `agent_fsm.turn` counts the turns of one worker: after a restart, the
/// turns it was fed again and the one it goes on with.
///
/// # Examples
/// ```
/// use agent_fsm::runtime::ExecutorConfig;
/// use agent_fsm::telemetry::AgentTurns;
///
/// #[agent_fsm::state_machine(fallback = Nothing)]
/// mod chat {
///     #[states]
///     #[derive(Debug, Clone, PartialEq)]
///     pub enum State {
///         #[initial]
///         Idle,
///         Thinking,
///     }
///
///     #[events]
///     #[derive(Debug, Clone)]
///     pub enum Event {
///         Input,
///         Done,
///     }
///
///     #[actions]
///     #[derive(Debug)]
///     pub enum Action {
///         Nothing,
///         Think,
///     }
///
///     transitions! {
///         Idle + Input => Thinking / Think,
///         Thinking + Done => Idle / Nothing,
///     }
/// }
/// use chat::{EventKind, Machine, StateKind};
///
/// let turns = AgentTurns::new("chat").starts_on([EventKind::Input]).ends_in([StateKind::Idle]);
/// assert_eq!(turns.name(), "chat");
/// let config = ExecutorConfig::<Machine>::new().agent_turns(turns);
/// # let _ = config;
/// ```
pub struct AgentTurns<M: StateMachine> {
    name: Arc<str>,
    starts: Vec<EventKindOf<M>>,
    ends: Vec<StateKindOf<M>>,
}

impl<M: StateMachine> AgentTurns<M> {
    /// Turns of the agent called `name` (`gen_ai.agent.name`), starting on
    /// no event yet.
    #[must_use]
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Self { name: name.into(), starts: Vec::new(), ends: Vec::new() }
    }

    /// The events that start a turn when none is open.
    #[must_use]
    pub fn starts_on(mut self, events: impl IntoIterator<Item = EventKindOf<M>>) -> Self {
        self.starts.extend(events);
        self
    }

    /// The states whose entry ends the turn (terminal states always do).
    #[must_use]
    pub fn ends_in(mut self, states: impl IntoIterator<Item = StateKindOf<M>>) -> Self {
        self.ends.extend(states);
        self
    }

    /// The agent's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether entering `state` ends a turn: one of the end states, or a
    /// terminal state. Read by the worker only.
    #[cfg(feature = "runtime")]
    fn end(&self, state: StateKindOf<M>) -> bool {
        use crate::Kind as _;
        self.ends.contains(&state) || M::DESCRIPTION.states.get(state.index()).is_some_and(|s| s.terminal)
    }
}

impl<M: StateMachine> Clone for AgentTurns<M> {
    fn clone(&self) -> Self {
        Self { name: Arc::clone(&self.name), starts: self.starts.clone(), ends: self.ends.clone() }
    }
}

impl<M: StateMachine> fmt::Debug for AgentTurns<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTurns")
            .field("name", &self.name)
            .field("starts", &self.starts)
            .field("ends", &self.ends)
            .finish()
    }
}

/// A worker's turns: the one open, if any, and how many it opened.
#[cfg(feature = "runtime")]
pub(crate) struct TurnState<M: StateMachine> {
    open: Option<(tracing::Span, Arc<AgentTurns<M>>)>,
    count: u64,
    /// The open turn was opened by the step running now, which has taken
    /// no hop yet.
    fresh: bool,
}

#[cfg(feature = "runtime")]
impl<M: StateMachine> TurnState<M> {
    /// No turn yet.
    pub(crate) fn new() -> Self {
        Self { open: None, count: 0, fresh: false }
    }

    /// Before a step of `event`: enters the open turn's span, or opens one
    /// if `event` starts a turn. The returned guard is held for the whole
    /// step, so that what the step opens (hops, model calls, tool calls) is
    /// its child.
    ///
    /// While `replaying` (a restart feeding its log again) a turn is
    /// counted but given no span yet: a turn that opens and closes within
    /// the log was exported by the run that took it; one still open when
    /// the log ends gets its span then (see [`resumed`](Self::resumed)).
    pub(crate) fn enter(
        &mut self,
        turns: Option<&Arc<AgentTurns<M>>>,
        event: EventKindOf<M>,
        agent_id: Option<&str>,
        replaying: bool,
    ) -> Option<tracing::span::EnteredSpan> {
        if let Some((span, _)) = &self.open {
            self.fresh = false;
            return Some(span.clone().entered());
        }
        let turns = turns.filter(|t| t.starts.contains(&event))?;
        self.count += 1;
        let span = if replaying { tracing::Span::none() } else { turn_span(turns, agent_id, self.count) };
        self.open = Some((span.clone(), Arc::clone(turns)));
        self.fresh = true;
        Some(span.entered())
    }

    /// A restart rebuilt the agent in `state`, before feeding it the
    /// steps its log holds after that: an agent rebuilt in the middle of a
    /// turn (in a state that is not one the turns end in, nor terminal)
    /// is in a turn, counted as this worker's, which the steps fed may
    /// end.
    pub(crate) fn restored(&mut self, turns: Option<&Arc<AgentTurns<M>>>, state: crate::Status<StateKindOf<M>>) {
        let (Some(turns), crate::Status::In(state)) = (turns, state) else { return };
        if self.open.is_none() && !turns.end(state) {
            self.count += 1;
            self.open = Some((tracing::Span::none(), Arc::clone(turns)));
        }
    }

    /// The restart's log is fed: a turn it left open, whose run stopped
    /// before the turn's span could be exported, gets its span now, and
    /// the steps that follow are recorded in it.
    pub(crate) fn resumed(&mut self, agent_id: Option<&str>) {
        if let Some((span, turns)) = &mut self.open
            && span.is_none()
        {
            *span = turn_span(turns, agent_id, self.count);
        }
    }

    /// One hop: a `transition` span, opened and closed at once (a hop
    /// takes no time of its own), child of the step's current span; none
    /// without `span` (a logged hop fed again, exported when it was
    /// taken). Closes
    /// the open turn when the hop enters one of its end states or a
    /// terminal state; the step's guard keeps the turn's span open until
    /// the step is done.
    pub(crate) fn hop(&mut self, hop: &crate::StepOf<M>, span: bool) {
        use crate::Kind as _;
        let (from, to) = (hop.from.name(), hop.to.name());
        if span {
            tracing::info_span!(
                "transition",
                otel.name = format!("transition {from} -> {to}").as_str(),
                otel.kind = "internal",
                agent_fsm.machine = M::DESCRIPTION.name,
                agent_fsm.state.from = from,
                agent_fsm.state.to = to,
                agent_fsm.event = hop.event.map(|e| e.name()),
                agent_fsm.action = hop.action.map(|a| a.name()),
                agent_fsm.row = hop.row,
            )
            .in_scope(|| {});
        }
        self.fresh = false;
        if self.open.as_ref().is_some_and(|(_, turns)| turns.end(hop.to)) {
            self.open = None;
        }
    }

    /// The worker failed: the open turn ends here, `error.type` the
    /// failure's kind, rather than when the worker is dropped, as if it
    /// had gone well.
    pub(crate) fn failed(&mut self, error: &crate::runtime::WorkerError<M>) {
        use crate::runtime::WorkerError as E;
        self.fresh = false;
        if let Some((span, _)) = self.open.take() {
            let kind = match error {
                E::MachinePanicked { .. } => "machine_panicked",
                E::MachinePoisoned { .. } => "machine_poisoned",
                E::SpawnedPoisoned => "spawned_poisoned",
                E::EffectsPanicked { .. } => "effects_panicked",
                E::EventClonePanicked { .. } => "event_clone_panicked",
                E::ConfigPanicked { .. } => "config_panicked",
                E::NoRuntime => "no_runtime",
                E::NoTimers => "no_timers",
                E::Config(_) => "config",
                E::Store(_) => "store",
            };
            super::failed(&span, kind);
        }
    }

    /// The step's event was not handled. If it was the one that opened
    /// the turn, the turn ends with it, `error.type` the reason: the agent
    /// did nothing, and the turn left open would take in the steps that
    /// follow, up to the next end state, the next turn's input included.
    pub(crate) fn unhandled(&mut self, reason: crate::UnhandledReason) {
        if std::mem::take(&mut self.fresh)
            && let Some((span, _)) = self.open.take()
        {
            super::failed(&span, super::reason_label(reason));
        }
    }
}

/// The `invoke_agent` span of an agent's turn number `count`.
#[cfg(feature = "runtime")]
fn turn_span<M: StateMachine>(turns: &AgentTurns<M>, agent_id: Option<&str>, count: u64) -> tracing::Span {
    tracing::info_span!(
        "invoke_agent",
        otel.name = format!("invoke_agent {}", turns.name).as_str(),
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = &*turns.name,
        gen_ai.agent.id = agent_id,
        agent_fsm.machine = M::DESCRIPTION.name,
        agent_fsm.turn = count,
        "error.type" = tracing::field::Empty,
        "otel.status_code" = tracing::field::Empty,
    )
}
