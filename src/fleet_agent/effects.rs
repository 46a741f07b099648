//! The demo agent's effects: a scripted model that answers each turn with
//! the calls its [`Plan`](super::Plan) lists, and tools that take a few
//! milliseconds. Both run as keyed tasks, so a worker that resumes an
//! agent after a crash performs the one in flight again under its key.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent_fsm::runtime::{EffectContext, EffectFailure, Effects};

use super::{Action, Event, FleetAgent};

/// A model that needs no network: turn `t` is answered, after `delay`,
/// with the calls `Plan::turn(t)` lists, read from the agent's own context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptedModel {
    /// How long each reply takes.
    pub delay: Duration,
}

/// Performs the demo agent's actions: the model, the tools; an approval
/// asked for needs nothing (the agent's state, in the store, is the
/// request, and the approval comes back through the fleet's inbox).
#[derive(Debug, Clone)]
pub struct FleetEffects {
    model: ScriptedModel,
    tool_delay: Duration,
    probe: Option<Probe>,
}

/// Measures how long each step's work waits before it starts: on a
/// durable agent written [`Durability::BeforeAction`](agent_fsm::store::Durability::BeforeAction),
/// the time its checkpoint takes to commit (the action is performed, the
/// step written, and only then its tasks run). Clones share the samples.
#[derive(Debug, Clone, Default)]
pub struct Probe {
    samples: Arc<Mutex<Vec<Duration>>>,
}

impl Probe {
    /// An empty probe.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn record(&self, waited: Duration) {
        self.samples.lock().unwrap_or_else(PoisonError::into_inner).push(waited);
    }

    /// The samples so far, taken out.
    #[must_use]
    pub fn take(&self) -> Vec<Duration> {
        std::mem::take(&mut *self.samples.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Default for FleetEffects {
    /// A model answering in 2 ms, tools taking 3 ms.
    fn default() -> Self {
        Self::new(ScriptedModel { delay: Duration::from_millis(2) }, Duration::from_millis(3))
    }
}

impl FleetEffects {
    /// `model` answers the turns; each tool call takes `tool_delay`.
    #[must_use]
    pub fn new(model: ScriptedModel, tool_delay: Duration) -> Self {
        Self { model, tool_delay, probe: None }
    }

    /// The same effects, each task's wait before it starts recorded in
    /// `probe`.
    #[must_use]
    pub fn with_probe(mut self, probe: Probe) -> Self {
        self.probe = Some(probe);
        self
    }

    /// A note of when the step's action was performed, which the step's
    /// task turns into a sample when it starts.
    fn stopwatch(&self) -> impl FnOnce() + Send + 'static {
        let (probe, performed) = (self.probe.clone(), Instant::now());
        move || {
            if let Some(probe) = probe {
                probe.record(performed.elapsed());
            }
        }
    }
}

impl Effects<FleetAgent> for FleetEffects {
    type Output = ();

    fn perform(&mut self, action: Action, cx: &mut EffectContext<'_, FleetAgent, ()>) {
        match action {
            Action::AskModel { turn } => {
                let calls = cx.machine().context().turn(turn);
                let again = calls.clone();
                let delay = self.model.delay;
                let started = self.stopwatch();
                cx.spawn_task(
                    format!("model.{turn}"),
                    async move {
                        started();
                        tokio::time::sleep(delay).await;
                        Event::Replied { turn, calls }
                    },
                    // The script cannot fail; a task that timed out or was
                    // cancelled answers as it would have.
                    move |_key: String, _failure: EffectFailure| Event::Replied { turn, calls: again },
                );
            }
            Action::RunTool(call) => {
                let delay = self.tool_delay;
                let started = self.stopwatch();
                cx.spawn_task(
                    call.id.clone(),
                    async move {
                        started();
                        tokio::time::sleep(delay).await;
                        Event::ToolDone { output: format!("{} ok", call.id), call: call.id }
                    },
                    |call: String, failure: EffectFailure| Event::ToolDone {
                        call,
                        output: format!("error: {failure}"),
                    },
                );
            }
            Action::Nothing | Action::AwaitApproval { .. } | Action::Finish => {}
        }
    }
}
