//! The Shadow runtime machine ([`crate::shadow`]) driven by the executor,
//! end to end: a model behind a trait, real tools in a workspace,
//! permission and question replies from the outside, subagents as child
//! machines, and a registry of running agents by session id.
//!
//! - [`Llm`]: streams the model's reply to a conversation; [`ScriptedLlm`]
//!   is a deterministic stand-in that reads the conversation to pick its
//!   next reply (see [`ScriptedLlm::reply`] for its scripts).
//! - [`ShadowEffects`]: performs Shadow's actions. A model call is a
//!   stream; a tool runs on its own task (see *Interrupts* below); a
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
//! session id (`"{parent}/{tool_use_id}"`). The effects spawn the child on
//! the same runtime, with the parent's permission rules (remembered
//! answers included), send it the prompt, and start a task that awaits the
//! child's answer: `Ok(text)` when it responds, `Err(..)` when it fails,
//! is interrupted, is denied a permission or stops. The task then shuts
//! the child down, removes it from the registry and delivers
//! [`ShadowEvent::SubAgentFinished`]; an `Err` is the parent's `Error`.
//! While the child runs, [`AgentRuntime::get`] returns its handle, so its
//! own permission requests and questions are answered through it.
//!
//! # Interrupts
//! [`MachineHandle::interrupt`] cancels the executor's work in flight, then
//! delivers the configured interrupt event ([`ShadowEvent::Interrupt`],
//! set by [`AgentRuntime`]). Per state:
//! - `Processing`: the model's stream is dropped; the table keeps the
//!   partial text and ends in `Done`.
//! - `ExecutingTool`: the documented outcome is that the current tool
//!   *completes*. The executor cancels every task on an interrupt, so the
//!   tool itself runs on a task of its own and the executor's task only
//!   awaits its result. A cancelled await is delivered as
//!   [`ShadowEvent::Interrupt`] (not performed); the configured interrupt
//!   event then asks for [`ShadowAction::InterruptAfterCurrentTool`], and
//!   the effects await the same tool again. Its real result is recorded,
//!   the remaining calls get [`INTERRUPTED`], and the agent ends in `Done`.
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
//! never applied mid-turn and never dropped.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use agent_fsm::StateMachine;
use agent_fsm::runtime::{self, EffectContext, EffectFailure, Effects, ExecutorConfig, MachineHandle, RequestError};
use futures::future::{BoxFuture, FutureExt, Shared};
use futures::stream::{self, BoxStream, Stream, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::AbortHandle;

use crate::coding_agent::Workspace;
use crate::shadow::{
    AssistantReply, INTERRUPTED, Message, PartialToolCall, Permission, Shadow, ShadowAction, ShadowContext,
    ShadowEvent, ShadowState, StreamDelta, ToolCall, ToolResultBlock,
};

#[cfg(doc)]
use agent_fsm::runtime::Notification;

/// The tool through which the model delegates a task to a subagent; its
/// input is `{"prompt": "..."}`.
pub const SUBAGENT_TOOL: &str = "Task";

/// The handle of a running Shadow agent.
pub type ShadowHandle = MachineHandle<Shadow, Output>;

/// What a subagent answers: its reply, or why it has none.
type ChildResult = Result<String, String>;

// ====================================================================== LLM

/// One item of a model's streamed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum LlmEvent {
    /// A piece of text or of a tool call.
    Delta(StreamDelta),
    /// The complete reply; the stream ends.
    Reply(AssistantReply),
    /// The call failed; the stream ends.
    Failed(String),
}

/// A language model that streams its reply.
pub trait Llm: Send + Sync + 'static {
    /// The reply to `conversation` (every message so far, the newest last):
    /// deltas, then one [`LlmEvent::Reply`] or [`LlmEvent::Failed`]. A
    /// stream that ends without either is read as a failure.
    fn stream(&self, conversation: &[Message]) -> BoxStream<'static, LlmEvent>;
}

/// A deterministic model for sessions with no setup and no network.
///
/// It reads the conversation: the last user message picks a script, and
/// the number of tool-result messages since then is the step in it. Tool
/// calls get ids `toolu_1`, `toolu_2`, ... counted over the whole
/// conversation, so the same conversation always gets the same reply.
#[derive(Debug, Clone)]
pub struct ScriptedLlm {
    /// Pause before each streamed chunk, to look like a real model.
    pub delay: Duration,
}

impl Default for ScriptedLlm {
    fn default() -> Self {
        ScriptedLlm { delay: Duration::from_millis(10) }
    }
}

/// The text the scripted model streams for a "story" (long enough to be
/// interrupted halfway).
pub const STORY: &str = "Once upon a time a small agent waited in its idle state until a user typed \
                         something, and then it streamed a long and careful answer word by word.";

/// The current turn of a conversation, as the scripted model reads it.
struct TurnView<'a> {
    words: Vec<String>,
    prompt: &'a str,
    /// The tool results of each round since the prompt.
    rounds: Vec<&'a [ToolResultBlock]>,
    /// Tool calls in the whole conversation so far.
    calls_before: usize,
}

impl<'a> TurnView<'a> {
    fn of(conversation: &'a [Message]) -> Self {
        let start = conversation.iter().rposition(|m| matches!(m, Message::User(_)));
        let prompt = match start.map(|i| &conversation[i]) {
            Some(Message::User(text)) => text.as_str(),
            _ => "",
        };
        let tail = start.map_or(&conversation[..0], |i| &conversation[i + 1..]);
        let rounds = tail
            .iter()
            .filter_map(|m| match m {
                Message::ToolResults(results) => Some(results.as_slice()),
                _ => None,
            })
            .collect();
        let calls_before = conversation
            .iter()
            .map(|m| match m {
                Message::Assistant { tool_calls, .. } => tool_calls.len(),
                _ => 0,
            })
            .sum();
        let words =
            prompt.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
        TurnView { words, prompt, rounds, calls_before }
    }

    fn has(&self, word: &str) -> bool {
        self.words.iter().any(|w| w == word)
    }

    fn step(&self) -> usize {
        self.rounds.len()
    }

    /// The first result of `round`.
    fn result(&self, round: usize) -> Option<&'a ToolResultBlock> {
        self.rounds.get(round).and_then(|results| results.first())
    }

    /// The first result's text of `round`, trimmed.
    fn text(&self, round: usize) -> String {
        self.result(round).map(|r| r.content.trim().to_owned()).unwrap_or_default()
    }

    /// The reply with `text` and calls `(name, input)`, numbered on from
    /// the calls so far.
    fn reply(&self, text: &str, calls: Vec<(&str, Value)>) -> AssistantReply {
        let tool_calls = calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, input))| ToolCall {
                id: format!("toolu_{}", self.calls_before + i + 1),
                name: name.to_owned(),
                arguments: input,
            })
            .collect();
        AssistantReply { text: text.to_owned(), tool_calls }
    }

    /// The first word of the prompt that names a `.md` or `.txt` file.
    fn file(&self) -> Option<&'a str> {
        self.prompt
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| !(c.is_alphanumeric() || "._-/".contains(c))))
            .map(|w| w.trim_end_matches('.'))
            .find(|w| w.ends_with(".md") || w.ends_with(".txt"))
    }
}

impl ScriptedLlm {
    /// The reply to a conversation, or why the call fails.
    ///
    /// The scripts, by the first matching word of the last user message:
    /// - `release`: writes `NOTES.md` (asks for permission), reads
    ///   `CHANGELOG.md`, delegates a summary to a subagent, asks the user
    ///   for the version, writes the notes again, counts their lines with
    ///   `run_command`, and reports;
    /// - `delegate`: one subagent call (`Summarise CHANGELOG.md`, or
    ///   `Attempt the impossible` if the prompt says `impossible`), then
    ///   the child's answer;
    /// - `impossible`: the model fails;
    /// - `summarise`: reads the named file (`CHANGELOG.md` by default) and
    ///   summarises it;
    /// - `compare`: reads `a.txt`, then `b.txt`, one call per reply;
    /// - `write`: writes `hello.txt`;
    /// - `ask`: asks the user which colour to use;
    /// - `story`: a long text reply ([`STORY`]);
    /// - `sleep`: runs a command that sleeps half a second, with a
    ///   `write_file` call after it in the same reply;
    /// - anything else: a short greeting.
    ///
    /// # Errors
    /// The `impossible` script's failure.
    pub fn reply(conversation: &[Message]) -> Result<AssistantReply, String> {
        let turn = TurnView::of(conversation);
        let step = turn.step();
        let reply = if turn.has("release") {
            release_script(&turn)
        } else if turn.has("delegate") {
            let prompt = if turn.has("impossible") { "Attempt the impossible" } else { "Summarise CHANGELOG.md" };
            match step {
                0 => turn.reply("A helper will handle this.", vec![(SUBAGENT_TOOL, json!({ "prompt": prompt }))]),
                _ => turn.reply(&format!("The helper says: {}", turn.text(0)), Vec::new()),
            }
        } else if turn.has("impossible") {
            return Err("scripted model: overloaded (529)".to_owned());
        } else if turn.has("summarise") {
            summarise_script(&turn)
        } else if turn.has("compare") {
            match step {
                0 => turn.reply("First a.txt.", vec![("read_file", json!({ "path": "a.txt" }))]),
                1 => turn.reply("Then b.txt.", vec![("read_file", json!({ "path": "b.txt" }))]),
                _ => {
                    turn.reply(&format!("a.txt says {:?} and b.txt says {:?}.", turn.text(0), turn.text(1)), Vec::new())
                }
            }
        } else if turn.has("write") {
            match (step, turn.result(0)) {
                (0, _) => turn.reply(
                    "Writing hello.txt.",
                    vec![("write_file", json!({ "path": "hello.txt", "content": "hello from Shadow\n" }))],
                ),
                (_, Some(result)) if result.is_error => {
                    turn.reply(&format!("Could not write hello.txt: {}", result.content), Vec::new())
                }
                _ => turn.reply("Wrote hello.txt.", Vec::new()),
            }
        } else if turn.has("ask") {
            match step {
                0 => turn.reply(
                    "One question first.",
                    vec![("AskUserQuestion", json!({ "questions": ["Which colour should the button be?"] }))],
                ),
                _ => turn.reply(&format!("Painting the button {}.", turn.text(0)), Vec::new()),
            }
        } else if turn.has("story") {
            turn.reply(STORY, Vec::new())
        } else if turn.has("sleep") {
            match step {
                0 => turn.reply(
                    "Running a slow command.",
                    vec![
                        ("run_command", json!({ "command": "sleep 0.5; echo slept > slept.txt; echo slept" })),
                        ("write_file", json!({ "path": "after.txt", "content": "after\n" })),
                    ],
                ),
                _ => turn.reply("Done sleeping.", Vec::new()),
            }
        } else {
            turn.reply("Hello! I can write, compare, delegate, ask and run things.", Vec::new())
        };
        Ok(reply)
    }
}

fn release_script(turn: &TurnView<'_>) -> AssistantReply {
    let (summary, version) = (turn.text(2), turn.text(3));
    match turn.step() {
        0 => turn.reply(
            "I'll start the release notes.",
            vec![("write_file", json!({ "path": "NOTES.md", "content": "# Release notes\n" }))],
        ),
        1 => turn.reply("Now the changelog.", vec![("read_file", json!({ "path": "CHANGELOG.md" }))]),
        2 => turn
            .reply("A helper will summarise it.", vec![(SUBAGENT_TOOL, json!({ "prompt": "Summarise CHANGELOG.md" }))]),
        3 => turn.reply(
            "One question before I write it up.",
            vec![("AskUserQuestion", json!({ "questions": ["Which version is this release?"] }))],
        ),
        4 => turn.reply(
            "Writing the notes.",
            vec![(
                "write_file",
                json!({ "path": "NOTES.md", "content": format!("# Release notes for {version}\n\n{summary}\n") }),
            )],
        ),
        5 => turn.reply("Checking the file.", vec![("run_command", json!({ "command": "wc -l < NOTES.md" }))]),
        _ => turn.reply(&format!("Release notes for {version} are in NOTES.md ({} lines).", turn.text(5)), Vec::new()),
    }
}

fn summarise_script(turn: &TurnView<'_>) -> AssistantReply {
    let file = turn.file().unwrap_or("CHANGELOG.md");
    match (turn.step(), turn.result(0)) {
        (0, _) => turn.reply(&format!("Reading {file}."), vec![("read_file", json!({ "path": file }))]),
        (_, Some(result)) if result.is_error => {
            turn.reply(&format!("Could not read {file}: {}", result.content), Vec::new())
        }
        _ => {
            let content = turn.text(0);
            let entries: Vec<&str> = content.lines().filter_map(|l| l.strip_prefix("- ")).collect();
            let text = match entries.first() {
                Some(latest) => format!("{file} lists {} changes, the latest: {latest}.", entries.len()),
                None => format!("{file} has {} lines.", content.lines().count()),
            };
            turn.reply(&text, Vec::new())
        }
    }
}

/// The chunks of a reply as a model streams them: its words, its tool
/// calls, then the reply.
fn chunks(reply: AssistantReply) -> Vec<LlmEvent> {
    let mut events: Vec<LlmEvent> =
        reply.text.split_inclusive(' ').map(|word| LlmEvent::Delta(StreamDelta::Text(word.to_owned()))).collect();
    for call in &reply.tool_calls {
        events.push(LlmEvent::Delta(StreamDelta::ToolUse(PartialToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            input_json: call.arguments.to_string(),
        })));
    }
    events.push(LlmEvent::Reply(reply));
    events
}

impl Llm for ScriptedLlm {
    fn stream(&self, conversation: &[Message]) -> BoxStream<'static, LlmEvent> {
        let events = match Self::reply(conversation) {
            Ok(reply) => chunks(reply),
            Err(error) => vec![LlmEvent::Failed(error)],
        };
        let delay = self.delay;
        stream::iter(events)
            .then(move |event| async move {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                event
            })
            .boxed()
    }
}

/// The changelog of the scripted sessions' workspace.
pub const CHANGELOG: &str = "# Changelog\n\n- Subagents run as child machines\n- Permission replies are matched by \
                             request id\n- Input typed mid-turn is kept\n";

/// Lays out the scripted sessions' workspace in `root`: `CHANGELOG.md`,
/// `a.txt` and `b.txt`.
///
/// # Errors
/// Any I/O error writing the files.
pub fn prepare_workspace(root: &Path) -> std::io::Result<()> {
    std::fs::write(root.join("CHANGELOG.md"), CHANGELOG)?;
    std::fs::write(root.join("a.txt"), "alpha\n")?;
    std::fs::write(root.join("b.txt"), "beta\n")
}

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
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpawnError {
    /// A running agent already has this session id.
    SessionTaken(String),
    /// Not called inside a tokio runtime.
    NoRuntime,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SessionTaken(id) => write!(f, "a running agent already has the session id `{id}`"),
            Self::NoRuntime => f.write_str("agents are spawned inside a tokio runtime"),
        }
    }
}

impl std::error::Error for SpawnError {}

/// A registered agent.
struct Registered {
    handle: ShadowHandle,
    /// Distinguishes agents that reused a session id.
    generation: u64,
}

struct RuntimeInner {
    llm: Arc<dyn Llm>,
    workspace: Arc<Workspace>,
    config: ExecutorConfig<Shadow>,
    agents: Mutex<HashMap<String, Registered>>,
    updates: broadcast::Sender<AgentUpdate>,
    generations: AtomicU64,
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

    /// A runtime whose agents run with `config`. The interrupt and
    /// shutdown events are set here ([`ShadowEvent::Interrupt`],
    /// [`ShadowEvent::Shutdown`]): the effects rely on them.
    #[must_use]
    pub fn with_config(llm: impl Llm, workspace: Workspace, config: ExecutorConfig<Shadow>) -> Self {
        let config = config
            .interrupt_event(|_cause| Some(ShadowEvent::Interrupt))
            .shutdown_event(|| Some(ShadowEvent::Shutdown));
        AgentRuntime {
            inner: Arc::new(RuntimeInner {
                llm: Arc::new(llm),
                workspace: Arc::new(workspace),
                config,
                agents: Mutex::new(HashMap::new()),
                updates: broadcast::channel(Self::UPDATE_CAPACITY).0,
                generations: AtomicU64::new(0),
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
        let context =
            rules.iter().fold(ShadowContext::new(session_id), |context, (tool, rule)| context.with_rule(*tool, *rule));
        self.spawn_with_context(context)
    }

    /// Spawns an agent in `Idle` with `context` (its session id is
    /// `context.session_id`).
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn).
    pub fn spawn_with_context(&self, context: ShadowContext) -> Result<ShadowHandle, SpawnError> {
        self.spawn_agent(context, None).map(|(handle, _)| handle)
    }

    fn spawn_agent(
        &self,
        context: ShadowContext,
        report: Option<watch::Sender<Option<ChildResult>>>,
    ) -> Result<(ShadowHandle, u64), SpawnError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(SpawnError::NoRuntime);
        }
        let session_id = context.session_id.clone();
        let mut agents = lock(&self.inner.agents);
        if agents.get(&session_id).is_some_and(|a| !a.handle.is_finished()) {
            return Err(SpawnError::SessionTaken(session_id));
        }
        let generation = self.inner.generations.fetch_add(1, Ordering::Relaxed);
        let effects = ShadowEffects {
            session_id: Arc::from(session_id.as_str()),
            runtime: Arc::downgrade(&self.inner),
            llm: Arc::clone(&self.inner.llm),
            workspace: Arc::clone(&self.inner.workspace),
            config: self.inner.config.clone(),
            updates: self.inner.updates.clone(),
            last_state: ShadowState::Idle,
            deferred: VecDeque::new(),
            current_tool: None,
            children: HashMap::new(),
            report,
        };
        let handle = runtime::spawn(Shadow::new(context), effects, self.inner.config.clone());
        agents.insert(session_id, Registered { handle: handle.clone(), generation });
        Ok((handle, generation))
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

    /// The configuration every agent runs with.
    #[must_use]
    pub fn config(&self) -> &ExecutorConfig<Shadow> {
        &self.inner.config
    }

    /// Shuts every registered agent down and unregisters it; returns each
    /// one's final state, by session id.
    pub async fn shutdown_all(&self) -> Vec<(String, Result<&'static str, RequestError>)> {
        let agents: Vec<(String, Registered)> = lock(&self.inner.agents).drain().collect();
        let mut outcomes = Vec::with_capacity(agents.len());
        for (session_id, agent) in agents {
            outcomes.push((session_id, agent.handle.shutdown().await.map(|state| state.name())));
        }
        outcomes.sort_by(|a, b| a.0.cmp(&b.0));
        outcomes
    }
}

// ================================================================== effects

/// The tool call running on its own task.
struct RunningTool {
    tool_use_id: String,
    /// Its result, awaitable more than once (see *Interrupts*).
    result: Shared<BoxFuture<'static, ChildResult>>,
    abort: AbortHandle,
}

/// A child agent this agent spawned.
struct Child {
    handle: ShadowHandle,
    result: watch::Receiver<Option<ChildResult>>,
    generation: u64,
}

/// Performs Shadow's actions for one agent (see the [module docs](self)).
/// Built by [`AgentRuntime`].
pub struct ShadowEffects {
    session_id: Arc<str>,
    runtime: Weak<RuntimeInner>,
    llm: Arc<dyn Llm>,
    workspace: Arc<Workspace>,
    config: ExecutorConfig<Shadow>,
    updates: broadcast::Sender<AgentUpdate>,
    /// The state last published.
    last_state: ShadowState,
    /// Input handed back mid-turn, oldest first.
    deferred: VecDeque<String>,
    current_tool: Option<RunningTool>,
    children: HashMap<String, Child>,
    /// Set for a subagent: where its answer goes.
    report: Option<watch::Sender<Option<ChildResult>>>,
}

impl fmt::Debug for ShadowEffects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShadowEffects")
            .field("session_id", &self.session_id)
            .field("last_state", &self.last_state)
            .field("deferred", &self.deferred)
            .field("current_tool", &self.current_tool.as_ref().map(|t| &t.tool_use_id))
            .field("children", &self.children.keys().collect::<Vec<_>>())
            .field("subagent", &self.report.is_some())
            .finish_non_exhaustive()
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

/// A model stream as machine events, ending after the first reply or
/// failure; a stream that ends without either yields a failure.
fn llm_events(llm: BoxStream<'static, LlmEvent>) -> impl Stream<Item = ShadowEvent> + Send + 'static {
    llm.map(Some)
        .chain(stream::once(async { None }))
        .scan(false, |ended, item| {
            let next = match (*ended, item) {
                (true, _) => None,
                (false, Some(LlmEvent::Delta(delta))) => Some(Some(ShadowEvent::LlmDelta(delta))),
                (false, Some(LlmEvent::Reply(reply))) => {
                    *ended = true;
                    Some(Some(ShadowEvent::LlmReply(reply)))
                }
                (false, Some(LlmEvent::Failed(error))) => {
                    *ended = true;
                    Some(Some(ShadowEvent::LlmFailed(error)))
                }
                (false, None) => {
                    *ended = true;
                    Some(Some(ShadowEvent::LlmFailed("the model's stream ended without a reply".to_owned())))
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
        let stream = self.llm.stream(&cx.machine().context().conversation);
        cx.stream(llm_events(stream), |failure| match failure {
            // An interrupt or a shutdown: the table decides what the
            // partial reply becomes.
            EffectFailure::Cancelled => None,
            failure => Some(ShadowEvent::LlmFailed(format!("the model's stream {failure}"))),
        });
    }

    fn execute_tool(&mut self, call: ToolCall, cx: Cx<'_, '_>) {
        self.emit(cx, Output::ToolStarted(call.clone()));
        if call.name == SUBAGENT_TOOL {
            let event = match call.arguments.get("prompt").and_then(Value::as_str) {
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
        let (tx, rx) = oneshot::channel();
        // The tool runs on a task of its own, which an interrupt does not
        // cancel: the executor's task only awaits its result.
        let task = self.config.task_tracker().spawn(async move {
            let result = workspace.run(&loom_call).await.map(text_of).map_err(|e| e.message);
            // Err: nobody awaits the result any more (shutdown).
            let _ = tx.send(result);
        });
        let result = async move { rx.await.unwrap_or_else(|_| Err("the tool stopped without a result".to_owned())) }
            .boxed()
            .shared();
        let abort = task.abort_handle();
        self.await_tool(tool_use_id.clone(), result.clone(), abort.clone(), cx);
        self.current_tool = Some(RunningTool { tool_use_id, result, abort });
    }

    /// Awaits the running tool on an executor task. A cancelled await (an
    /// interrupt) is delivered as [`ShadowEvent::Interrupt`]; a timeout or
    /// panic stops the tool and fails the call.
    fn await_tool(
        &self,
        tool_use_id: String,
        result: Shared<BoxFuture<'static, ChildResult>>,
        abort: AbortHandle,
        cx: Cx<'_, '_>,
    ) {
        cx.spawn_task(
            tool_use_id.clone(),
            async move { ShadowEvent::ToolResult { tool_use_id, result: result.await } },
            move |tool_use_id, failure| match failure {
                EffectFailure::Cancelled => ShadowEvent::Interrupt,
                failure => {
                    abort.abort();
                    ShadowEvent::ToolResult { tool_use_id, result: Err(format!("the tool {failure}")) }
                }
            },
        );
    }

    /// After an interrupt in `ExecutingTool`: awaits the running tool
    /// again, or answers the call as interrupted if it never started.
    fn finish_current_tool(&self, cx: Cx<'_, '_>) {
        let ShadowState::ExecutingTool { tool_use_id, .. } = cx.machine().state() else {
            return;
        };
        let tool_use_id = tool_use_id.clone();
        match &self.current_tool {
            Some(tool) if tool.tool_use_id == tool_use_id => {
                self.await_tool(tool_use_id, tool.result.clone(), tool.abort.clone(), cx);
            }
            _ => cx.send(ShadowEvent::ToolResult { tool_use_id, result: Err(INTERRUPTED.to_owned()) }),
        }
    }

    fn spawn_child(&mut self, session_id: String, prompt: String, cx: Cx<'_, '_>) {
        let Some(inner) = self.runtime.upgrade() else {
            let result = Err("the agent runtime is gone".to_owned());
            cx.send(ShadowEvent::SubAgentFinished { session_id, result });
            return;
        };
        self.children.retain(|_, child| !child.handle.is_finished());
        let parent = cx.machine().context();
        let mut context = ShadowContext::new(session_id.clone());
        context.permissions = parent.permissions.clone();
        context.default_permission = parent.default_permission;
        context.question_tool = parent.question_tool.clone();
        let (report, result) = watch::channel(None);
        let spawned = AgentRuntime { inner }.spawn_agent(context, Some(report));
        let (handle, generation) = match spawned {
            Ok(spawned) => spawned,
            Err(error) => {
                cx.send(ShadowEvent::SubAgentFinished { session_id, result: Err(error.to_string()) });
                return;
            }
        };
        self.emit(cx, Output::SubAgentSpawned { session_id: session_id.clone(), prompt: prompt.clone() });
        // A fresh inbox has room; sent here rather than from the task so
        // that an interrupt cannot cancel it before it is queued.
        if let Err(error) = handle.try_send(ShadowEvent::UserInput(prompt)) {
            let result = Err(format!("the subagent did not take its task: {error}"));
            cx.send(ShadowEvent::SubAgentFinished { session_id, result });
            return;
        }
        let child = Child { handle, result, generation };
        self.await_child(&session_id, &child, None, cx);
        self.children.insert(session_id, child);
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

    fn interrupt_child(&self, session_id: String, cx: Cx<'_, '_>) {
        match self.children.get(&session_id) {
            Some(child) => {
                let cause = format!("the parent agent `{}` was interrupted", self.session_id);
                self.await_child(&session_id, child, Some(cause), cx);
            }
            None => cx.send(ShadowEvent::SubAgentFinished { session_id, result: Err(INTERRUPTED.to_owned()) }),
        }
    }

    /// The agent stops: the running tool and the children stop too.
    fn stop(&mut self, cx: Cx<'_, '_>) {
        if let Some(tool) = self.current_tool.take() {
            tool.abort.abort();
        }
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
            ShadowAction::CallLlm(_message) => self.call_llm(cx),
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
