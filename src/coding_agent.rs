//! A small coding agent: the Loom machine driven by the executor, with an
//! LLM behind a trait and real tools confined to a workspace directory.
//!
//! - The model is any [`agent_fsm::llm::Provider`]: [`ScriptedLlm`] is a
//!   deterministic stand-in that reads the conversation to pick its next
//!   reply and streams it as deltas with small delays; the OpenAI-compatible
//!   and Anthropic clients are real ones ([`model`] picks one from flags and
//!   the environment). Neither the machine nor the executor changes.
//! - [`Workspace`]: `read_file`, `write_file`, `edit_file` and
//!   `list_files`, every path resolved beneath one directory by
//!   [`agent_fsm::tools`] (no `..`, absolute path or symlink leads out),
//!   and `run_command`, a shell in that directory killed with its process
//!   group on timeout, its output capped. The shell is not a sandbox: the
//!   command can reach anything the user running the agent can.
//! - [`LoomEffects`]: performs Loom's actions: a model call becomes a
//!   stream of [`StreamEvent`]s (or a [`ProviderError`]; a stream that ends
//!   without its reply is a dropped connection), tool calls become concurrent tasks, the post-tool
//!   hook reports the tools that succeeded as output and sends its completion
//!   event at once, a retry a timer after the server's `retry-after` or
//!   the [`RetryPolicy`]'s backoff, and
//!   text and errors become [`Output`]s for subscribers.

mod counted;
pub mod demo;
pub mod durable;
pub mod inspect;
pub mod model;
pub mod observed;
mod scripted;

pub use scripted::{SCRIPTED_USAGE, ScriptedLlm};

use crate::loom::{
    AgentAction, AgentEvent, AssistantMessage, LlmRequest, Loom, Message, ToolCall, ToolError, ToolExecutionOutcome,
};
use agent_fsm::llm::{ErrorKind, Provider, ProviderError, Request, StopReason, StreamEvent, Usage};
use agent_fsm::runtime::{EffectContext, EffectFailure, Effects, RetryPolicy};
use agent_fsm::tool::ToolSet;
use agent_fsm::tools::{self, ShellOptions};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
/// `message` streamed as a provider would: a text delta per word, one
/// tool-call delta per call, then `Completed`, each after `delay`. For
/// scripted models; the usage is zero.
pub fn stream_reply(
    message: AssistantMessage,
    delay: Duration,
) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
    stream_reply_with(message, Usage::default(), delay)
}

/// [`stream_reply`], its `Completed` event reporting `usage`.
pub fn stream_reply_with(
    message: AssistantMessage,
    usage: Usage,
    delay: Duration,
) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
    let mut events: Vec<StreamEvent> =
        message.text.split_inclusive(' ').map(|word| StreamEvent::TextDelta(word.to_owned())).collect();
    for (index, c) in message.tool_calls.iter().enumerate() {
        events.push(StreamEvent::ToolCallDelta {
            index,
            id: Some(c.id.clone()),
            name: Some(c.name.clone()),
            arguments_fragment: c.arguments.to_string(),
        });
    }
    let stop_reason = if message.tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
    events.push(StreamEvent::Completed { message, stop_reason, usage });
    futures::stream::iter(events)
        .then(move |event| async move {
            tokio::time::sleep(delay).await;
            Ok(event)
        })
        .boxed()
}

/// What the agent is told before the user's first message.
pub const SYSTEM_PROMPT: &str = "You are a coding agent working in a small workspace directory. \
Use the tools to look at files, change them and run commands; paths are relative to the workspace. \
When the task is done, say what you did in one or two sentences.";

/// What a finished tool call tells the machine: its output, or its error.
pub(crate) fn tool_outcome(call_id: String, result: agent_fsm::llm::ToolResult) -> ToolExecutionOutcome {
    if result.is_error {
        ToolExecutionOutcome::Error { call_id, error: tool_error(result.content) }
    } else {
        ToolExecutionOutcome::Success { call_id, output: Value::String(result.content) }
    }
}

/// What a tool call whose task failed (panicked, timed out, was
/// cancelled) tells the machine.
pub(crate) fn tool_failed(call_id: String, failure: &EffectFailure) -> ToolExecutionOutcome {
    ToolExecutionOutcome::Error { call_id, error: tool_error(failure.to_string()) }
}

/// The model's error for a response stream that failed: none for one
/// cancelled (by a newer attempt: nothing to report).
pub(crate) fn stream_failure(failure: EffectFailure) -> Option<ProviderError> {
    match failure {
        EffectFailure::Cancelled => None,
        EffectFailure::TimedOut => Some(ProviderError::new(ErrorKind::Timeout, "the stream timed out")),
        failure => Some(ProviderError::new(ErrorKind::ConnectionDropped, failure.to_string())),
    }
}

/// The model's stream as the machine's events (`event` for each item,
/// `failed` for a failure), ending after the completed reply or the first
/// failure. A stream that ends with neither breaks the [`Provider`]
/// contract (a custom provider, say, that yields its text and stops): it
/// yields a dropped-connection failure, which the machine retries and then
/// reports, instead of leaving it waiting for a reply that will never come
/// while every message the user types next is refused.
pub(crate) fn llm_events<E: Send + 'static>(
    stream: BoxStream<'static, Result<StreamEvent, ProviderError>>,
    event: fn(StreamEvent) -> E,
    failed: fn(ProviderError) -> E,
) -> impl futures::Stream<Item = E> + Send + 'static {
    stream
        .map(Some)
        .chain(futures::stream::once(async { None }))
        .scan(false, move |ended, item| {
            let next = match (*ended, item) {
                (true, _) => None,
                (false, Some(Ok(item))) => {
                    *ended = matches!(item, StreamEvent::Completed { .. });
                    Some(Some(event(item)))
                }
                (false, Some(Err(error))) => {
                    *ended = true;
                    Some(Some(failed(error)))
                }
                (false, None) => {
                    *ended = true;
                    let error =
                        ProviderError::new(ErrorKind::ConnectionDropped, "the model's stream ended without a reply");
                    Some(Some(failed(error)))
                }
            };
            std::future::ready(next)
        })
        .filter_map(std::future::ready)
}

/// Why a tool call failed.
fn tool_error(message: impl Into<String>) -> ToolError {
    ToolError { message: message.into() }
}

/// Runs `command` in `dir` with no stdin, killed if the future is dropped,
/// and without the variables that would point `git` at another
/// repository than the workspace's ([`tools::GIT_REPOSITORY_VARIABLES`]). For the programs the agents run
/// themselves (`git`, a formatter); the model's commands go through
/// [`run_shell`].
///
/// # Errors
/// The command could not be started.
pub async fn output_of(command: &mut tokio::process::Command, dir: &Path) -> std::io::Result<std::process::Output> {
    for name in tools::GIT_REPOSITORY_VARIABLES {
        command.env_remove(name);
    }
    command
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .kill_on_drop(true)
        .output()
        .await
}

/// Runs `command` with `sh -c` in `dir` through [`tools::run_command`]:
/// its process group is killed when it exits, after `timeout`, or if the
/// future is dropped, and its output is capped at the default 32 KiB (head
/// and tail). Every agent's shell tool; it is not a sandbox (see
/// [`agent_fsm::tools`]).
///
/// # Errors
/// What the model is told: a command that could not start, failed (with its
/// exit code and output) or timed out.
pub async fn run_shell(dir: &Path, command: &str, timeout: Duration) -> Result<String, String> {
    let options = ShellOptions::default().with_timeout(timeout);
    tools::run_command(dir, command, &options)
        .await
        .and_then(tools::CommandOutput::into_result)
        .map_err(|e| e.to_string())
}

/// A directory the file tools may touch, and nothing outside it: every path
/// is resolved beneath it by [`agent_fsm::tools::Workspace`], so no `..`,
/// absolute path or symlink leads out. `run_command` runs a shell whose
/// working directory is the workspace, but which can reach anything the
/// user running the agent can: a shell is not a sandbox.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    /// The directory handle, opened on the first tool call (so that `new`
    /// cannot fail) and kept.
    opened: OnceLock<tools::Workspace>,
    /// How long `run_command` may take before its process group is killed.
    pub command_timeout: Duration,
    /// How many bytes of a command's output are kept (head and tail).
    pub output_cap: usize,
}

impl Workspace {
    /// Tools confined to `root`, with a 10 s command timeout and a 32 KiB
    /// output cap.
    ///
    /// A relative `root` is made absolute against the current directory
    /// now, as [`tools::Workspace::open`] does: the directory is opened
    /// only at the first tool call, and the shell and the programs the
    /// agents run there (`git`, a formatter) go by this path, so a later
    /// change of the process's current directory must not move any of
    /// them to another directory. (A root that cannot be made absolute,
    /// the empty path, is kept as given and fails at the first call.)
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Workspace {
            root: std::path::absolute(&root).unwrap_or(root),
            opened: OnceLock::new(),
            command_timeout: Duration::from_secs(10),
            output_cap: ShellOptions::default().output_cap,
        }
    }

    /// The directory, made absolute (see [`new`](Self::new)).
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The library's workspace over the directory, opened once.
    ///
    /// # Errors
    /// The directory cannot be opened.
    pub fn tools(&self) -> Result<&tools::Workspace, tools::ToolError> {
        if let Some(opened) = self.opened.get() {
            return Ok(opened);
        }
        let opened = tools::Workspace::open(&self.root)
            .map_err(|source| tools::ToolError::Io { path: self.root.display().to_string(), source })?;
        // Another call may have opened it meanwhile; either handle will do.
        Ok(self.opened.get_or_init(|| opened))
    }

    fn arg<'a>(call: &'a ToolCall, name: &str) -> Result<&'a str, ToolError> {
        call.arguments
            .get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| tool_error(format!("`{}` needs a string argument `{name}`", call.name)))
    }

    /// Runs one tool call: `read_file { path }`, `write_file { path,
    /// content }`, `edit_file { path, old, new }` (exactly one occurrence
    /// of `old`), `list_files { path? }` and `run_command { command }`.
    ///
    /// # Errors
    /// A [`ToolError`] for an unknown tool, bad arguments, and every
    /// [`tools::ToolError`] (a path outside the workspace, a missing file,
    /// an edit that does not match once, a command that failed or timed
    /// out), in its words.
    pub async fn run(&self, call: &ToolCall) -> Result<Value, ToolError> {
        let fail = |e: tools::ToolError| tool_error(e.to_string());
        let ws = self.tools().map_err(fail)?;
        match call.name.as_str() {
            "read_file" => ws.read_file(Self::arg(call, "path")?).await.map(Value::String).map_err(fail),
            "write_file" => {
                ws.write_file(Self::arg(call, "path")?, Self::arg(call, "content")?).await.map_err(fail)?;
                Ok(json!("written"))
            }
            "edit_file" => {
                let (path, old, new) = (Self::arg(call, "path")?, Self::arg(call, "old")?, Self::arg(call, "new")?);
                ws.edit_file(path, old, new).await.map_err(fail)?;
                Ok(json!("edited"))
            }
            "list_files" => {
                let path = call.arguments.get("path").and_then(Value::as_str).unwrap_or(".");
                Ok(Value::String(ws.listing(path).await.map_err(fail)?.to_text()))
            }
            "run_command" => {
                let options =
                    ShellOptions::default().with_timeout(self.command_timeout).with_output_cap(self.output_cap);
                let output = ws.run_command(Self::arg(call, "command")?, &options).await.map_err(fail)?;
                output.into_result().map(Value::String).map_err(fail)
            }
            other => Err(tool_error(format!("unknown tool `{other}`"))),
        }
    }
}

/// What the agent shows its user, published to subscribers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Streamed text of the model's reply.
    Text(String),
    /// An error or notice.
    Error(String),
    /// A tool call starting.
    ToolStarted(String),
    /// A tool call finished (published by the inspected demo's effects).
    ToolFinished(String),
    /// The post-tool hook ran.
    Hook(String),
}

/// Performs Loom's actions.
#[derive(Clone)]
pub struct LoomEffects {
    /// The model.
    pub llm: Arc<dyn Provider>,
    /// The model's name, sent with every request.
    pub model: String,
    /// The system prompt.
    pub system: String,
    /// The tools offered to the model: the library's typed workspace
    /// tools, whose definitions (JSON schemas) the model reads and which
    /// run its calls.
    pub tools: Arc<ToolSet>,
    /// Where the tools work.
    pub workspace: Arc<Workspace>,
    /// Backoff between LLM retries.
    pub retry: RetryPolicy,
}

impl LoomEffects {
    /// `llm` as `model`, working in `workspace`, with the workspace tools
    /// ([`agent_fsm::tool::workspace_tools_with`] the workspace's command
    /// timeout and output cap), [`SYSTEM_PROMPT`] and the default retry
    /// policy.
    ///
    /// # Errors
    /// The workspace's directory cannot be opened.
    pub fn new(
        llm: Arc<dyn Provider>,
        model: impl Into<String>,
        workspace: Workspace,
    ) -> Result<Self, tools::ToolError> {
        let shell =
            ShellOptions::default().with_timeout(workspace.command_timeout).with_output_cap(workspace.output_cap);
        let set = agent_fsm::tool::workspace_tools_with(workspace.tools()?.clone(), shell);
        Ok(LoomEffects {
            llm,
            model: model.into(),
            system: SYSTEM_PROMPT.to_owned(),
            tools: Arc::new(set),
            workspace: Arc::new(workspace),
            retry: RetryPolicy::new(),
        })
    }

    /// The provider request for one of the machine's requests.
    #[must_use]
    pub fn request(&self, request: &LlmRequest) -> Request {
        request.to_request(&self.model, &self.tools.definitions()).system(self.system.clone())
    }
}

impl std::fmt::Debug for LoomEffects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoomEffects")
            .field("model", &self.model)
            .field("workspace", &self.workspace)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// The key of the LLM response stream, by which a retry cancels the last.
const LLM_STREAM: &str = "llm";

impl Effects<Loom> for LoomEffects {
    type Output = Output;

    fn perform(&mut self, action: AgentAction, cx: &mut EffectContext<'_, Loom, Output>) {
        match action {
            AgentAction::SendLlmRequest(request) => {
                // A retry's request: whatever is left of the failed
                // attempt's stream must not reach this one.
                cx.cancel_task(LLM_STREAM);
                let stream =
                    llm_events(self.llm.stream(&self.request(&request)), AgentEvent::LlmEvent, AgentEvent::LlmFailed);
                cx.stream_keyed(LLM_STREAM, stream, |failure| stream_failure(failure).map(AgentEvent::LlmFailed));
            }
            AgentAction::ExecuteTools(calls) => {
                for call in calls {
                    cx.output(Output::ToolStarted(format!("{} {}", call.name, call.arguments)));
                    let run = self.tools.call(&call);
                    let id = call.id.clone();
                    cx.spawn_task(
                        id.clone(),
                        async move {
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
                cx.send(AgentEvent::PostToolsHookCompleted { action_taken: !changed.is_empty() });
            }
            AgentAction::ScheduleRetry { attempt, retry_after } => {
                cx.pause(self.retry.delay_for(attempt, retry_after), AgentEvent::RetryTimeoutFired)
            }
            AgentAction::DisplayMessage(text) => cx.output(Output::Text(text)),
            AgentAction::DisplayError(text) => cx.output(Output::Error(text)),
            AgentAction::WaitForInput | AgentAction::Shutdown => {}
        }
    }
}

/// The file the scripted session fixes, as it starts.
pub const GREETING_WITH_TYPO: &str = "#!/bin/sh\necho \"Hello, wrold\"\n";

/// Lays out the scripted session's workspace in `root`.
///
/// # Errors
/// Any I/O error writing the files.
pub fn prepare_workspace(root: &Path) -> std::io::Result<()> {
    std::fs::write(root.join("greeting.sh"), GREETING_WITH_TYPO)?;
    std::fs::write(root.join("README.md"), "A tiny project whose greeting has a typo.\n")
}

/// What a finished session reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// User turns.
    pub turns: usize,
    /// Hops the machine took, transient ones included.
    pub transitions: usize,
    /// The states entered, in order (a self-transition does not repeat one).
    pub states: Vec<&'static str>,
    /// Tool calls made.
    pub tool_calls: usize,
    /// Time in each state, in the order first entered.
    pub time_in_state: Vec<(&'static str, u64, Duration)>,
    /// The state the machine ended in.
    pub final_state: &'static str,
}

/// Runs a session: each prompt is one user turn, sent once the previous
/// turn is over; then the agent shuts down. `on_notification` sees every
/// notification as it happens (the example prints them).
///
/// # Errors
/// The executor's error if the worker failed.
pub async fn run_session(
    effects: LoomEffects,
    prompts: &[&str],
    on_notification: impl FnMut(&agent_fsm::runtime::Notification<Loom, Output>) + Send + 'static,
) -> Result<Summary, agent_fsm::runtime::RequestError<Loom>> {
    let (summary, _) = run_session_until(effects, prompts, on_notification, std::future::pending()).await?;
    Ok(summary)
}

/// [`run_session`], cut short when `stop` completes (the demo's Ctrl-C):
/// the agent is shut down at once, its model stream dropped and its
/// running commands killed with their process groups, rather than left
/// running after the program is gone. Also returns whether `stop` cut it
/// short.
///
/// # Errors
/// The executor's error if the worker failed.
pub async fn run_session_until(
    effects: LoomEffects,
    prompts: &[&str],
    mut on_notification: impl FnMut(&agent_fsm::runtime::Notification<Loom, Output>) + Send + 'static,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(Summary, bool), agent_fsm::runtime::RequestError<Loom>> {
    use agent_fsm::runtime::{ExecutorConfig, spawn};

    let config = ExecutorConfig::<Loom>::new()
        .concurrency_limit(4)
        .task_timeout(Duration::from_secs(30))
        // No deadline on the model's stream: a slow but live reply (a local
        // model, a long file written out) must not be cut off and asked
        // again. The provider's client gives up on a stream that goes
        // silent instead (its read timeout, see `model::choose`).
        .history_capacity(1024)
        .interrupt_event(crate::loom::machine::EventKind::Interrupted, |cause| AgentEvent::Interrupted {
            cause: cause.to_owned(),
        })
        .shutdown_event(|| Some(AgentEvent::ShutdownRequested));
    // A turn, for its `invoke_agent` span: from the user's input until the
    // agent waits for the next one.
    #[cfg(feature = "otel")]
    let config = config.agent_turns(
        agent_fsm::telemetry::AgentTurns::new("coding-agent")
            .starts_on([crate::loom::machine::EventKind::UserInput])
            .ends_in([crate::loom::machine::StateKind::WaitingForUserInput]),
    );
    // Counted as they are run, not from the notifications, which a
    // subscriber behind the log misses (see `counted`).
    let (effects, tool_calls) = counted::Counted::new(effects, counted::loom_calls);
    let handle = spawn(Loom::new(crate::loom::AgentConfig::default()), effects, config);
    let mut notifications = handle.subscribe();
    let printer = tokio::spawn(async move {
        while let Some(n) = notifications.recv().await {
            on_notification(&n);
        }
    });
    let turns = async {
        for prompt in prompts {
            handle.send(AgentEvent::UserInput(Message::user(*prompt))).await?;
            handle.wait_idle().await?;
        }
        Ok::<(), agent_fsm::runtime::RequestError<Loom>>(())
    };
    let stopped = tokio::select! {
        done = turns => { done?; false }
        () = stop => true,
    };
    // Cancels whatever is in flight: a tool's future dropped kills its
    // command's process group.
    let final_state = handle.shutdown().await?.name();
    // Read after the stop, so it holds the shutdown's own hop.
    let history = handle.history().await?;
    // The subscription ends when the worker is gone.
    let _ = printer.await;
    let tool_calls = tool_calls.load(std::sync::atomic::Ordering::Relaxed);
    Ok((Summary::of(&history, prompts.len(), tool_calls, final_state), stopped))
}

impl Summary {
    /// The summary of a run whose worker recorded `history`.
    pub(crate) fn of<M: agent_fsm::StateMachine>(
        history: &agent_fsm::runtime::History<M>,
        turns: usize,
        tool_calls: usize,
        final_state: &'static str,
    ) -> Self {
        use agent_fsm::Kind;
        let mut states = vec![history.transitions().next().map_or(final_state, |t| t.from.name())];
        for t in history.transitions() {
            if t.to != t.from {
                states.push(t.to.name());
            }
        }
        Self {
            turns,
            transitions: history.transitions().len(),
            states,
            tool_calls,
            time_in_state: history.time_in_state().iter().map(|s| (s.state.name(), s.entries, s.total)).collect(),
            final_state,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_response_stream_tells_the_model_why_and_a_cancelled_one_nothing() {
        assert!(stream_failure(EffectFailure::Cancelled).is_none());
        let timed_out = stream_failure(EffectFailure::TimedOut).expect("an error");
        assert_eq!(timed_out.kind(), &ErrorKind::Timeout);
        let panicked = stream_failure(EffectFailure::Panicked("boom".into())).expect("an error");
        assert_eq!(panicked.kind(), &ErrorKind::ConnectionDropped);
        assert!(panicked.to_string().contains("boom"), "{panicked}");
    }

    #[test]
    fn a_failed_tool_task_is_an_error_outcome_naming_the_call_and_the_failure() {
        let outcome = tool_failed("call-1".into(), &EffectFailure::TimedOut);
        let ToolExecutionOutcome::Error { call_id, error } = outcome else { panic!("not an error: {outcome:?}") };
        assert_eq!(call_id, "call-1");
        assert_eq!(error.message, EffectFailure::TimedOut.to_string());
    }
}
