//! Running the agent of this module under the executor: the input event,
//! a spawned worker with its script, and what a finished worker leaves to
//! read (its failure, its event log).

use std::sync::Arc;

use agent_fsm::runtime::{self, MachineHandle, RequestError, WorkerError};

use super::{Agent, Event, Scripted};

/// The user typing `text`.
pub(crate) fn input(text: &str) -> Event {
    Event::UserInput(text.to_owned())
}

/// Spawns a fresh agent (three attempts per request) running `script`.
pub(crate) fn start(script: &Scripted, config: runtime::ExecutorConfig<Agent>) -> MachineHandle<Agent, String> {
    runtime::spawn(Agent::new(3), script.clone(), config)
}

/// Why the worker failed; panics if it finished without failing.
pub(crate) async fn failure(handle: &MachineHandle<Agent, String>) -> Arc<WorkerError<Agent>> {
    match handle.wait_finished().await {
        Err(RequestError::Failed(cause)) => cause,
        other => panic!("expected the worker to fail, got {other:?}"),
    }
}

/// Every event the agent's history recorded, in order.
pub(crate) async fn event_log(handle: &MachineHandle<Agent, String>) -> Vec<Event> {
    let history = handle.history().await.unwrap();
    history.events().unwrap().iter().map(|r| r.event.clone()).collect()
}
