//! The Shadow runtime machine ([`crate::shadow`]) driven by the executor,
//! end to end: a model behind a trait, real tools in a workspace,
//! permission and question replies from the outside, subagents as child
//! machines, and a registry of running agents by session id.
//!
//! - [`Llm`]: streams the model's reply to a conversation as a provider
//!   does (the library's [`StreamEvent`](agent_fsm::llm::StreamEvent)s, or
//!   a [`ProviderError`](agent_fsm::llm::ProviderError)); [`ScriptedLlm`]
//!   is a deterministic stand-in that reads the conversation to pick its
//!   next reply (see [`ScriptedLlm::reply`] for its scripts).
//! - [`ShadowEffects`]: performs Shadow's actions. A model call is a
//!   stream; a failure a retry can help is retried on a timer, after the
//!   server's `retry-after` or the [`RetryPolicy`]'s backoff; a tool runs on an executor task that an interrupt lets finish (see *Interrupts* below); a
//!   permission request or a question is published as an [`Output`] and
//!   answered from the outside with [`ShadowEvent::PermissionReply`] or
//!   [`ShadowEvent::QuestionAnswered`] sent to the agent's handle; the
//!   [`SUBAGENT_TOOL`] spawns a child agent.
//! - [`AgentRuntime`]: spawns agents under their session ids on the
//!   executor ([`agent_fsm::runtime::spawn`]), keeps their handles
//!   ([`get`](AgentRuntime::get)) and fans every agent's [`Output`] into
//!   one stream of [`AgentUpdate`]s tagged with the session id
//!   ([`subscribe`](AgentRuntime::subscribe)), in the order things
//!   happened, children included.
//!
//! # What a UI sees
//! After every performed step that changed the state (its name or its
//! data), the effects publish [`Output::StateChanged`] with the full
//! [`ShadowState`], which serializes in snake_case
//! (`{"state":"executing_tool","data":{"tool_name":..,"tool_use_id":..}}`).
//! The only state changes not published this way are those of events the
//! executor delivers *without performing their actions* (the inbox drained
//! after a shutdown); the handle's [`Notification::Transition`]s show
//! every hop, those included.
//!
//! # Subagents
//! The [`SUBAGENT_TOOL`]'s call reports [`ShadowEvent::SubAgentRequested`];
//! the table answers [`ShadowAction::SpawnSubAgent`] with the child's
//! session id (`"{parent}/{tool_use_id}"`, a `/` or `%` of the id escaped,
//! with `~{n}` added if the model
//! used that call id before: [`ShadowContext::spawn_child`](crate::shadow::ShadowContext::spawn_child)).
//! The effects spawn the child on
//! the same runtime, with the parent's permission rules (remembered
//! answers included), send it the prompt, and start a task that awaits the
//! child's answer: `Ok(text)` when it responds, `Err(..)` when it fails,
//! is interrupted, is denied a permission or stops. The task then shuts
//! the child down, removes it from the registry and delivers
//! [`ShadowEvent::SubAgentFinished`]; an `Err` is the parent's `Error`.
//! While the child runs, [`AgentRuntime::get`] returns its handle, so its
//! own permission requests and questions are answered through it.
//! Subagents nest at most [`MAX_SUBAGENT_DEPTH`] deep: deeper, the call
//! fails without spawning anything.
//!
//! # Interrupts
//! [`MachineHandle::interrupt`] cancels the executor's work in flight, then
//! delivers the configured interrupt event ([`ShadowEvent::Interrupt`],
//! set by [`AgentRuntime`]). Per state:
//! - `Processing`: the model's stream is dropped; the table keeps the
//!   partial text and ends in `Done`.
//! - `ExecutingTool`: the documented outcome is that the current tool
//!   *completes*. The tool runs on an executor task spawned to survive
//!   interrupts ([`TaskOptions::survive_interrupt`](agent_fsm::runtime::TaskOptions::survive_interrupt)),
//!   so the interrupt leaves it running; the configured interrupt event
//!   asks for [`ShadowAction::InterruptAfterCurrentTool`], and the tool's
//!   real result, when it comes, is recorded, the remaining calls get
//!   [`INTERRUPTED`], and the agent ends in `Done`.
//! - `WaitingForSubAgent`: likewise the await of the child is re-armed,
//!   and the interrupt is passed on to the child
//!   ([`ShadowAction::InterruptSubAgent`]); the child's answer (an
//!   [`INTERRUPTED`] error if it was stopped) is recorded, `Done`.
//! - `WaitingForPermission`, `WaitingForUserInput`: nothing is in flight;
//!   the call gets [`INTERRUPTED`], `Done`.
//! - `Idle`, `Done`, `Error`: nothing to interrupt; the agent stays and
//!   takes new input.
//!
//! # Input mid-turn
//! The executor holds external events in its inbox while work is in flight
//! (a model stream, a tool, a child). While the agent waits for a
//! permission or an answer nothing is in flight, so input reaches the
//! machine, which hands it back ([`ShadowAction::DeferInput`]); the
//! effects keep it and send it again as soon as the turn is over. Input is
//! never applied mid-turn, nor dropped while the agent runs. The effects
//! hold it, not the machine: input still handed back when the agent stops
//! is dropped (with a warning), and a durable agent's pause is such a
//! stop (the step that handed it back is in the store, but starts no work
//! to perform again), so it is not sent after the restart.
//!
//! # Durable agents
//! With a checkpoint store ([`AgentRuntime::with_store`]) every agent,
//! subagents included, is spawned through [`Durable`] under its session
//! id: its steps are written as it takes them, and spawning a session id
//! the store holds continues that agent where it was (see [`Durable`] for
//! what is performed again). A shutdown is a pause: nothing of it is
//! written. After a restart:
//! - an agent that waited for a permission or an answer still waits for
//!   it, under the same request id; nothing is published again to say so,
//!   so a UI reads the pending request from the agent's state
//!   ([`ShadowState::WaitingForPermission`], [`ShadowState::WaitingForUserInput`]);
//! - subagents resume with their parent: a parent that waited for a child
//!   performs [`ShadowAction::SpawnSubAgent`] again, which spawns the
//!   child from the store; a child that took its task already is not
//!   given it again, and one that had answered (its turn over: `Idle`
//!   with its reply, `Error`, or interrupted) gives its parent that
//!   answer, read from its machine.
//!
//! [`AgentRuntime::shutdown_all`] stops parents before their children, so
//! that no child's stop reaches its parent as an answer.

mod durable;
mod effects;
mod scripted;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agent_fsm::StateKindOf;
use agent_fsm::runtime::{self, ExecutorConfig, MachineHandle, RequestError, RetryPolicy};
use agent_fsm::store::{CheckpointStore, Durable, StoreError};
use serde_json::Value;
use tokio::sync::{broadcast, watch};

use crate::coding_agent::Workspace;
use crate::shadow::{Permission, Shadow, ShadowContext, ShadowEvent, ShadowState, ToolCall};

pub use effects::ShadowEffects;
pub use scripted::{CHANGELOG, Llm, STORY, ScriptedLlm, prepare_workspace};

#[cfg(doc)]
use crate::shadow::{INTERRUPTED, ShadowAction};
#[cfg(doc)]
use agent_fsm::runtime::Notification;

/// The tool through which the model delegates a task to a subagent; its
/// input is `{"prompt": "..."}`.
pub const SUBAGENT_TOOL: &str = "Task";

/// How deep subagents nest: an agent spawned by [`AgentRuntime::spawn`] is
/// at depth 0, its subagents at 1, theirs at 2. A [`SUBAGENT_TOOL`] call of
/// an agent at this depth fails (as a tool does) instead of spawning one:
/// a model that delegates every task it is given would otherwise nest
/// agents, each waiting for the next, without end.
pub const MAX_SUBAGENT_DEPTH: usize = 3;

/// The handle of a running Shadow agent.
pub type ShadowHandle = MachineHandle<Shadow, Output>;

/// What a subagent answers: its reply, or why it has none.
type ChildResult = Result<String, String>;

// =================================================================== output

/// What an agent publishes, to its handle's subscribers and, tagged with
/// its session id, to the runtime's ([`AgentRuntime::subscribe`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// The state changed (its name or its data), after a performed step.
    StateChanged {
        /// The previous state's name.
        from: &'static str,
        /// The action of the step that changed it.
        action: &'static str,
        /// The new state, with its data (serializes in snake_case).
        state: ShadowState,
    },
    /// Streamed text of the model's reply.
    Text(String),
    /// The turn's answer.
    Response(String),
    /// A tool call starts.
    ToolStarted(ToolCall),
    /// A tool call waits for permission: answer with
    /// [`ShadowEvent::PermissionReply`] carrying `request_id` (minted by
    /// the machine; never the call's id, which the model chose).
    PermissionRequested {
        /// The id the reply must carry.
        request_id: String,
        /// The call.
        call: ToolCall,
    },
    /// The user is asked questions: answer with
    /// [`ShadowEvent::QuestionAnswered`] carrying `request_id`.
    Question {
        /// The id the answer must carry.
        request_id: String,
        /// The questions, as the model wrote them.
        questions: Value,
    },
    /// A child agent was spawned under `session_id` for `prompt`.
    SubAgentSpawned {
        /// The child's session id.
        session_id: String,
        /// Its task.
        prompt: String,
    },
    /// The user denied this tool; the task ended.
    PermissionDenied(String),
    /// The task was interrupted.
    Interrupted,
    /// An interrupt found nothing to interrupt.
    NothingToInterrupt,
    /// The task failed.
    Error(String),
    /// A reply, result or answer that matched nothing pending was refused.
    Rejected(String),
    /// Input arrived mid-turn; it runs when the turn is over.
    InputDeferred(String),
    /// The agent stopped.
    Stopped,
}

/// An [`Output`] of one agent, as the runtime's subscribers receive it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentUpdate {
    /// The agent's session id.
    pub session_id: Arc<str>,
    /// What it published.
    pub output: Output,
}

// ================================================================== runtime

/// Why [`AgentRuntime::spawn`] refused.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// A running agent already has this session id.
    #[error("a running agent already has the session id `{0}`")]
    SessionTaken(String),
    /// Not called inside a tokio runtime.
    #[error("agents are spawned inside a tokio runtime")]
    NoRuntime,
    /// The runtime's checkpoint store ([`AgentRuntime::with_store`]) could
    /// not be read, or the agent not added to it: a store written by
    /// another machine, of an unknown format, corrupt, or failing.
    #[error("the checkpoint store, for `{session_id}`: {source}")]
    Store {
        /// The agent's session id.
        session_id: String,
        /// What the store said (shared, so the error stays cloneable).
        source: Arc<StoreError>,
    },
}

/// A registered agent.
struct Registered {
    handle: ShadowHandle,
    /// Distinguishes agents that reused a session id.
    generation: u64,
}

struct RuntimeInner {
    llm: Arc<dyn Llm>,
    retry: RetryPolicy,
    workspace: Arc<Workspace>,
    config: ExecutorConfig<Shadow>,
    agents: Mutex<HashMap<String, Registered>>,
    updates: broadcast::Sender<AgentUpdate>,
    generations: AtomicU64,
    /// Where every agent's steps are written, if the agents are durable.
    store: Mutex<Option<Arc<dyn CheckpointStore>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The map is consistent after any panic (single inserts and removes).
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RuntimeInner {
    /// Removes `session_id` if it is still the agent of `generation`.
    fn remove(&self, session_id: &str, generation: u64) {
        let mut agents = lock(&self.agents);
        if agents.get(session_id).is_some_and(|a| a.generation == generation) {
            agents.remove(session_id);
        }
    }
}

/// Runs Shadow agents on the executor and keeps their handles by session
/// id. Cheap to clone: clones share the agents.
///
/// Every agent shares the model, the workspace and the executor
/// configuration (and so its task tracker). Subagents are spawned here by
/// their parents' effects, so [`get`](Self::get) finds them while they run.
/// Dropping every clone of the runtime drops its handles, which lets idle
/// agents stop; [`shutdown_all`](Self::shutdown_all) stops them at once.
#[derive(Clone)]
pub struct AgentRuntime {
    inner: Arc<RuntimeInner>,
}

impl fmt::Debug for AgentRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentRuntime")
            .field("sessions", &self.sessions())
            .field("workspace", &self.inner.workspace)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl AgentRuntime {
    /// How many updates a runtime subscriber may fall behind before it
    /// misses some (it then reads `Lagged`).
    pub const UPDATE_CAPACITY: usize = 4096;

    /// The default executor configuration: a history of 1024 hops, the
    /// event log recorded (for replay and tests), and a two-minute timeout
    /// per model stream. Tools have their own timeout
    /// ([`Workspace::command_timeout`]).
    #[must_use]
    pub fn default_config() -> ExecutorConfig<Shadow> {
        ExecutorConfig::new().history_capacity(1024).record_events().stream_timeout(Duration::from_secs(120))
    }

    /// A runtime with [`default_config`](Self::default_config).
    #[must_use]
    pub fn new(llm: impl Llm, workspace: Workspace) -> Self {
        Self::with_config(llm, workspace, Self::default_config())
    }

    /// A runtime whose agents run with `config` and the default
    /// [`RetryPolicy`]. The interrupt and
    /// shutdown events are set here ([`ShadowEvent::Interrupt`],
    /// [`ShadowEvent::Shutdown`]): the effects rely on them.
    #[must_use]
    pub fn with_config(llm: impl Llm, workspace: Workspace, config: ExecutorConfig<Shadow>) -> Self {
        Self::with_retry_policy(llm, workspace, config, RetryPolicy::new())
    }

    /// A runtime whose agents run with `config` and retry a failed model
    /// call as `retry` says: after the server's `retry-after` if it gave
    /// one (up to the policy's cap), else after the policy's backoff; the
    /// agents [`spawn`](Self::spawn) makes try a call at most
    /// `retry.max_attempts` times.
    #[must_use]
    pub fn with_retry_policy(
        llm: impl Llm,
        workspace: Workspace,
        config: ExecutorConfig<Shadow>,
        retry: RetryPolicy,
    ) -> Self {
        let config = config
            .interrupt_event(crate::shadow::machine::EventKind::Interrupt, |_cause| ShadowEvent::Interrupt)
            .shutdown_event(|| Some(ShadowEvent::Shutdown));
        AgentRuntime {
            inner: Arc::new(RuntimeInner {
                llm: Arc::new(llm),
                retry,
                workspace: Arc::new(workspace),
                config,
                agents: Mutex::new(HashMap::new()),
                updates: broadcast::channel(Self::UPDATE_CAPACITY).0,
                generations: AtomicU64::new(0),
                store: Mutex::new(None),
            }),
        }
    }

    /// Spawns an agent in `Idle` under `session_id`, with `rules` for the
    /// named tools (every other tool asks).
    ///
    /// # Errors
    /// [`SpawnError::SessionTaken`] if a running agent has this id,
    /// [`SpawnError::NoRuntime`] outside a tokio runtime.
    pub fn spawn(
        &self,
        session_id: impl Into<String>,
        rules: &[(&str, Permission)],
    ) -> Result<ShadowHandle, SpawnError> {
        let mut context =
            rules.iter().fold(ShadowContext::new(session_id), |context, (tool, rule)| context.with_rule(*tool, *rule));
        context.max_llm_attempts = self.inner.retry.max_attempts;
        self.spawn_with_context(context)
    }

    /// Spawns an agent in `Idle` with `context` (its session id is
    /// `context.session_id`).
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn).
    pub fn spawn_with_context(&self, context: ShadowContext) -> Result<ShadowHandle, SpawnError> {
        self.spawn_agent(context, None, 0).map(|(handle, ..)| handle)
    }

    /// Makes the agents durable: every agent spawned from now on (by this
    /// runtime or a clone of it, subagents included) has its steps written
    /// to `store` under its session id ([`Durable`], writing each step
    /// before its action's work starts), and an agent whose session id the
    /// store already holds is spawned again where it was (see *Durable
    /// agents* in the [module docs](self)).
    #[must_use]
    pub fn with_store(self, store: Arc<dyn CheckpointStore>) -> Self {
        *lock(&self.inner.store) = Some(store);
        self
    }

    /// The checkpoint store the agents are written to, if they are durable.
    #[must_use]
    pub fn store(&self) -> Option<Arc<dyn CheckpointStore>> {
        lock(&self.inner.store).clone()
    }

    /// Spawns the agent of `context` (from the store if it holds it) at
    /// subagent depth `depth`; `report` is set for a subagent, where its
    /// answer goes. Says what the store held of it.
    fn spawn_agent(
        &self,
        context: ShadowContext,
        report: Option<watch::Sender<Option<ChildResult>>>,
        depth: usize,
    ) -> Result<(ShadowHandle, u64, durable::Found), SpawnError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(SpawnError::NoRuntime);
        }
        let session_id = context.session_id.clone();
        let mut agents = lock(&self.inner.agents);
        if agents.get(&session_id).is_some_and(|a| !a.handle.is_finished()) {
            return Err(SpawnError::SessionTaken(session_id));
        }
        let store_error = |error| SpawnError::Store { session_id: session_id.clone(), source: Arc::new(error) };
        let store = self.store();
        // Only a parent needs to know what its child did before a restart.
        let found = match (&store, &report) {
            (Some(store), Some(_)) => durable::look_up(&**store, &session_id).map_err(store_error)?,
            _ => durable::Found::New,
        };
        if let (Some(report), durable::Found::Resumed { answer: Some(answer), .. }) = (&report, &found) {
            // Its effects reported this before the restart, and a resumed
            // agent does not perform that step again.
            report.send_replace(Some(answer.clone()));
        }
        let generation = self.inner.generations.fetch_add(1, Ordering::Relaxed);
        let effects = ShadowEffects::new(Arc::from(session_id.as_str()), &self.inner, report, depth);
        let config = self.inner.config.clone();
        let handle = match store {
            None => runtime::spawn(Shadow::new(context), effects, config),
            Some(store) => {
                let durable = Durable::new(store, session_id.clone());
                let (handle, start) = durable.spawn(|| Shadow::new(context), effects, config).map_err(store_error)?;
                tracing::debug!(session = session_id.as_str(), ?start, "durable agent spawned");
                handle
            }
        };
        agents.insert(session_id, Registered { handle: handle.clone(), generation });
        Ok((handle, generation, found))
    }

    /// The handle of the running agent with `session_id`, subagents
    /// included.
    #[must_use]
    pub fn get(&self, session_id: &str) -> Option<ShadowHandle> {
        let mut agents = lock(&self.inner.agents);
        match agents.get(session_id) {
            Some(agent) if agent.handle.is_finished() => {
                agents.remove(session_id);
                None
            }
            Some(agent) => Some(agent.handle.clone()),
            None => None,
        }
    }

    /// The session ids of the running agents, sorted.
    #[must_use]
    pub fn sessions(&self) -> Vec<String> {
        let mut agents = lock(&self.inner.agents);
        agents.retain(|_, agent| !agent.handle.is_finished());
        let mut ids: Vec<String> = agents.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Every agent's outputs from now on, tagged with its session id, in
    /// the order they were published (a parent's and its children's
    /// included).
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<AgentUpdate> {
        self.inner.updates.subscribe()
    }

    /// The workspace the agents' tools work in.
    #[must_use]
    pub fn workspace(&self) -> &Workspace {
        &self.inner.workspace
    }

    /// How a failed model call is retried.
    #[must_use]
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.inner.retry
    }

    /// The configuration every agent runs with.
    #[must_use]
    pub fn config(&self) -> &ExecutorConfig<Shadow> {
        &self.inner.config
    }

    /// Shuts every registered agent down and unregisters it; returns each
    /// one's final state, by session id.
    pub async fn shutdown_all(&self) -> Vec<(String, Result<StateKindOf<Shadow>, RequestError<Shadow>>)> {
        let mut agents: Vec<(String, Registered)> = lock(&self.inner.agents).drain().collect();
        // Parents first (a parent's session id sorts before its children's,
        // which it prefixes): a child stopped first would answer its parent
        // with an error, and a durable parent would keep that error.
        agents.sort_by(|a, b| a.0.cmp(&b.0));
        let mut outcomes = Vec::with_capacity(agents.len());
        for (session_id, agent) in agents {
            outcomes.push((session_id, agent.handle.shutdown().await));
        }
        outcomes
    }
}
