//! The coding agent as a durable agent: its steps written to a SQLite
//! file, so that a session stopped (Ctrl-C) or killed in the middle goes on
//! where it was when the same command runs again. Behind
//! `cargo run --example coding_agent -- --store PATH`, and the crash test's
//! child process.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_fsm::runtime::{ExecutorConfig, Notification, RequestError};
use agent_fsm::store::{Durable, SqliteStore, Start, StoreError};

use super::{LoomEffects, Output, Summary, Workspace, prepare_workspace};
use crate::loom::{AgentEvent, AgentState, Loom, Message};

/// The agent's id in its store: one session per store file.
pub const AGENT_ID: &str = "coding-agent";

/// Why a durable session could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The store could not be opened or read.
    #[error("the store: {0}")]
    Store(#[from] StoreError),
    /// The agent failed.
    #[error("the agent: {0}")]
    Agent(#[from] RequestError<Loom>),
    /// The workspace could not be laid out.
    #[error("the workspace: {0}")]
    Workspace(#[from] std::io::Error),
}

/// How a durable session run ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SessionEnd {
    /// The turn is over: the agent waits for input, the conversation holds
    /// the whole session.
    Complete {
        /// Whether this run started the session or continued it.
        start: Start,
        /// The conversation.
        conversation: Vec<Message>,
        /// What this run did: its own steps, after the hops it replayed
        /// (without their actions) from the store's newest snapshot.
        summary: Summary,
    },
    /// Stopped before the turn was over: run again to continue.
    Paused {
        /// Whether this run started the session or continued it.
        start: Start,
        /// What this run did before it stopped.
        summary: Summary,
    },
}

/// The workspace that goes with the store at `store`: a directory beside it.
#[must_use]
pub fn workspace_of(store: &Path) -> PathBuf {
    let mut name = store.file_name().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
    name.push(".workspace");
    store.with_file_name(name)
}

/// Lays out the workspace beside `store` if it is not there yet, and
/// returns it.
///
/// # Errors
/// The directory or its files could not be written.
pub fn ensure_workspace(store: &Path) -> std::io::Result<PathBuf> {
    let dir = workspace_of(store);
    if !dir.exists() {
        std::fs::create_dir_all(&dir)?;
        prepare_workspace(&dir)?;
    }
    Ok(dir)
}

/// Runs the session whose store is the SQLite file at `store` (created if
/// missing) with `effects` until its turn is over or `stop` completes (a
/// Ctrl-C), passing every notification to `on_notification`. A new
/// session is given `task`; one found in the store continues where it was
/// (the task is given again only if it had not reached the agent).
///
/// # Errors
/// [`SessionError`].
pub async fn run_durable_session(
    store: &Path,
    effects: LoomEffects,
    task: &str,
    mut on_notification: impl FnMut(&Notification<Loom, Output>) + Send + 'static,
    stop: impl Future<Output = ()>,
) -> Result<SessionEnd, SessionError> {
    let sqlite = SqliteStore::open(store)?;
    let durable = Durable::new(Arc::new(sqlite), AGENT_ID);
    let config = ExecutorConfig::<Loom>::new()
        .concurrency_limit(4)
        .task_timeout(Duration::from_secs(30))
        .history_capacity(1024)
        .interrupt_event(crate::loom::machine::EventKind::Interrupted, |cause| AgentEvent::Interrupted {
            cause: cause.to_owned(),
        });
    let workspace = Arc::clone(&effects.workspace);
    // Counted as they are run, not from the notifications, which a
    // subscriber behind the log misses.
    let (effects, tool_calls) = super::counted::Counted::new(effects, super::counted::loom_calls);
    let (handle, start) = durable.spawn(|| Loom::new(crate::loom::AgentConfig::default()), effects, config)?;
    if matches!(start, Start::Resumed { .. }) {
        sweep(&workspace).await;
    }
    let mut notifications = handle.subscribe();
    let printer = tokio::spawn(async move {
        while let Some(n) = notifications.recv().await {
            on_notification(&n);
        }
    });
    let empty = handle.inspect(|m| m.state().conversation().is_none_or(|c| c.is_empty())).await?;
    if empty {
        handle.send(AgentEvent::UserInput(Message::user(task))).await.map_err(|_| RequestError::Closed)?;
    }
    let finished = tokio::select! {
        idle = handle.wait_idle() => { idle?; true }
        () = stop => false,
    };
    let conversation =
        handle.inspect(|m| m.state().conversation().map(|c| c.messages().to_vec()).unwrap_or_default()).await?;
    let waiting =
        matches!(handle.inspect(|m| matches!(m.state(), AgentState::WaitingForUserInput { .. })).await, Ok(true));
    // A stop is a pause: the store keeps the agent as it was.
    let final_state = handle.shutdown().await?.name();
    let history = handle.history().await?;
    let _ = printer.await;
    let tool_calls = tool_calls.load(std::sync::atomic::Ordering::Relaxed);
    let summary = Summary::of(&history, usize::from(empty), tool_calls, final_state);
    Ok(if finished && waiting {
        SessionEnd::Complete { start, conversation, summary }
    } else {
        SessionEnd::Paused { start, summary }
    })
}

/// Removes what writes of the process that ran before, killed part way,
/// left in the workspace, so that the model's shell commands (`git add -A`)
/// do not see it. Best effort: a failure is logged, and the session goes on.
async fn sweep(workspace: &Workspace) {
    let removed = async { workspace.tools()?.remove_left_behind("").await };
    match removed.await {
        Ok(0) => {}
        Ok(removed) => tracing::info!(removed, "removed the new files of writes killed before their rename"),
        Err(error) => tracing::warn!(%error, "cannot remove the new files of writes killed before their rename"),
    }
}
