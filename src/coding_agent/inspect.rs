//! The demo under the inspector (`cargo run --example coding_agent --
//! --inspect [ADDR]`): the same session, run by Loom with a permission
//! step ([`crate::loom_with_permission`]) so that the edit and the command
//! that checks it wait for approvals the page answers, paced so that a
//! person can follow it, and attached to an [`Inspector`] whose page shows
//! it live.
//!
//! [`InspectedEffects`] performs the variant's actions as
//! [`LoomEffects`] performs Loom's (the variant's enums are types of their
//! own, so the match is written again here), and also publishes when each
//! tool finishes, which the page's "tools in flight" needs.

use std::sync::Arc;
use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, Inspector, InspectorError, Shown};
use agent_fsm::llm::Provider;
use agent_fsm::runtime::{EffectContext, EffectFailure, Effects, ExecutorConfig, MachineHandle, spawn};

use super::{LoomEffects, Output, Workspace, llm_events, prepare_workspace, stream_failure, tool_failed, tool_outcome};
use crate::loom::{AgentConfig, Message};
use crate::loom_with_permission::{AgentAction, AgentEvent, AgentState, LoomWithPermission};

/// The key of the model's response stream, as in [`LoomEffects`].
const LLM_STREAM: &str = "llm";

/// What a tool call looks like on the page and in the printed log.
fn label(call: &crate::loom::ToolCall) -> String {
    format!("{} {}", call.name, call.arguments)
}

/// Performs [`LoomWithPermission`]'s actions: Loom's, plus
/// `AskPermission`, which the page answers (nothing to do here). Every
/// tool and the post-tool hook wait `pace` first, so that each state
/// stays on screen long enough to be seen.
#[derive(Debug)]
pub struct InspectedEffects {
    /// Loom's effects: the model, the tools, the retry policy.
    pub inner: LoomEffects,
    /// How long each tool and the hook wait before running.
    pub pace: Duration,
    /// The calls started and not yet reported finished.
    running: Vec<(String, String)>,
}

impl InspectedEffects {
    /// `inner`'s model and tools, paced by `pace`.
    #[must_use]
    pub fn new(inner: LoomEffects, pace: Duration) -> Self {
        Self { inner, pace, running: Vec::new() }
    }

    /// Publishes the finish of every running call the state has
    /// completed: in `ExecutingTools`, the calls marked completed; in any
    /// other state, the round is over and every call has.
    fn report_finished(&mut self, cx: &mut EffectContext<'_, LoomWithPermission, Output>) {
        let finished = |id: &str| match cx.machine().state() {
            AgentState::ExecutingTools { executions, .. } => !executions.is_pending(id),
            _ => true,
        };
        let (done, running): (Vec<_>, Vec<_>) = self.running.drain(..).partition(|(id, _)| finished(id));
        self.running = running;
        for (_, label) in done {
            cx.output(Output::ToolFinished(label));
        }
    }
}

impl Effects<LoomWithPermission> for InspectedEffects {
    type Output = Output;

    fn perform(&mut self, action: AgentAction, cx: &mut EffectContext<'_, LoomWithPermission, Output>) {
        self.report_finished(cx);
        match action {
            AgentAction::SendLlmRequest(request) => {
                cx.cancel_task(LLM_STREAM);
                let stream = llm_events(
                    self.inner.llm.stream(&self.inner.request(&request)),
                    AgentEvent::LlmEvent,
                    AgentEvent::LlmFailed,
                );
                cx.stream_keyed(LLM_STREAM, stream, |failure| stream_failure(failure).map(AgentEvent::LlmFailed));
            }
            AgentAction::ExecuteTools(calls) => {
                for call in calls {
                    let label = label(&call);
                    cx.output(Output::ToolStarted(label.clone()));
                    self.running.push((call.id.clone(), label));
                    let run = self.inner.tools.call(&call);
                    let (id, pace) = (call.id.clone(), self.pace);
                    cx.spawn_task(
                        id.clone(),
                        async move {
                            tokio::time::sleep(pace).await;
                            let result = run.await;
                            let outcome = tool_outcome(id.clone(), result);
                            AgentEvent::ToolCompleted { call_id: id, outcome }
                        },
                        |call_id: String, failure: EffectFailure| AgentEvent::ToolCompleted {
                            outcome: tool_failed(call_id.clone(), &failure),
                            call_id,
                        },
                    );
                }
            }
            AgentAction::RunPostToolsHook { completed_tools } => {
                let changed: Vec<String> =
                    completed_tools.iter().filter(|t| t.succeeded).map(|t| t.tool_name.clone()).collect();
                cx.output(Output::Hook(format!("post-tool hook after {}", changed.join(", "))));
                cx.pause(self.pace, AgentEvent::PostToolsHookCompleted { action_taken: !changed.is_empty() });
            }
            AgentAction::ScheduleRetry { attempt, retry_after } => {
                cx.pause(self.inner.retry.delay_for(attempt, retry_after), AgentEvent::RetryTimeoutFired)
            }
            AgentAction::AskPermission { calls, .. } => {
                let calls: Vec<String> = calls.iter().map(label).collect();
                cx.output(Output::Hook(format!("waiting for approval: {}", calls.join(", "))));
            }
            AgentAction::DisplayMessage(text) => cx.output(Output::Text(text)),
            AgentAction::DisplayError(text) => cx.output(Output::Error(text)),
            AgentAction::WaitForInput | AgentAction::Shutdown => {}
        }
    }
}

/// How the page reads the demo: its outputs, and the permission step as
/// an approval whose buttons send `PermissionGranted` or
/// `PermissionDenied` for the request pending.
#[must_use]
pub fn view() -> AgentView<LoomWithPermission, Output> {
    AgentView::new("coding agent")
        .outputs(|output| {
            Some(match output {
                Output::Text(text) => Shown::TextDelta(text.clone()),
                Output::ToolStarted(label) => Shown::ToolStarted { id: label.clone(), label: label.clone() },
                Output::ToolFinished(label) => Shown::ToolFinished { id: label.clone() },
                Output::Error(text) | Output::Hook(text) => Shown::Note(text.clone()),
            })
        })
        .approvals(|state| match state {
            AgentState::WaitingForPermission { calls, request_id, .. } => Some(Approval {
                summary: calls.iter().map(label).collect::<Vec<_>>().join(", "),
                approve: AgentEvent::PermissionGranted { request_id: *request_id },
                deny: AgentEvent::PermissionDenied {
                    request_id: *request_id,
                    reason: "denied in the inspector".to_owned(),
                },
            }),
            _ => None,
        })
}

/// A session under the inspector, started but not yet given its task.
#[derive(Debug)]
pub struct InspectedSession {
    /// The server.
    pub inspector: Inspector,
    /// The agent's page.
    pub url: String,
    /// The agent.
    pub handle: MachineHandle<LoomWithPermission, Output>,
    /// The workspace, gone when this is dropped.
    pub workspace: tempfile::TempDir,
}

impl InspectedSession {
    /// Starts the agent with `llm` as `model` in a fresh greeting-script
    /// workspace, paced by `pace`, with the inspector on `addr` (a
    /// loopback address; port 0 takes any free one).
    ///
    /// # Errors
    /// The workspace could not be laid out, or the inspector could not
    /// start.
    pub async fn start(
        addr: &str,
        llm: Arc<dyn Provider>,
        model: &str,
        pace: Duration,
    ) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let workspace = tempfile::tempdir()?;
        prepare_workspace(workspace.path())?;
        let effects = InspectedEffects::new(LoomEffects::new(llm, model, Workspace::new(workspace.path()))?, pace);
        let config = ExecutorConfig::<LoomWithPermission>::new()
            .concurrency_limit(4)
            .task_timeout(Duration::from_secs(30) + pace)
            .history_capacity(1024)
            .shutdown_event(|| Some(AgentEvent::ShutdownRequested));
        let handle = spawn(LoomWithPermission::new(AgentConfig::default()), effects, config);
        let inspector = Inspector::bind(addr).await?;
        let id = inspector.attach(&handle, view()).await.map_err(|e: InspectorError| Box::new(e))?;
        let url = inspector.agent_url(id);
        Ok(Self { inspector, url, handle, workspace })
    }

    /// Gives the agent its task.
    ///
    /// # Errors
    /// The agent has stopped.
    pub async fn begin(&self, task: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.handle.send(AgentEvent::UserInput(Message::user(task))).await?;
        Ok(())
    }
}
