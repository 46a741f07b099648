//! The demo agent's effects: a scripted model that answers each turn with
//! the calls its [`Plan`](super::Plan) lists, and tools that take a few
//! milliseconds. Both run as keyed tasks, so a worker that resumes an
//! agent after a crash performs the one in flight again under its key.

use std::time::Duration;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetEffects {
    model: ScriptedModel,
    tool_delay: Duration,
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
        Self { model, tool_delay }
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
                cx.spawn_task(
                    format!("model.{turn}"),
                    async move {
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
                cx.spawn_task(
                    call.id.clone(),
                    async move {
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
