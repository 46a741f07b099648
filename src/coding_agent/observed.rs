//! The scripted session as the metrics example runs it: the demo's task,
//! then one event the agent's table refuses (a retry timer firing while the
//! agent waits for input), so that every kind of metric has a value. What
//! is recorded goes to whatever `metrics` recorder the caller installed.

use std::sync::Arc;
use std::time::Duration;

use agent_fsm::runtime::{ExecutorConfig, spawn};

use super::demo::TASK;
use super::{LoomEffects, ScriptedLlm, Summary, Workspace, prepare_workspace, run_session};
use crate::loom::{AgentConfig, AgentEvent, Loom};

/// Why the observed session failed.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Runs the scripted session (model `model`) in a fresh temporary
/// workspace, then delivers one event the table does not accept to a
/// second agent, idle; returns the session's summary.
///
/// # Errors
/// The workspace could not be laid out, or a worker failed.
pub async fn run_observed_session(model: &str) -> Result<Summary, Error> {
    let dir = tempfile::tempdir()?;
    prepare_workspace(dir.path())?;
    let llm = Arc::new(ScriptedLlm { delay: Duration::ZERO });
    let effects = LoomEffects::new(llm, model, Workspace::new(dir.path()))?;
    let summary = run_session(effects.clone(), &[TASK], |_| {}).await?;

    // A stray timer: no row of `WaitingForUserInput` takes it, so the
    // catch-all leaves the agent where it is and counts the refusal.
    let idle = spawn(Loom::new(AgentConfig::default()), effects, ExecutorConfig::new());
    idle.send(AgentEvent::RetryTimeoutFired).await?;
    idle.wait_idle().await?;
    idle.shutdown().await?;
    Ok(summary)
}
