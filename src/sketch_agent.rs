//! The Sketch machine ([`crate::sketch`]) run end to end by the executor,
//! with a model behind a trait, real tools in a workspace, a real `git`
//! check after every tool round and a real `rustfmt` run over the files new
//! commits changed.
//!
//! - [`Llm`]: the model; [`ScriptedLlm`] is a deterministic stand-in that
//!   reads the conversation to pick its reply (its prompts are listed on
//!   the type).
//! - [`Workspace`]: `write_file`, `read_file` and `bash` (with a timeout),
//!   every path confined to one directory.
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
//! effect work is in flight (its ordering rule 3), so a message typed while a
//! tool runs would reach the machine only after the whole turn, as a new
//! turn, and a cancel typed while the model thinks would arrive after the
//! tools had started. Sketch wants both during the turn: its table queues
//! messages in every in-flight state and checks a cancel flag before each
//! tool run. So, while a turn is in flight, the effects keep an *input lane*
//! open: a stream (effect work, so its items are delivered between tool
//! results) fed by [`SketchAgent::say`] and [`SketchAgent::cancel`]. Outside
//! a turn the lane is closed and input goes through the handle's inbox as
//! usual. Nothing is dropped: the lane yields what it holds before it ends.
//!
//! # Cancellation
//! [`SketchAgent::cancel`] sends [`SketchEvent::Cancel`] through the lane:
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

use crate::sketch::{
    Budget, CANCELLED_RESULT, Commit, FormatReport, LlmReply, Message, Sketch, SketchAction, SketchContext,
    SketchEvent, SketchState, StopReason, ToolCall, ToolResult, Usage,
};
use agent_fsm::StateMachine;
use agent_fsm::runtime::{
    EffectContext, EffectFailure, Effects, ExecutorConfig, History, MachineHandle, Notification, RequestError,
    SendError, spawn,
};
use futures::Stream;
use futures::future::{BoxFuture, FutureExt, Shared};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

// ===== the model =====

/// A language model: the complete reply to a conversation.
pub trait Llm: Send + Sync + 'static {
    /// The reply to `conversation` (its last message is the one just sent),
    /// or why the call failed.
    fn reply(&self, conversation: Vec<Message>) -> BoxFuture<'static, Result<LlmReply, String>>;
}

/// The file the demo session writes: valid Rust, badly formatted.
pub const UNFORMATTED_LIB_RS: &str = "pub fn add(a:i32,b:i32)->i32{a+b}\n#[cfg(test)]\nmod tests{use super::*;#[test]fn adds(){assert_eq!(add(2,2),4);}}\n";

/// The command the demo session's model runs to commit `src/lib.rs`.
pub const COMMIT_COMMAND: &str = "git add src/lib.rs && git commit -q -m 'Add add()'";

/// The demo session's prompt.
pub const DEMO_PROMPT: &str = "Add an `add` function to src/lib.rs and commit it.";

/// A deterministic model, in the manner of Shelley's `predictable.go`: the
/// user's newest message picks a script, and the tool rounds already in the
/// turn pick the step, so one conversation always gets one reply.
///
/// | prompt | reply |
/// | --- | --- |
/// | `say: TEXT` | answers `TEXT` |
/// | `bash: CMD` | runs `CMD` with `bash`, then answers with what came back |
/// | `multi_bash: A \|\|\| B` | runs `A` and `B` concurrently, then answers |
/// | `bash_then_fail: CMD` | runs `CMD`, then the next call fails |
/// | `error: TEXT` | the call fails with `TEXT` |
/// | `maxTokens` | a reply cut off at its token limit |
/// | anything else | the demo: writes [`UNFORMATTED_LIB_RS`] to `src/lib.rs`, commits it with [`COMMIT_COMMAND`], then answers |
///
/// Answers after tools quote the last results, the agent's notes (commits,
/// formatters) and any user messages gathered with them.
#[derive(Debug, Clone)]
pub struct ScriptedLlm {
    /// How long each reply takes.
    pub delay: Duration,
    /// What each reply costs.
    pub usage: Usage,
}

impl Default for ScriptedLlm {
    fn default() -> Self {
        ScriptedLlm { delay: Duration::from_millis(40), usage: Usage { tokens: 1_000, cost_cents: 1 } }
    }
}

/// What a prompt asks the scripted model for.
enum Script<'a> {
    Say(&'a str),
    Fail(&'a str),
    MaxTokens,
    Bash(Vec<&'a str>),
    BashThenFail(&'a str),
    Demo,
}

impl<'a> Script<'a> {
    fn parse(prompt: &'a str) -> Self {
        let prompt = prompt.trim();
        let after = |prefix: &str| prompt.strip_prefix(prefix).map(str::trim);
        if let Some(text) = after("say:") {
            Script::Say(text)
        } else if let Some(text) = after("error:") {
            Script::Fail(text)
        } else if prompt == "maxTokens" {
            Script::MaxTokens
        } else if let Some(commands) = after("multi_bash:") {
            Script::Bash(commands.split("|||").map(str::trim).collect())
        } else if let Some(command) = after("bash_then_fail:") {
            Script::BashThenFail(command)
        } else if let Some(command) = after("bash:") {
            Script::Bash(vec![command])
        } else {
            Script::Demo
        }
    }
}

impl ScriptedLlm {
    /// A model that answers at once, each reply costing `usage`.
    #[must_use]
    pub fn instant(usage: Usage) -> Self {
        ScriptedLlm { delay: Duration::ZERO, usage }
    }

    /// The reply to `conversation` (see the table on the type).
    ///
    /// # Errors
    /// The scripted failures, and a conversation without a user message.
    pub fn reply_to(&self, conversation: &[Message]) -> Result<LlmReply, String> {
        let usage = self.usage;
        let Some((start, texts)) = conversation.iter().enumerate().rev().find_map(|(i, m)| match m {
            Message::User(texts) => Some((i, texts)),
            _ => None,
        }) else {
            return Err("the conversation has no user message".to_owned());
        };
        let prompt = texts.last().map_or("", String::as_str);
        let turn = conversation.get(start + 1..).unwrap_or_default();
        let rounds = turn.iter().filter(|m| matches!(m, Message::ToolResults { .. })).count();
        let last_results = turn.iter().rev().find(|m| matches!(m, Message::ToolResults { .. }));
        // Call ids unique in the session: the reply's number, the call's.
        let reply_number = conversation.iter().filter(|m| matches!(m, Message::Assistant { .. })).count() + 1;
        let call = |index: usize, name: &str, input: Value| ToolCall {
            id: format!("toolu_{reply_number:02}_{}", index + 1),
            name: name.to_owned(),
            input: input.to_string(),
        };
        let bash = |index: usize, command: &str| call(index, "bash", json!({ "command": command }));
        let tools = |text: &str, calls: Vec<ToolCall>| LlmReply {
            text: text.to_owned(),
            tool_calls: calls,
            stop_reason: StopReason::ToolUse,
            usage,
        };
        match Script::parse(prompt) {
            Script::Say(text) => Ok(LlmReply::text(text, usage)),
            Script::Fail(text) => Err(text.to_owned()),
            Script::MaxTokens => Ok(LlmReply {
                text: "Here is a very long answer that".to_owned(),
                tool_calls: Vec::new(),
                stop_reason: StopReason::MaxTokens,
                usage,
            }),
            Script::Bash(commands) if rounds == 0 => {
                Ok(tools("Running it.", commands.iter().enumerate().map(|(i, c)| bash(i, c)).collect()))
            }
            Script::BashThenFail(command) if rounds == 0 => Ok(tools("Running it.", vec![bash(0, command)])),
            Script::BashThenFail(_) => Err("overloaded (HTTP 529)".to_owned()),
            Script::Bash(_) => Ok(LlmReply::text(summarize(last_results), usage)),
            Script::Demo => match rounds {
                0 => Ok(tools(
                    "I'll write `add` in src/lib.rs.",
                    vec![call(0, "write_file", json!({ "path": "src/lib.rs", "content": UNFORMATTED_LIB_RS }))],
                )),
                1 => Ok(tools("Now I commit it.", vec![bash(0, COMMIT_COMMAND)])),
                _ => Ok(LlmReply::text(
                    format!("Added `add` to src/lib.rs and committed it. {}", summarize(last_results)),
                    usage,
                )),
            },
        }
    }
}

impl Llm for ScriptedLlm {
    fn reply(&self, conversation: Vec<Message>) -> BoxFuture<'static, Result<LlmReply, String>> {
        let reply = self.reply_to(&conversation);
        let delay = self.delay;
        async move {
            tokio::time::sleep(delay).await;
            reply
        }
        .boxed()
    }
}

/// The scripted model's words about a tool-results message.
fn summarize(results: Option<&Message>) -> String {
    let Some(Message::ToolResults { results, notes, user_messages }) = results else {
        return "Nothing ran.".to_owned();
    };
    let described: Vec<String> = results
        .iter()
        .map(|r| {
            let status = if r.is_error { "failed" } else { "ok" };
            match r.output.trim() {
                "" => format!("{} {status}", r.call_id),
                output => format!("{} {status}: {output}", r.call_id),
            }
        })
        .collect();
    let mut text = format!("Tool results: {}.", described.join("; "));
    if !notes.is_empty() {
        let _ = write!(text, " Notes: {}.", notes.join("; "));
    }
    if !user_messages.is_empty() {
        let quoted: Vec<String> = user_messages.iter().map(|m| format!("\"{m}\"")).collect();
        let _ = write!(text, " You also wrote {}: noted.", quoted.join(", "));
    }
    text
}

// ===== the tools =====

/// A directory the tools may touch, and nothing outside it.
///
/// Paths given to `write_file` and `read_file` must be relative and may not
/// use `..`; `bash` runs with the workspace as its working directory (a
/// shell command can still reach outside it: the confinement is of paths,
/// not a sandbox).
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    /// How long a `bash` command may take before it is killed.
    pub command_timeout: Duration,
}

impl Workspace {
    /// Tools confined to `root`, with a 10 s command timeout.
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Workspace { root: root.into(), command_timeout: Duration::from_secs(10) }
    }

    /// The directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` inside the workspace.
    ///
    /// # Errors
    /// An empty or absolute path, or one using `..`.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        crate::coding_agent::confined(&self.root, path)
    }

    /// Runs one tool call and returns what the tool says.
    ///
    /// # Errors
    /// What the model is told: an unknown tool, input that is not a JSON
    /// object with the tool's string arguments, a path outside the
    /// workspace, an I/O error, a command that failed or timed out.
    pub async fn run(&self, call: &ToolCall) -> Result<String, String> {
        let input: Value =
            serde_json::from_str(&call.input).map_err(|e| format!("`{}` input is not JSON: {e}", call.name))?;
        let arg = |name: &str| {
            input.get(name).and_then(Value::as_str).ok_or_else(|| format!("`{}` needs a string `{name}`", call.name))
        };
        let io = |e: std::io::Error| e.to_string();
        match call.name.as_str() {
            "write_file" => {
                let (path, content) = (self.resolve(arg("path")?)?, arg("content")?);
                if let Some(parent) = path.parent() {
                    tokio::fs::create_dir_all(parent).await.map_err(io)?;
                }
                tokio::fs::write(&path, content).await.map_err(io)?;
                Ok(format!("wrote {} bytes to {}", content.len(), arg("path")?))
            }
            "read_file" => tokio::fs::read_to_string(self.resolve(arg("path")?)?).await.map_err(io),
            "bash" => self.bash(arg("command")?).await,
            other => Err(format!("unknown tool `{other}`; the tools are write_file, read_file and bash")),
        }
    }

    /// Runs `command` with `sh -c` in the workspace; killed on timeout or
    /// when the task running it is cancelled.
    async fn bash(&self, command: &str) -> Result<String, String> {
        let mut child = tokio::process::Command::new("sh");
        child.arg("-c").arg(command);
        let output = tokio::time::timeout(self.command_timeout, output_of(&mut child, &self.root))
            .await
            .map_err(|_| format!("`{command}` timed out after {:?}", self.command_timeout))?
            .map_err(|e| e.to_string())?;
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        if output.status.success() {
            Ok(text)
        } else {
            Err(format!("exit {}: {text}", output.status.code().unwrap_or(-1)))
        }
    }
}

/// Runs `command` in `dir` with no stdin, killed if the future is dropped,
/// and without the `GIT_*` variables that would point `git` at another
/// repository than the workspace's.
async fn output_of(command: &mut tokio::process::Command, dir: &Path) -> std::io::Result<std::process::Output> {
    command
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_TERMINAL_PROMPT", "0")
        .kill_on_drop(true)
        .output()
        .await
}

// ===== git =====

/// How long one `git` command may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `git args` in `dir`.
async fn git_output(dir: &Path, args: &[&str]) -> Result<std::process::Output, String> {
    let mut command = tokio::process::Command::new("git");
    command.args(args);
    match tokio::time::timeout(GIT_TIMEOUT, output_of(&mut command, dir)).await {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(e)) => Err(format!("`git {}` could not run: {e}", args.join(" "))),
        Err(_) => Err(format!("`git {}` timed out", args.join(" "))),
    }
}

/// `git args`'s stdout, or why it failed.
async fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let output = git_output(dir, args).await?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!("`git {}`: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
    }
}

/// The commit `HEAD` names, `None` in a repository without commits.
///
/// # Errors
/// `git` failed (not installed, not a repository).
pub async fn head(dir: &Path) -> Result<Option<String>, String> {
    let output = git_output(dir, &["rev-parse", "--verify", "-q", "HEAD^{commit}"]).await?;
    match output.status.code() {
        Some(0) => Ok(Some(String::from_utf8_lossy(&output.stdout).trim().to_owned())),
        // `--verify -q` exits 1, silently, when HEAD names no commit yet.
        Some(1) => Ok(None),
        _ => Err(format!("`git rev-parse HEAD`: {}", String::from_utf8_lossy(&output.stderr).trim())),
    }
}

/// The commits made since `before` (oldest first), each with the files it
/// changed, relative to `dir`.
///
/// # Errors
/// `git` failed.
pub async fn commits_since(dir: &Path, before: Option<&str>) -> Result<Vec<Commit>, String> {
    let Some(after) = head(dir).await? else {
        return Ok(Vec::new());
    };
    if before == Some(after.as_str()) {
        return Ok(Vec::new());
    }
    let range = before.map_or_else(|| after.clone(), |before| format!("{before}..{after}"));
    let mut commits = Vec::new();
    for sha in git(dir, &["rev-list", "--reverse", &range]).await?.lines().filter(|l| !l.is_empty()) {
        let files =
            git(dir, &["diff-tree", "--root", "--no-commit-id", "--name-only", "-r", "-z", "--relative", sha]).await?;
        commits.push(Commit {
            sha: sha.chars().take(10).collect(),
            changed_files: files.split('\0').filter(|f| !f.is_empty()).map(str::to_owned).collect(),
        });
    }
    Ok(commits)
}

/// Makes `root` a git repository with a first commit (a README), its
/// author set in the repository itself so it works on a fresh machine.
///
/// # Errors
/// An I/O error, or `git` failing.
pub async fn prepare_workspace(root: &Path) -> std::io::Result<()> {
    tokio::fs::write(root.join("README.md"), "A tiny crate the Sketch agent works on.\n").await?;
    for args in [
        &["-c", "init.defaultBranch=main", "init", "-q"][..],
        &["config", "user.name", "Sketch Demo"],
        &["config", "user.email", "sketch@example.invalid"],
        &["config", "commit.gpgsign", "false"],
        &["add", "README.md"],
        &["commit", "-q", "-m", "Initial commit"],
    ] {
        git(root, args).await.map_err(std::io::Error::other)?;
    }
    Ok(())
}

// ===== the formatter =====

/// `rustfmt`, run on the `.rs` files among those new commits changed.
#[derive(Debug, Clone)]
pub struct Rustfmt {
    /// The program.
    pub program: PathBuf,
    /// The edition passed with `--edition`.
    pub edition: String,
    /// How long one run may take.
    pub timeout: Duration,
}

impl Default for Rustfmt {
    fn default() -> Self {
        Rustfmt { program: PathBuf::from("rustfmt"), edition: "2024".to_owned(), timeout: Duration::from_secs(30) }
    }
}

impl Rustfmt {
    /// Formats the `.rs` files among `files` (workspace-relative) in one
    /// run and reports which ones changed and what failed. Files that no
    /// longer exist (deleted by the commit) are skipped.
    pub async fn format(&self, workspace: &Workspace, files: &[String]) -> FormatReport {
        let mut report = FormatReport::default();
        let mut targets = Vec::new();
        for file in files.iter().filter(|f| Path::new(f).extension().is_some_and(|e| e == "rs")) {
            let path = match workspace.resolve(file) {
                Ok(path) => path,
                Err(e) => {
                    report.failures.push(e);
                    continue;
                }
            };
            match tokio::fs::read(&path).await {
                Ok(before) => targets.push((file, path, before)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => report.failures.push(format!("{file}: {e}")),
            }
        }
        if targets.is_empty() {
            return report;
        }
        let mut command = tokio::process::Command::new(&self.program);
        command.arg("--edition").arg(&self.edition).arg("--").args(targets.iter().map(|(_, path, _)| path));
        let program = self.program.display();
        match tokio::time::timeout(self.timeout, output_of(&mut command, workspace.root())).await {
            Err(_) => report.failures.push(format!("{program} timed out after {:?}", self.timeout)),
            Ok(Err(e)) => report.failures.push(format!("{program} could not run: {e}")),
            Ok(Ok(output)) if !output.status.success() => report.failures.push(format!(
                "{program} exited with {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )),
            Ok(Ok(_)) => {}
        }
        // Even a failed run may have rewritten some files: compare them all.
        for (file, path, before) in targets {
            if tokio::fs::read(&path).await.is_ok_and(|after| after != before) {
                report.reformatted.push(file.clone());
            }
        }
        report
    }
}

// ===== the input lane =====

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding the lock; the queue is consistent anyway.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The input lane: user events for the turn in flight (see the module docs).
///
/// The agent's side offers events; the effects open the lane (a stream on
/// the executor) when a turn starts and close it when the turn ends. A
/// closed lane refuses offers, which then go through the inbox. A lane
/// stream yields what the lane holds before it ends; opening a new lane
/// ends the old stream (its generation is stale) and hands the queue on.
#[derive(Debug, Clone, Default)]
struct InputLane {
    shared: Arc<Mutex<Lane>>,
}

#[derive(Debug, Default)]
struct Lane {
    open: bool,
    /// Incremented by every `open`; a stream of an older one ends.
    generation: u64,
    pending: VecDeque<SketchEvent>,
    /// The current stream's waker.
    waker: Option<Waker>,
}

impl InputLane {
    /// Queues `event` for the turn in flight, or hands it back if the lane
    /// is closed.
    fn offer(&self, event: SketchEvent) -> Result<(), SketchEvent> {
        let waker = {
            let mut lane = lock(&self.shared);
            if !lane.open {
                return Err(event);
            }
            lane.pending.push_back(event);
            lane.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    fn is_open(&self) -> bool {
        lock(&self.shared).open
    }

    fn has_pending(&self) -> bool {
        !lock(&self.shared).pending.is_empty()
    }

    /// Opens the lane and returns the stream that delivers it.
    fn open(&self) -> LaneStream {
        let (generation, waker) = {
            let mut lane = lock(&self.shared);
            lane.generation += 1;
            lane.open = true;
            (lane.generation, lane.waker.take())
        };
        // An older stream still open sees its generation is stale and ends.
        if let Some(waker) = waker {
            waker.wake();
        }
        LaneStream { lane: self.clone(), generation }
    }

    /// Closes the lane; its stream ends once it has yielded what it holds.
    fn close(&self) {
        let waker = {
            let mut lane = lock(&self.shared);
            lane.open = false;
            lane.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The lane as a stream of events, for [`EffectContext::stream`].
struct LaneStream {
    lane: InputLane,
    generation: u64,
}

impl Stream for LaneStream {
    type Item = SketchEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<SketchEvent>> {
        let mut lane = lock(&self.lane.shared);
        if lane.generation != self.generation {
            return Poll::Ready(None);
        }
        if let Some(event) = lane.pending.pop_front() {
            return Poll::Ready(Some(event));
        }
        if !lane.open {
            return Poll::Ready(None);
        }
        lane.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for LaneStream {
    /// A stream dropped while its lane is open was cancelled (interrupt,
    /// shutdown): close the lane so that input goes through the inbox until
    /// the effects open it again. What it held stays for the next stream.
    fn drop(&mut self) {
        let mut lane = lock(&self.lane.shared);
        if lane.generation == self.generation {
            lane.open = false;
            lane.waker = None;
        }
    }
}

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
        /// Its input.
        input: String,
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
    lane: InputLane,
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
            .field("lane", &self.lane)
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
            lane: InputLane::default(),
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
            |_, failure| SketchEvent::LlmError(failure.to_string()),
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
            cx.output(Output::ToolStarted { id: call.id.clone(), name: call.name.clone(), input: call.input.clone() });
            let (workspace, before, id) = (Arc::clone(&self.workspace), before.clone(), call.id.clone());
            cx.spawn_task(
                tool_task(&call.id),
                async move {
                    // Every tool of the round starts after HEAD was read.
                    let _ = before.await;
                    SketchEvent::ToolResult(match workspace.run(&call).await {
                        Ok(output) => ToolResult::ok(call.id, output),
                        Err(error) => ToolResult::error(call.id, error),
                    })
                },
                move |_, failure| {
                    SketchEvent::ToolResult(match failure {
                        EffectFailure::Cancelled => ToolResult::error(id, CANCELLED_RESULT),
                        other => ToolResult::error(id, format!("the tool {other}")),
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
                        cx.send(SketchEvent::ToolResult(ToolResult::error(id, CANCELLED_RESULT)));
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

    /// Opens the input lane while a turn is in flight (or input is left in
    /// it), closes it otherwise.
    fn sync_lane(&self, cx: &mut EffectContext<'_, Sketch, Output>) {
        let machine = cx.machine();
        let in_turn = !machine.is_poisoned() && in_turn(machine.state());
        let wanted = in_turn || self.lane.has_pending();
        if wanted && !self.lane.is_open() {
            cx.stream(self.lane.open(), |_| None);
        } else if !wanted && self.lane.is_open() {
            self.lane.close();
        }
    }
}

/// Whether the machine rests in the middle of a turn.
fn in_turn(state: &SketchState) -> bool {
    matches!(
        state,
        SketchState::SendingToLlm
            | SketchState::RunningTool { .. }
            | SketchState::CheckingGitCommits { .. }
            | SketchState::RunningAutoformatters { .. }
            | SketchState::SendingToolResults
    )
}

/// A message sent to the model, in words.
fn describe(message: &Message) -> String {
    match message {
        Message::User(texts) => format!("user: {}", texts.join(" / ")),
        Message::Assistant { text, .. } => format!("assistant: {text}"),
        Message::ToolResults { results, notes, user_messages } => {
            let results: Vec<String> =
                results.iter().map(|r| format!("{} {}", r.call_id, if r.is_error { "error" } else { "ok" })).collect();
            let mut text = format!("tool results: {}", results.join(", "));
            if !notes.is_empty() {
                let _ = write!(text, "; notes: {}", notes.join("; "));
            }
            if !user_messages.is_empty() {
                let _ = write!(text, "; user: {}", user_messages.join(" / "));
            }
            text
        }
    }
}

impl Effects<Sketch> for SketchEffects {
    type Output = Output;

    fn perform(&mut self, action: SketchAction, cx: &mut EffectContext<'_, Sketch, Output>) {
        let interrupted = self.interrupted.swap(false, Ordering::AcqRel);
        match action {
            SketchAction::Nothing | SketchAction::AwaitToolResults(_) => {}
            SketchAction::AwaitUserInput => cx.output(Output::Ready),
            SketchAction::SendToLlm(message) => {
                cx.output(Output::Sent(describe(&message)));
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
        self.sync_lane(cx);
    }
}

// ===== the agent =====

/// One hop of the history: from, event (`None` for a transient state's
/// eventless row), to, action (`None` for a hop into a transient state).
pub type Hop = (&'static str, Option<&'static str>, &'static str, Option<&'static str>);

/// The hops of a history, oldest first.
#[must_use]
pub fn hops(history: &History<SketchEvent>) -> Vec<Hop> {
    history.transitions().map(|t| (t.from, t.event, t.to, t.action)).collect()
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
    pub history: History<SketchEvent>,
}

/// The Sketch machine running on the executor, and the way in for its user.
#[derive(Debug)]
pub struct SketchAgent {
    handle: MachineHandle<Sketch, Output>,
    lane: InputLane,
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
            .interrupt_event(move |_cause| {
                interrupted.store(true, Ordering::Release);
                Some(SketchEvent::Cancel)
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
        mut on_notification: impl FnMut(&Notification<Output>) + Send + 'static,
    ) -> Result<Self, RequestError> {
        let lane = effects.lane.clone();
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
        let agent = SketchAgent { handle, lane, collector };
        agent.handle.send(SketchEvent::Start).await.map_err(|e| request_error(&e))?;
        Ok(agent)
    }

    /// Sends what the user typed: during a turn through the input lane (the
    /// table queues it and sends it with the next tool results), otherwise
    /// through the inbox (it starts a turn). A message sent just as a turn
    /// starts or ends may land on either side of that boundary; it is never
    /// dropped.
    ///
    /// # Errors
    /// The worker has stopped; the event is handed back.
    pub async fn say(&self, text: impl Into<String>) -> Result<(), SendError<SketchEvent>> {
        self.deliver(SketchEvent::UserMessage(text.into())).await
    }

    /// Asks to cancel the turn in flight (see the module docs); between
    /// turns it is ignored.
    ///
    /// # Errors
    /// The worker has stopped.
    pub async fn cancel(&self) -> Result<(), SendError<SketchEvent>> {
        self.deliver(SketchEvent::Cancel).await
    }

    /// Sets a new budget. It takes effect between turns (the table accepts
    /// it only there), so it always goes through the inbox.
    ///
    /// # Errors
    /// The worker has stopped.
    pub async fn raise_budget(&self, budget: Budget) -> Result<(), SendError<SketchEvent>> {
        self.handle.send(SketchEvent::RaiseBudget(budget)).await
    }

    /// The executor's interrupt: cancels every task, then delivers
    /// [`SketchEvent::Cancel`] (see the module docs).
    ///
    /// # Errors
    /// The worker has stopped.
    pub async fn interrupt(&self, cause: impl Into<String>) -> Result<(), RequestError> {
        self.handle.interrupt(cause).await
    }

    async fn deliver(&self, event: SketchEvent) -> Result<(), SendError<SketchEvent>> {
        match self.lane.offer(event) {
            Ok(()) => Ok(()),
            Err(event) => self.handle.send(event).await,
        }
    }

    /// Whether a turn is in flight (the input lane is open).
    #[must_use]
    pub fn in_turn(&self) -> bool {
        self.lane.is_open()
    }

    /// Waits until the turn in flight and everything sent before is over.
    ///
    /// # Errors
    /// The worker has stopped.
    pub async fn wait_idle(&self) -> Result<(), RequestError> {
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
    pub async fn finish(self) -> Result<SessionReport, RequestError> {
        self.handle.wait_idle().await?;
        let history = self.handle.history().await?;
        let context = self.handle.inspect(|m| m.context().clone()).await?;
        let final_state = self.handle.shutdown().await?;
        // The subscription ends when the worker is gone.
        let outputs = self.collector.await.unwrap_or_default();
        Ok(SessionReport {
            hops: hops(&history),
            events: history.events().map(|log| log.iter().map(|r| r.event.clone()).collect()).unwrap_or_default(),
            time_in_state: history.time_in_state().iter().map(|s| (s.state, s.entries, s.total)).collect(),
            context,
            outputs,
            final_state,
            history,
        })
    }
}

fn request_error<E>(error: &SendError<E>) -> RequestError {
    match error {
        SendError::Failed(_, cause) => RequestError::Failed(Arc::clone(cause)),
        _ => RequestError::Closed,
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
    on_notification: impl FnMut(&Notification<Output>) + Send + 'static,
) -> Result<SessionReport, RequestError> {
    let agent = SketchAgent::start(effects, budget, on_notification).await?;
    for prompt in prompts {
        agent.say(*prompt).await.map_err(|e| request_error(&e))?;
        agent.wait_idle().await?;
    }
    agent.finish().await
}
