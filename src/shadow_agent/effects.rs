//! The effects of one Shadow agent: the model's stream, the tools on
//! tasks of their own, permission requests and questions published as
//! outputs, subagents spawned on the same runtime, retries on a timer,
//! and input handed back mid-turn kept for the next turn.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Weak};

use agent_fsm::StateMachine;
use agent_fsm::llm::{ErrorKind, ProviderError, StreamEvent};
use agent_fsm::runtime::{EffectContext, EffectFailure, Effects, ExecutorConfig, RetryPolicy, TaskOptions};
use futures::stream::{self, BoxStream, Stream, StreamExt};
use serde_json::Value;
use tokio::sync::{broadcast, watch};

use super::durable::Found;
use super::{
    AgentRuntime, AgentUpdate, ChildResult, Llm, MAX_SUBAGENT_DEPTH, Output, RuntimeInner, SUBAGENT_TOOL, ShadowHandle,
};
use crate::coding_agent::Workspace;
use crate::shadow::{INTERRUPTED, Shadow, ShadowAction, ShadowContext, ShadowEvent, ShadowState, ToolCall};

/// The key of the model's stream, by which a retry cancels what is left of
/// the failed attempt's.
const LLM_STREAM: &str = "llm";

/// A child agent this agent spawned.
struct Child {
    handle: ShadowHandle,
    result: watch::Receiver<Option<ChildResult>>,
    generation: u64,
}

/// Performs Shadow's actions for one agent (see the [module docs](super)).
/// Built by [`AgentRuntime`].
pub struct ShadowEffects {
    session_id: Arc<str>,
    runtime: Weak<RuntimeInner>,
    llm: Arc<dyn Llm>,
    retry: RetryPolicy,
    workspace: Arc<Workspace>,
    config: ExecutorConfig<Shadow>,
    updates: broadcast::Sender<AgentUpdate>,
    /// The state last published.
    last_state: ShadowState,
    /// Input handed back mid-turn, oldest first.
    deferred: VecDeque<String>,
    /// The id of the last tool call started on an executor task.
    current_tool: Option<String>,
    children: HashMap<String, Child>,
    /// Set for a subagent: where its answer goes.
    report: Option<watch::Sender<Option<ChildResult>>>,
    /// How deep this agent is among subagents: 0 for one the runtime
    /// spawned, its parent's plus one for a subagent.
    depth: usize,
}

impl fmt::Debug for ShadowEffects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShadowEffects")
            .field("session_id", &self.session_id)
            .field("last_state", &self.last_state)
            .field("deferred", &self.deferred)
            .field("current_tool", &self.current_tool)
            .field("children", &self.children.keys().collect::<Vec<_>>())
            .field("subagent", &self.report.is_some())
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

impl ShadowEffects {
    /// The effects of the agent `session_id` on `runtime`, at subagent
    /// depth `depth`; `report` is set for a subagent, whose answer goes
    /// there.
    pub(super) fn new(
        session_id: Arc<str>,
        runtime: &Arc<RuntimeInner>,
        report: Option<watch::Sender<Option<ChildResult>>>,
        depth: usize,
    ) -> Self {
        ShadowEffects {
            session_id,
            runtime: Arc::downgrade(runtime),
            llm: Arc::clone(&runtime.llm),
            retry: runtime.retry,
            workspace: Arc::clone(&runtime.workspace),
            config: runtime.config.clone(),
            updates: runtime.updates.clone(),
            last_state: ShadowState::Idle,
            deferred: VecDeque::new(),
            current_tool: None,
            children: HashMap::new(),
            report,
            depth,
        }
    }
}

type Cx<'a, 'b> = &'a mut EffectContext<'b, Shadow, Output>;

/// The text a tool's JSON output shows the model.
fn text_of(value: Value) -> String {
    match value {
        Value::String(text) => text,
        other => other.to_string(),
    }
}

/// A model stream as machine events, ending after the completed reply or
/// the first failure; a stream that ends without either yields a failure
/// (a dropped connection, which a retry can help).
fn llm_events(
    llm: BoxStream<'static, Result<StreamEvent, ProviderError>>,
) -> impl Stream<Item = ShadowEvent> + Send + 'static {
    llm.map(Some)
        .chain(stream::once(async { None }))
        .scan(false, |ended, item| {
            let next = match (*ended, item) {
                (true, _) => None,
                (false, Some(Ok(event))) => {
                    *ended = matches!(event, StreamEvent::Completed { .. });
                    Some(Some(ShadowEvent::LlmEvent(event)))
                }
                (false, Some(Err(error))) => {
                    *ended = true;
                    Some(Some(ShadowEvent::LlmFailed(error)))
                }
                (false, None) => {
                    *ended = true;
                    let error =
                        ProviderError::new(ErrorKind::ConnectionDropped, "the model's stream ended without a reply");
                    Some(Some(ShadowEvent::LlmFailed(error)))
                }
            };
            futures::future::ready(next)
        })
        .filter_map(futures::future::ready)
}

/// What a child answered, once it has; if it stopped without answering,
/// why.
async fn child_outcome(handle: &ShadowHandle, result: &mut watch::Receiver<Option<ChildResult>>) -> ChildResult {
    let published = match result.wait_for(Option::is_some).await {
        Ok(value) => value.clone(),
        Err(_) => None,
    };
    match published {
        Some(outcome) => outcome,
        None => Err(match handle.wait_finished().await {
            Ok(state) => format!("the subagent stopped in `{}` without an answer", state.name()),
            Err(error) => format!("the subagent stopped: {error}"),
        }),
    }
}

/// Answers the call that awaits the child `session_id` with `result`, on a
/// task keyed like the await of a child rather than by a send: an action
/// performed again after a restart starts again only the tasks it had
/// started (its sends are dropped), so the parent gets this answer then
/// too.
fn finish_child(session_id: String, result: ChildResult, cx: Cx<'_, '_>) {
    let event = ShadowEvent::SubAgentFinished { session_id: session_id.clone(), result };
    cx.spawn_task(session_id, async move { event }, |session_id, failure| match failure {
        EffectFailure::Cancelled => ShadowEvent::Interrupt,
        failure => ShadowEvent::SubAgentFinished { session_id, result: Err(format!("the subagent {failure}")) },
    });
}

impl ShadowEffects {
    /// Publishes `output` to the handle's subscribers and the runtime's.
    fn emit(&self, cx: Cx<'_, '_>, output: Output) {
        cx.output(output.clone());
        // Err: nobody subscribed to the runtime right now.
        let _ = self.updates.send(AgentUpdate { session_id: Arc::clone(&self.session_id), output });
    }

    /// Publishes the state if the step changed it.
    fn publish_state(&mut self, cx: Cx<'_, '_>) {
        if cx.machine().is_poisoned() {
            return;
        }
        let state = cx.machine().state();
        if *state == self.last_state {
            return;
        }
        let state = state.clone();
        let from = self.last_state.name();
        let action = cx.action().name();
        self.last_state = state.clone();
        self.emit(cx, Output::StateChanged { from, action, state });
    }

    /// A subagent's answer, for its parent (the first one counts).
    fn report(&self, result: ChildResult) {
        if let Some(report) = &self.report {
            report.send_if_modified(|slot| {
                if slot.is_some() {
                    return false;
                }
                *slot = Some(result);
                true
            });
        }
    }

    fn call_llm(&self, cx: Cx<'_, '_>) {
        // A retry: nothing of the failed attempt's stream may reach this one.
        cx.cancel_task(LLM_STREAM);
        let stream = self.llm.stream(&cx.machine().context().conversation);
        cx.stream_keyed(LLM_STREAM, llm_events(stream), |failure| match failure {
            // An interrupt or a shutdown (the table decides what the
            // partial reply becomes), or a newer attempt.
            EffectFailure::Cancelled => None,
            EffectFailure::TimedOut => {
                Some(ShadowEvent::LlmFailed(ProviderError::new(ErrorKind::Timeout, "the model's stream timed out")))
            }
            failure => Some(ShadowEvent::LlmFailed(ProviderError::new(
                ErrorKind::ConnectionDropped,
                format!("the model's stream {failure}"),
            ))),
        });
    }

    fn execute_tool(&mut self, call: ToolCall, cx: Cx<'_, '_>) {
        self.emit(cx, Output::ToolStarted(call.clone()));
        if call.name == SUBAGENT_TOOL {
            let event = match call.arguments.get("prompt").and_then(Value::as_str) {
                // Refused before anything is spawned: a model delegating
                // every task would nest agents without end.
                _ if self.depth >= MAX_SUBAGENT_DEPTH => ShadowEvent::ToolResult {
                    tool_use_id: call.id,
                    result: Err(format!(
                        "subagents nest at most {MAX_SUBAGENT_DEPTH} deep: `{}` cannot start another",
                        self.session_id
                    )),
                },
                Some(prompt) => ShadowEvent::SubAgentRequested { tool_use_id: call.id, prompt: prompt.to_owned() },
                None => ShadowEvent::ToolResult {
                    tool_use_id: call.id,
                    result: Err(format!("`{SUBAGENT_TOOL}` needs a string argument `prompt`")),
                },
            };
            cx.send(event);
            return;
        }
        let workspace = Arc::clone(&self.workspace);
        let tool_use_id = call.id.clone();
        let loom_call = crate::loom::ToolCall { id: call.id, name: call.name, arguments: call.arguments };
        // An interrupt lets the tool finish (see *Interrupts*): its result
        // comes after the interrupt event. A shutdown cancels it.
        cx.spawn_task_with(
            tool_use_id.clone(),
            async move {
                let result = workspace.run(&loom_call).await.map(text_of).map_err(|e| e.message);
                ShadowEvent::ToolResult { tool_use_id: loom_call.id, result }
            },
            |tool_use_id, failure| {
                let result = Err(match failure {
                    EffectFailure::Cancelled => INTERRUPTED.to_owned(),
                    failure => format!("the tool {failure}"),
                });
                ShadowEvent::ToolResult { tool_use_id, result }
            },
            TaskOptions::new().survive_interrupt(),
        );
        self.current_tool = Some(tool_use_id);
    }

    /// After an interrupt in `ExecutingTool`: the tool's task, which the
    /// interrupt left running, delivers its result; a call whose tool never
    /// started is answered as interrupted.
    fn finish_current_tool(&self, cx: Cx<'_, '_>) {
        let ShadowState::ExecutingTool { tool_use_id, .. } = cx.machine().state() else {
            return;
        };
        if self.current_tool.as_ref() != Some(tool_use_id) {
            let tool_use_id = tool_use_id.clone();
            cx.send(ShadowEvent::ToolResult { tool_use_id, result: Err(INTERRUPTED.to_owned()) });
        }
    }

    fn spawn_child(&mut self, session_id: String, prompt: String, cx: Cx<'_, '_>) {
        let (child, found) = match self.start_child(&session_id, cx) {
            Ok(started) => started,
            Err(error) => {
                finish_child(session_id, Err(error), cx);
                return;
            }
        };
        self.emit(cx, Output::SubAgentSpawned { session_id: session_id.clone(), prompt: prompt.clone() });
        // A child resumed from the store with its task taken already (this
        // action is performed again when its parent resumes) is not given
        // it twice. A fresh inbox has room; sent here rather than from the
        // task so that an interrupt cannot cancel it before it is queued.
        if found.needs_input()
            && let Err(error) = child.handle.try_send(ShadowEvent::UserInput(prompt))
        {
            finish_child(session_id, Err(format!("the subagent did not take its task: {error}")), cx);
            return;
        }
        self.await_child(&session_id, &child, None, cx);
        self.children.insert(session_id, child);
    }

    /// Spawns the child `session_id` on the runtime with this agent's
    /// permission rules, or from the store if it holds it; says what the
    /// store held.
    fn start_child(&mut self, session_id: &str, cx: Cx<'_, '_>) -> Result<(Child, Found), String> {
        let inner = self.runtime.upgrade().ok_or("the agent runtime is gone")?;
        self.children.retain(|_, child| !child.handle.is_finished());
        let parent = cx.machine().context();
        let mut context = ShadowContext::new(session_id);
        context.permissions = parent.permissions.clone();
        context.default_permission = parent.default_permission;
        context.question_tool = parent.question_tool.clone();
        context.max_llm_attempts = parent.max_llm_attempts;
        let (report, result) = watch::channel(None);
        let (handle, generation, found) = AgentRuntime { inner }
            .spawn_agent(context, Some(report), self.depth.saturating_add(1))
            .map_err(|error| error.to_string())?;
        Ok((Child { handle, result, generation }, found))
    }

    /// Awaits a child's answer on an executor task (after interrupting it,
    /// if `interrupt` gives a cause), then shuts it down and unregisters
    /// it. A cancelled await is delivered as [`ShadowEvent::Interrupt`].
    fn await_child(&self, session_id: &str, child: &Child, interrupt: Option<String>, cx: Cx<'_, '_>) {
        let handle = child.handle.clone();
        let mut result = child.result.clone();
        let (runtime, generation) = (self.runtime.clone(), child.generation);
        let id = session_id.to_owned();
        let (failed_id, failed_handle, failed_runtime) = (id.clone(), handle.clone(), runtime.clone());
        cx.spawn_task(
            session_id.to_owned(),
            async move {
                if let Some(cause) = interrupt {
                    // Err: the child already stopped; its answer says how.
                    let _ = handle.interrupt(cause).await;
                }
                let outcome = child_outcome(&handle, &mut result).await;
                // Ok or Err, the child is stopped now.
                let _ = handle.shutdown().await;
                if let Some(inner) = runtime.upgrade() {
                    inner.remove(&id, generation);
                }
                ShadowEvent::SubAgentFinished { session_id: id, result: outcome }
            },
            move |_key, failure| match failure {
                EffectFailure::Cancelled => ShadowEvent::Interrupt,
                // A configured task timeout (or a panic): the child is
                // given up on, so it stops too.
                failure => {
                    let session_id = failed_id.clone();
                    tokio::spawn(async move {
                        // Ok or Err, the child is stopped now.
                        let _ = failed_handle.shutdown().await;
                        if let Some(inner) = failed_runtime.upgrade() {
                            inner.remove(&failed_id, generation);
                        }
                    });
                    ShadowEvent::SubAgentFinished { session_id, result: Err(format!("the subagent {failure}")) }
                }
            },
        );
    }

    fn interrupt_child(&mut self, session_id: String, cx: Cx<'_, '_>) {
        let cause = format!("the parent agent `{}` was interrupted", self.session_id);
        if let Some(child) = self.children.get(&session_id) {
            self.await_child(&session_id, child, Some(cause), cx);
            return;
        }
        // Performed again after a restart: the child is in the store, not
        // running yet; it resumes to be interrupted and answer.
        if self.child_in_store(&session_id) {
            match self.start_child(&session_id, cx) {
                Ok((child, _)) => {
                    self.await_child(&session_id, &child, Some(cause), cx);
                    self.children.insert(session_id, child);
                }
                Err(error) => finish_child(session_id, Err(error), cx),
            }
            return;
        }
        finish_child(session_id, Err(INTERRUPTED.to_owned()), cx);
    }

    /// Whether the runtime's checkpoint store holds the agent `session_id`.
    fn child_in_store(&self, session_id: &str) -> bool {
        let store = self.runtime.upgrade().and_then(|inner| AgentRuntime { inner }.store());
        // A store that cannot be read is reported when the child is spawned.
        store.is_some_and(|store| !matches!(store.agent(session_id), Ok(None)))
    }

    /// The agent stops: the running tool and the children stop too.
    fn stop(&mut self, cx: Cx<'_, '_>) {
        // The shutdown cancelled the tool's task.
        self.current_tool = None;
        for (session_id, child) in self.children.drain() {
            if child.handle.is_finished() {
                continue;
            }
            let runtime = self.runtime.clone();
            self.config.task_tracker().spawn(async move {
                // Ok or Err, the child is stopped now.
                let _ = child.handle.shutdown().await;
                if let Some(inner) = runtime.upgrade() {
                    inner.remove(&session_id, child.generation);
                }
            });
        }
        self.report(Err("the subagent was shut down".to_owned()));
        if !self.deferred.is_empty() {
            tracing::warn!(session = &*self.session_id, inputs = self.deferred.len(), "stopped with deferred input");
        }
        self.emit(cx, Output::Stopped);
    }

    /// At rest with input handed back mid-turn: sends the oldest again.
    fn resume_deferred(&mut self, cx: Cx<'_, '_>) {
        if self.deferred.is_empty() || cx.is_final() || cx.machine().is_poisoned() {
            return;
        }
        if matches!(cx.machine().state(), ShadowState::Idle | ShadowState::Done | ShadowState::Error { .. })
            && let Some(text) = self.deferred.pop_front()
        {
            cx.send(ShadowEvent::UserInput(text));
        }
    }
}

impl Effects<Shadow> for ShadowEffects {
    type Output = Output;

    fn perform(&mut self, action: ShadowAction, cx: &mut EffectContext<'_, Shadow, Output>) {
        self.publish_state(cx);
        match action {
            ShadowAction::Nothing => {}
            ShadowAction::CallLlm(_added) => self.call_llm(cx),
            ShadowAction::ScheduleRetry { attempt, retry_after } => {
                cx.pause(self.retry.delay_for(attempt, retry_after), ShadowEvent::RetryTimeoutFired { attempt });
            }
            ShadowAction::EmitText(text) => self.emit(cx, Output::Text(text)),
            ShadowAction::Respond(text) => {
                self.report(Ok(text.clone()));
                self.emit(cx, Output::Response(text));
            }
            ShadowAction::ExecuteTool(call) => self.execute_tool(call, cx),
            ShadowAction::RequestPermission { request_id, call } => {
                self.emit(cx, Output::PermissionRequested { request_id, call });
            }
            ShadowAction::AskUser { request_id, questions } => {
                self.emit(cx, Output::Question { request_id, questions });
            }
            ShadowAction::SpawnSubAgent { session_id, prompt } => self.spawn_child(session_id, prompt, cx),
            ShadowAction::InterruptSubAgent(session_id) => self.interrupt_child(session_id, cx),
            ShadowAction::InterruptAfterCurrentTool => self.finish_current_tool(cx),
            ShadowAction::Interrupted => {
                self.report(Err(INTERRUPTED.to_owned()));
                self.emit(cx, Output::Interrupted);
            }
            ShadowAction::PermissionDenied(tool) => {
                self.report(Err(format!("permission denied for `{tool}`")));
                self.emit(cx, Output::PermissionDenied(tool));
            }
            ShadowAction::ReportError(message) => {
                self.report(Err(message.clone()));
                self.emit(cx, Output::Error(message));
            }
            ShadowAction::Reject(why) => {
                tracing::warn!(session = &*self.session_id, why, "refused");
                self.emit(cx, Output::Rejected(why));
            }
            ShadowAction::DeferInput(text) => {
                self.deferred.push_back(text.clone());
                self.emit(cx, Output::InputDeferred(text));
            }
            ShadowAction::NothingToInterrupt => self.emit(cx, Output::NothingToInterrupt),
            ShadowAction::Stop => self.stop(cx),
        }
        self.resume_deferred(cx);
    }
}
