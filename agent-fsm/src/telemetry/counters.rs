//! The metrics, recorded through the `metrics` facade: their [`names`] and
//! what the executor, the tools and the model clients record.

/// The metric names (Prometheus style: `_total` counters, `_seconds`
/// histograms).
pub mod names {
    /// Counter of hops, self-transitions included: `machine`, `from`, `to`.
    pub const TRANSITIONS: &str = "agent_fsm_transitions_total";
    /// Histogram of the seconds spent in a state, recorded when the
    /// machine leaves it: `machine`, `state`.
    pub const STATE_DURATION: &str = "agent_fsm_state_duration_seconds";
    /// Counter of events the table did not accept (the catch-all):
    /// `machine`, `state`, `event`, `reason`.
    pub const REFUSED_EVENTS: &str = "agent_fsm_refused_events_total";
    /// Counter of tool calls: `tool` (the tool's name, [`UNKNOWN_TOOL`]
    /// for a name the set does not have), `outcome` (`ok` or `error`; a
    /// call cut short, its future dropped by a timeout, an interrupt or a
    /// shutdown, is an `error`).
    pub const TOOL_CALLS: &str = "agent_fsm_tool_calls_total";
    /// Histogram of a tool call's seconds: `tool`, `outcome`.
    pub const TOOL_DURATION: &str = "agent_fsm_tool_duration_seconds";
    /// The `tool` label of a call whose name the set does not have: the
    /// model writes the name, and one value per name made up would grow
    /// the recorder's series without bound. No tool can be named so (a
    /// tool's name has letters, digits, `_` and `-`).
    pub const UNKNOWN_TOOL: &str = "(unknown)";
    /// Counter of model tokens: `provider`, `model`, `type` (`input` or
    /// `output`).
    pub const LLM_TOKENS: &str = "agent_fsm_llm_tokens_total";
}

/// Describes every metric to the installed recorder: its unit and what it
/// counts (Prometheus's `# HELP` lines). Call it once, after installing the
/// recorder; the metrics are recorded without it all the same.
pub fn describe() {
    use metrics::{Unit, describe_counter, describe_histogram};
    describe_counter!(names::TRANSITIONS, Unit::Count, "Hops of an agent's machine, by state left and entered");
    describe_histogram!(names::STATE_DURATION, Unit::Seconds, "Time an agent spent in a state, recorded on leaving it");
    describe_counter!(names::REFUSED_EVENTS, Unit::Count, "Events an agent's table did not accept (the catch-all)");
    describe_counter!(names::TOOL_CALLS, Unit::Count, "Tool calls, by tool and outcome");
    describe_histogram!(names::TOOL_DURATION, Unit::Seconds, "Duration of a tool call, by tool and outcome");
    describe_counter!(names::LLM_TOKENS, Unit::Count, "Model tokens, by provider, model and type (input, output)");
}

/// A worker's handles on the hop metrics, registered with the recorder
/// on first use and kept: a hop then costs an increment, not the labels'
/// allocation and hashing of a lookup. A recorder installed after the
/// agent started does not see the handles it registered before.
#[cfg(feature = "runtime")]
pub(crate) struct HopCounters {
    /// By `from * states + to`, empty until the first hop.
    transitions: Box<[Option<metrics::Counter>]>,
    /// By state left.
    stays: Box<[Option<metrics::Histogram>]>,
}

#[cfg(feature = "runtime")]
impl HopCounters {
    /// No handle yet (nothing allocated: an idle agent pays nothing).
    pub(crate) fn new() -> Self {
        Self { transitions: Box::default(), stays: Box::default() }
    }

    /// One hop of machine `M`: counted, and the time spent in `from`
    /// (entered at `entered`) recorded when the hop leaves it.
    pub(crate) fn hop<M: crate::StateMachine>(
        &mut self,
        hop: &crate::StepOf<M>,
        entered: tokio::time::Instant,
        now: tokio::time::Instant,
    ) {
        use crate::Kind as _;
        let states = <crate::StateKindOf<M> as crate::Kind>::ALL.len();
        if self.stays.is_empty() {
            self.transitions = std::iter::repeat_with(|| None).take(states * states).collect();
            self.stays = std::iter::repeat_with(|| None).take(states).collect();
        }
        let machine = M::DESCRIPTION.name;
        let (from, to) = (hop.from, hop.to);
        if let Some(slot) = self.transitions.get_mut(from.index() * states + to.index()) {
            slot.get_or_insert_with(|| {
                metrics::counter!(names::TRANSITIONS, "machine" => machine, "from" => from.name(), "to" => to.name())
            })
            .increment(1);
        }
        if from != to
            && let Some(slot) = self.stays.get_mut(from.index())
        {
            let seconds = now.saturating_duration_since(entered).as_secs_f64();
            slot.get_or_insert_with(
                || metrics::histogram!(names::STATE_DURATION, "machine" => machine, "state" => from.name()),
            )
            .record(seconds);
        }
    }
}

/// An event the table did not accept.
#[cfg(feature = "runtime")]
pub(crate) fn count_refused<M: crate::StateMachine>(unhandled: &crate::UnhandledOf<M>) {
    use crate::Kind as _;
    let state = unhandled.state.state().map_or("poisoned", |s| s.name());
    metrics::counter!(
        names::REFUSED_EVENTS,
        "machine" => M::DESCRIPTION.name,
        "state" => state,
        "event" => unhandled.event.name(),
        "reason" => super::reason_label(unhandled.reason),
    )
    .increment(1);
}
