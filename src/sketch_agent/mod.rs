//! The Sketch machine ([`crate::sketch`]) run end to end by the executor,
//! with a model behind a trait, real tools in a workspace, a real `git`
//! check after every tool round and a real `rustfmt` run over the files new
//! commits changed.
//!
//! - [`Llm`]: the model; [`ScriptedLlm`] is a deterministic stand-in that
//!   reads the conversation to pick its reply (its prompts are listed on
//!   the type).
//! - [`Workspace`]: `write_file`, `read_file` and `bash` (with a timeout),
//!   every path resolved beneath one directory (`bash` is not confined).
//! - [`Rustfmt`]: the autoformatter, run on the `.rs` files of new commits.
//! - [`SketchEffects`]: performs every [`SketchAction`]: the model call, each
//!   tool call and the `git` check are executor tasks; the formatter run is
//!   a task; what the user should see is published as an [`Output`].
//! - [`SketchAgent`]: spawns the machine on the executor, routes the user's
//!   input, and ends with a [`SessionReport`] read from the runtime's own
//!   history; [`run_session`] runs a list of prompts through it.
//!
//! # The `git` check
//! Before a round's tools run, a task reads `HEAD` (`git rev-parse`); every
//! tool of the round waits for that read before it starts, so `HEAD` is the
//! one from before any of them. After the round, the check reads `HEAD`
//! again; if it moved, `git rev-list before..after` lists the new commits
//! and `git diff-tree` the files each changed (relative to the workspace).
//! The formatters then run on the union of those files.
//!
//! # User input during a turn
//! The executor holds events sent with `MachineHandle::send` back while
//! effect work is in flight (its ordering rule 3), except those the table
//! marks `#[during_work]`. Sketch marks [`SketchEvent::UserMessage`] and
//! [`SketchEvent::Cancel`]: its table queues messages in every in-flight
//! state and checks a cancel flag before each tool run, so both must reach
//! it during the turn, between the tool results, as they are typed.
//! [`SketchAgent::say`] and [`SketchAgent::cancel`] simply send them.
//! A budget raised mid-turn ([`SketchAgent::raise_budget`]) is not marked:
//! it waits for the turn to end.
//!
//! # Cancellation
//! [`SketchAgent::cancel`] sends [`SketchEvent::Cancel`]:
//! while the model thinks, the table sets its flag and the model's reply
//! ends the turn at `CheckingForCancellation -> Cancelled`, every requested
//! call getting [`CANCELLED_RESULT`] without running. While tools run, the
//! effects abort them (`cancel_task`: the shell child is killed) and each
//! answers [`CANCELLED_RESULT`]; the round is still checked for commits and
//! the turn ends at `GatheringAdditionalMessages -> Error`. The model call
//! itself is never aborted: its reply is what says which calls to answer.
//!
//! [`SketchAgent::interrupt`] (the executor's interrupt) is mapped to the
//! same [`SketchEvent::Cancel`]. An interrupt cancels every task first and
//! does not perform the actions their failure events return, so the
//! machine may then wait in `CheckingGitCommits` or `SendingToolResults`
//! with nothing in flight; the effects learn of the interrupt from the
//! configured interrupt-event callback and, on the `CancelInFlight` that
//! follows, start what that state waits for.

mod formatter;
mod git;
mod model;
mod tools;

pub use formatter::Rustfmt;
pub use git::{commits_since, head, prepare_workspace};
pub use model::{COMMIT_COMMAND, DEMO_PROMPT, Llm, ScriptedLlm, UNFORMATTED_LIB_RS};
pub use tools::Workspace;

use crate::sketch::{
    Budget, CANCELLED_RESULT, FormatReport, Message, Sketch, SketchAction, SketchContext, SketchEvent, SketchState,
    ToolCall, machine::StateKind as SketchStateKind, tool_error, tool_ok,
};
use agent_fsm::llm::{ErrorKind, ProviderError};
use agent_fsm::runtime::{
    EffectContext, EffectFailure, Effects, ExecutorConfig, History, MachineHandle, Notification, RequestError,
    SendError, spawn,
};
use agent_fsm::{StateMachine, Status};
use futures::future::{BoxFuture, FutureExt, Shared};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

// ===== the effects =====

/// What the agent shows its user, published to subscribers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// The agent waits for the user.
    Ready,
    /// What went to the model, in words.
    Sent(String),
    /// A tool call started.
    ToolStarted {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments, as the model wrote them.
        arguments: serde_json::Value,
    },
    /// The formatters started on the files new commits changed.
    Formatting(Vec<String>),
    /// The model's answer; the turn is over.
    Answer(String),
    /// The turn was cancelled; these calls got a cancelled result.
    Cancelled(Vec<String>),
    /// The budget is exhausted; the turn is over.
    BudgetExceeded(String),
    /// The turn failed.
    Error(String),
    /// A message typed mid-turn was queued; this many wait.
    Queued(usize),
    /// Anything else worth showing: a cancel noted, a budget raised, an
    /// event refused.
    Notice(String),
}

/// `HEAD` as read before a round's tools ran, shared by the round's tasks.
type SharedHead = Shared<BoxFuture<'static, Result<Option<String>, String>>>;

const LLM_TASK: &str = "llm";
const GIT_TASK: &str = "git-check";
const FORMAT_TASK: &str = "autoformat";

fn tool_task(call_id: &str) -> String {
    format!("tool:{call_id}")
}

/// Performs Sketch's actions (see the module docs).
pub struct SketchEffects {
    llm: Arc<dyn Llm>,
    workspace: Arc<Workspace>,
    rustfmt: Arc<Rustfmt>,
    /// Set by the configured interrupt-event callback, read (and cleared)
    /// by the next `perform`: the interrupt cancelled every task.
    interrupted: Arc<AtomicBool>,
    /// `HEAD` before the current round's tools.
    head_before: Option<SharedHead>,
}

impl std::fmt::Debug for SketchEffects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SketchEffects")
            .field("workspace", &self.workspace)
            .field("rustfmt", &self.rustfmt)
            .finish_non_exhaustive()
    }
}

impl SketchEffects {
    /// Effects with `llm`, tools in `workspace` and the default [`Rustfmt`].
    #[must_use]
    pub fn new(llm: Arc<dyn Llm>, workspace: Workspace) -> Self {
        SketchEffects {
            llm,
            workspace: Arc::new(workspace),
            rustfmt: Arc::new(Rustfmt::default()),
            interrupted: Arc::new(AtomicBool::new(false)),
            head_before: None,
        }
    }

    /// The same effects with another formatter.
    #[must_use]
    pub fn with_rustfmt(mut self, rustfmt: Rustfmt) -> Self {
        self.rustfmt = Arc::new(rustfmt);
        self
    }

    /// The workspace the tools work in.
    #[must_use]
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    fn call_llm(&self, cx: &mut EffectContext<'_, Sketch, Output>) {
        let reply = self.llm.reply(cx.machine().context().conversation.clone());
        cx.spawn_task(
            LLM_TASK,
            async move {
                match reply.await {
                    Ok(reply) => SketchEvent::LlmResponse(reply),
                    Err(error) => SketchEvent::LlmError(error),
                }
            },
            |_, failure| {
                let kind = match failure {
                    EffectFailure::TimedOut => ErrorKind::Timeout,
                    _ => ErrorKind::ConnectionDropped,
                };
                SketchEvent::LlmError(ProviderError::new(kind, failure.to_string()))
            },
        );
    }

    fn run_tools(&mut self, calls: Vec<ToolCall>, cx: &mut EffectContext<'_, Sketch, Output>) {
        // One `stat` on the worker: cheap, and the only way to tell the
        // machine the runner itself cannot work before any task starts.
        if !self.workspace.root().is_dir() {
            let root = self.workspace.root().display();
            cx.send(SketchEvent::ToolRunFailed(format!("the workspace {root} is not a directory")));
            return;
        }
        let root = self.workspace.root().to_path_buf();
        let before: SharedHead = async move { head(&root).await }.boxed().shared();
        self.head_before = Some(before.clone());
        for call in calls {
            cx.output(Output::ToolStarted {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
            let (workspace, before, id) = (Arc::clone(&self.workspace), before.clone(), call.id.clone());
            cx.spawn_task(
                tool_task(&call.id),
                async move {
                    // Every tool of the round starts after HEAD was read.
                    let _ = before.await;
                    SketchEvent::ToolResult(match workspace.run(&call).await {
                        Ok(output) => tool_ok(call.id, output),
                        Err(error) => tool_error(call.id, error),
                    })
                },
                move |_, failure| {
                    SketchEvent::ToolResult(match failure {
                        EffectFailure::Cancelled => tool_error(id, CANCELLED_RESULT),
                        other => tool_error(id, format!("the tool {other}")),
                    })
                },
            );
        }
    }

    fn check_git(&self, cx: &mut EffectContext<'_, Sketch, Output>) {
        let root = self.workspace.root().to_path_buf();
        let before = self.head_before.clone();
        cx.spawn_task(
            GIT_TASK,
            async move {
                let Some(before) = before else {
                    return SketchEvent::GitCheckFailed("HEAD was not read before the tools ran".to_owned());
                };
                let commits = match before.await {
                    Ok(before) => commits_since(&root, before.as_deref()).await,
                    Err(error) => Err(error),
                };
                match commits {
                    Ok(commits) => SketchEvent::GitChecked(commits),
                    Err(error) => SketchEvent::GitCheckFailed(error),
                }
            },
            |_, failure| SketchEvent::GitCheckFailed(format!("the git check {failure}")),
        );
    }

    fn run_formatters(&self, files: Vec<String>, cx: &mut EffectContext<'_, Sketch, Output>) {
        cx.output(Output::Formatting(files.clone()));
        let (workspace, rustfmt) = (Arc::clone(&self.workspace), Arc::clone(&self.rustfmt));
        cx.spawn_task(
            FORMAT_TASK,
            async move { SketchEvent::FormattersFinished(rustfmt.format(&workspace, &files).await) },
            |_, failure| {
                SketchEvent::FormattersFinished(FormatReport {
                    reformatted: Vec::new(),
                    failures: vec![format!("rustfmt {failure}")],
                })
            },
        );
    }

    /// A cancel was noted. Without an interrupt, the running tools are
    /// aborted (each answers [`CANCELLED_RESULT`]); the model call and the
    /// checks go on. After an interrupt nothing is in flight any more, so
    /// the effects start what the state waits for.
    fn on_cancel(&self, interrupted: bool, cx: &mut EffectContext<'_, Sketch, Output>) {
        if cx.machine().is_poisoned() {
            return;
        }
        let state = cx.machine().state().clone();
        match state {
            SketchState::RunningTool { round } => {
                let pending: Vec<String> =
                    round.calls.iter().filter(|c| round.is_pending(&c.id)).map(|c| c.id.clone()).collect();
                cx.output(Output::Notice(format!("cancel: aborting {}", pending.join(", "))));
                for id in pending {
                    if !cx.cancel_task(&tool_task(&id)) {
                        cx.send(SketchEvent::ToolResult(tool_error(id, CANCELLED_RESULT)));
                    }
                }
            }
            SketchState::CheckingGitCommits { .. } if interrupted => self.check_git(cx),
            SketchState::RunningAutoformatters { .. } if interrupted => {
                cx.send(SketchEvent::FormattersFinished(FormatReport {
                    reformatted: Vec::new(),
                    failures: vec!["interrupted before the formatters ran".to_owned()],
                }));
            }
            SketchState::SendingToLlm | SketchState::SendingToolResults if interrupted => self.call_llm(cx),
            _ => cx.output(Output::Notice("cancel noted: the turn ends at the next check".to_owned())),
        }
    }
}

/// Whether the machine rests in the middle of a turn.
fn in_turn(state: Status<SketchStateKind>) -> bool {
    matches!(
        state,
        Status::In(
            SketchStateKind::SendingToLlm
                | SketchStateKind::RunningTool
                | SketchStateKind::CheckingGitCommits
                | SketchStateKind::RunningAutoformatters
                | SketchStateKind::SendingToolResults
        )
    )
}

/// The messages just sent to the model, in words: the user's texts, or a
/// round's results and its note.
fn describe(messages: &[Message]) -> String {
    let mut users = Vec::new();
    let mut results = Vec::new();
    let mut other = Vec::new();
    for message in messages {
        match message {
            // A round's note has several lines; the output is one.
            Message::User { content } => users.extend(content.lines().filter(|l| !l.trim().is_empty())),
            Message::Tool(r) => results.push(format!("{} {}", r.call_id, if r.is_error { "error" } else { "ok" })),
            other_message => other.push(format!("{other_message:?}")),
        }
    }
    let mut parts = Vec::new();
    if !results.is_empty() {
        parts.push(format!("tool results: {}", results.join(", ")));
    }
    if !users.is_empty() {
        parts.push(format!("user: {}", users.join(" / ")));
    }
    parts.extend(other);
    parts.join("; ")
}

impl Effects<Sketch> for SketchEffects {
    type Output = Output;

    fn perform(&mut self, action: SketchAction, cx: &mut EffectContext<'_, Sketch, Output>) {
        let interrupted = self.interrupted.swap(false, Ordering::AcqRel);
        match action {
            SketchAction::Nothing | SketchAction::AwaitToolResults(_) => {}
            SketchAction::AwaitUserInput => cx.output(Output::Ready),
            SketchAction::SendToLlm(messages) => {
                cx.output(Output::Sent(describe(&messages)));
                self.call_llm(cx);
            }
            SketchAction::RunTools(calls) => self.run_tools(calls, cx),
            SketchAction::CheckGitCommits => self.check_git(cx),
            SketchAction::RunAutoformatters(files) => self.run_formatters(files, cx),
            SketchAction::EndTurn(text) => cx.output(Output::Answer(text)),
            SketchAction::TurnCancelled(ids) => cx.output(Output::Cancelled(ids)),
            SketchAction::ShowBudgetExceeded(message) => cx.output(Output::BudgetExceeded(message)),
            SketchAction::ShowError(message) => cx.output(Output::Error(message)),
            SketchAction::MessageQueued(waiting) => cx.output(Output::Queued(waiting)),
            SketchAction::CancelInFlight => self.on_cancel(interrupted, cx),
            SketchAction::BudgetRaised(budget) => cx.output(Output::Notice(format!("budget raised: {budget:?}"))),
            SketchAction::Reject(why) => cx.output(Output::Notice(format!("refused: {why}"))),
        }
    }
}

// ===== the agent =====

/// A hop by name, `(from, event, to, action)`.
pub type Hop = agent_fsm::HopNames;

/// The hops of a history by name, oldest first.
#[must_use]
pub fn hops(history: &History<Sketch>) -> Vec<Hop> {
    history
        .transitions()
        .map(|t| (t.from.name(), t.event.map(|e| e.name()), t.to.name(), t.action.map(|a| a.name())))
        .collect()
}

/// What a finished session reports; everything about states and time comes
/// from the runtime's [`History`].
#[derive(Debug, Clone)]
pub struct SessionReport {
    /// Every hop, transient ones included, oldest first.
    pub hops: Vec<Hop>,
    /// Every event the machine handled, in delivery order.
    pub events: Vec<SketchEvent>,
    /// Time in each state: name, entries, total, in order of first exit.
    pub time_in_state: Vec<(&'static str, u64, Duration)>,
    /// The context at the end: conversation, queue, budget, spending.
    pub context: SketchContext,
    /// Everything the effects published, in order.
    pub outputs: Vec<Output>,
    /// The state the machine ended in.
    pub final_state: &'static str,
    /// The runtime's history itself.
    pub history: History<Sketch>,
}

/// The Sketch machine running on the executor, and the way in for its user.
#[derive(Debug)]
pub struct SketchAgent {
    handle: MachineHandle<Sketch, Output>,
    /// Reads every notification; returns the outputs when the worker exits.
    collector: tokio::task::JoinHandle<Vec<Output>>,
}

impl SketchAgent {
    /// The executor's settings for a Sketch agent: every event recorded
    /// (sessions are short), interrupts mapped to [`SketchEvent::Cancel`]
    /// with `interrupted` set for the effects.
    fn config(interrupted: Arc<AtomicBool>) -> ExecutorConfig<Sketch> {
        ExecutorConfig::new()
            .concurrency_limit(8)
            // A backstop: `bash`, `git` and `rustfmt` have their own timeouts.
            .task_timeout(Duration::from_mins(2))
            .history_capacity(4096)
            .notification_capacity(4096)
            .record_events()
            .interrupt_event(crate::sketch::machine::EventKind::Cancel, move |_cause| {
                interrupted.store(true, Ordering::Release);
                SketchEvent::Cancel
            })
    }

    /// Spawns the machine with `budget`, subscribes `on_notification` to
    /// everything it does, and starts it (`Start`).
    ///
    /// # Errors
    /// The worker stopped before it could start.
    pub async fn start(
        effects: SketchEffects,
        budget: Budget,
        mut on_notification: impl FnMut(&Notification<Sketch, Output>) + Send + 'static,
    ) -> Result<Self, RequestError<Sketch>> {
        let config = Self::config(Arc::clone(&effects.interrupted));
        let handle = spawn(Sketch::new(SketchContext::new(budget)), effects, config);
        let mut notifications = handle.subscribe();
        let collector = tokio::spawn(async move {
            let mut outputs = Vec::new();
            while let Some(notification) = notifications.recv().await {
                on_notification(&notification);
                if let Notification::Output(output) = notification {
                    outputs.push(output);
                }
            }
            outputs
        });
        let agent = SketchAgent { handle, collector };
        agent.handle.send(SketchEvent::Start).await?;
        Ok(agent)
    }

    /// Sends what the user typed: during a turn it reaches the machine as it
    /// comes, even while tools run (the table queues it and sends it with
    /// the next tool results); between turns it starts one. A message sent
    /// just as a turn starts or ends may land on either side of that
    /// boundary; it is never dropped.
    ///
    /// # Errors
    /// The worker has stopped; the event is handed back.
    pub async fn say(&self, text: impl Into<String>) -> Result<(), SendError<Sketch>> {
        self.deliver(SketchEvent::UserMessage(text.into())).await
    }

    /// Asks to cancel the turn in flight (see the module docs); between
    /// turns it is ignored.
    ///
    /// # Errors
    /// The worker has stopped.
    pub async fn cancel(&self) -> Result<(), SendError<Sketch>> {
        self.deliver(SketchEvent::Cancel).await
    }

    /// Sets a new budget. It takes effect between turns (the table accepts
    /// it only there), so it always goes through the inbox.
    ///
    /// # Errors
    /// The worker has stopped.
    pub async fn raise_budget(&self, budget: Budget) -> Result<(), SendError<Sketch>> {
        self.handle.send(SketchEvent::RaiseBudget(budget)).await
    }

    /// The executor's interrupt: cancels every task, then delivers
    /// [`SketchEvent::Cancel`] (see the module docs).
    ///
    /// # Errors
    /// The worker has stopped.
    pub async fn interrupt(&self, cause: impl Into<String>) -> Result<(), RequestError<Sketch>> {
        self.handle.interrupt(cause).await
    }

    async fn deliver(&self, event: SketchEvent) -> Result<(), SendError<Sketch>> {
        self.handle.send(event).await
    }

    /// Whether a turn is in flight (as of the state last published).
    #[must_use]
    pub fn in_turn(&self) -> bool {
        in_turn(self.handle.status())
    }

    /// Waits until the turn in flight and everything sent before is over.
    ///
    /// # Errors
    /// The worker has stopped.
    pub async fn wait_idle(&self) -> Result<(), RequestError<Sketch>> {
        self.handle.wait_idle().await
    }

    /// The machine's handle (state, history, subscriptions).
    #[must_use]
    pub fn handle(&self) -> &MachineHandle<Sketch, Output> {
        &self.handle
    }

    /// Waits for the agent to be idle, reads the history and the context,
    /// shuts the machine down and reports.
    ///
    /// # Errors
    /// The worker failed or stopped early.
    pub async fn finish(self) -> Result<SessionReport, RequestError<Sketch>> {
        self.handle.wait_idle().await?;
        let history = self.handle.history().await?;
        let context = self.handle.inspect(|m| m.context().clone()).await?;
        let final_state = self.handle.shutdown().await?.name();
        // The subscription ends when the worker is gone.
        let outputs = self.collector.await.unwrap_or_default();
        Ok(SessionReport {
            hops: hops(&history),
            events: history.events().map(|log| log.iter().map(|r| r.event.clone()).collect()).unwrap_or_default(),
            time_in_state: history.time_in_state().iter().map(|s| (s.state.name(), s.entries, s.total)).collect(),
            context,
            outputs,
            final_state,
            history,
        })
    }
}

/// Runs a session: starts the agent with `budget`, sends each prompt once
/// the previous turn is over, then shuts it down and reports.
/// `on_notification` sees every notification as it happens (the example
/// prints them).
///
/// # Errors
/// The worker failed or stopped early.
pub async fn run_session(
    effects: SketchEffects,
    budget: Budget,
    prompts: &[&str],
    on_notification: impl FnMut(&Notification<Sketch, Output>) + Send + 'static,
) -> Result<SessionReport, RequestError<Sketch>> {
    let agent = SketchAgent::start(effects, budget, on_notification).await?;
    for prompt in prompts {
        agent.say(*prompt).await?;
        agent.wait_idle().await?;
    }
    agent.finish().await
}
