//! One agent a worker runs: spawned from its checkpoint on the store fenced
//! with the worker's lease, its inbox rows fed to its handle in id order,
//! and its end (terminal state, a write the fence refused, a failure)
//! reported to the worker's loop.

use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_postgres::Client;
use tracing::Instrument;

use super::keeper::Pulse;
use super::{Fleet, FleetError, blocking, db};
use crate::runtime::{Effects, ExecutorConfig, MachineHandle, RequestError, WorkerError};
use crate::store::{Durability, Durable, SnapshotPolicy, StoreError};
use crate::{Kind, StateMachine};

/// The worker's control connection, replaced when it closes; the feeders
/// read it at each query.
#[derive(Clone)]
pub(crate) struct Control(Arc<Mutex<Arc<Client>>>);

impl Control {
    pub(crate) fn new(client: Client) -> Self {
        Self(Arc::new(Mutex::new(Arc::new(client))))
    }

    pub(crate) fn get(&self) -> Arc<Client> {
        Arc::clone(&self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn set(&self, client: Client) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(client);
    }
}

/// How an agent's run on this worker ended.
#[derive(Debug)]
pub(crate) enum End {
    /// It reached its terminal state.
    Terminal,
    /// It was stopped (a shutdown, or its task aborted).
    Stopped,
    /// A write was refused: another worker holds its lease now.
    Fenced,
    /// It failed otherwise (a store error, a panic).
    Failed(String),
}

/// An agent's end, as its watcher reports it.
#[derive(Debug)]
pub(crate) struct Ended {
    pub(crate) agent: String,
    pub(crate) epoch: u64,
    pub(crate) end: End,
}

/// A running agent. Dropping it stops the agent as a crash would (its
/// worker task aborted, with the work in flight) and its feeder.
pub(crate) struct Running<M: StateMachine, O> {
    pub(crate) epoch: u64,
    pub(crate) handle: MachineHandle<M, O>,
    /// Wakes the feeder: the agent's inbox has a new row.
    pub(crate) wake: Arc<Notify>,
    task: JoinHandle<()>,
    feeder: JoinHandle<()>,
    watcher: JoinHandle<()>,
}

impl<M: StateMachine, O> Drop for Running<M, O> {
    fn drop(&mut self) {
        self.task.abort();
        self.feeder.abort();
        self.watcher.abort();
    }
}

/// What a worker spawns an agent with.
pub(crate) struct Spawn<'a, E, M: StateMachine> {
    pub(crate) fleet: &'a Fleet,
    pub(crate) control: Control,
    pub(crate) worker: &'a str,
    pub(crate) agent: String,
    pub(crate) epoch: u64,
    pub(crate) effects: E,
    pub(crate) config: ExecutorConfig<M>,
    pub(crate) durability: Durability,
    pub(crate) snapshots: SnapshotPolicy,
    pub(crate) ended: mpsc::UnboundedSender<Ended>,
    /// The lease keeper's pulse, beaten by each store call of the agent.
    pub(crate) pulse: Pulse,
}

impl<E, M> Spawn<'_, E, M>
where
    M: StateMachine + Send + 'static,
    M::State: Serialize + DeserializeOwned,
    M::Context: Serialize + DeserializeOwned,
    M::Event: Serialize + DeserializeOwned + Send + 'static,
    E: Effects<M>,
{
    /// Spawns the agent from its checkpoint, with its feeder and watcher.
    pub(crate) async fn start(self) -> Result<Running<M, E::Output>, FleetError> {
        let Self { fleet, control, worker, agent, epoch, effects, config, durability, snapshots, ended, pulse } = self;
        let span = tracing::info_span!("fleet_agent", worker, agent = agent.as_str(), epoch);
        let store = super::fenced::<M>(fleet, worker, epoch, pulse);
        let durable = Durable::new(store, agent.clone()).durability(durability).snapshots(snapshots);
        // Reading the checkpoint blocks (the store's calls do).
        let (handle, future, last) = blocking(move || durable.resume(effects, config)).await??;
        span.in_scope(|| tracing::info!(last, "agent resumed"));
        let task = tokio::spawn(future.instrument(span.clone()));
        let wake = Arc::new(Notify::new());
        let feeder =
            tokio::spawn(feed(control, agent.clone(), handle.clone(), Arc::clone(&wake)).instrument(span.clone()));
        let watcher = tokio::spawn(watch(handle.clone(), agent, epoch, ended).instrument(span));
        Ok(Running { epoch, handle, wake, task, feeder, watcher })
    }
}

/// Sends the agent's unapplied inbox rows to its handle, in id order, each
/// once: after the first read (every unapplied row), each wake reads the
/// rows past the last one sent. Nothing else sends to the handle, so the
/// k-th step the agent takes from its mailbox is the k-th row sent, which
/// the fenced store marks applied in that step's transaction.
async fn feed<M, O>(control: Control, agent: String, handle: MachineHandle<M, O>, wake: Arc<Notify>)
where
    M: StateMachine + 'static,
    M::Event: Serialize + DeserializeOwned + Send + 'static,
    O: Clone + Send + 'static,
{
    let mut after: i64 = 0;
    loop {
        let client = control.get();
        match client.query(db::UNAPPLIED, &[&agent, &after]).await {
            Ok(rows) => {
                for row in rows {
                    let (Ok(id), Ok(text)) = (row.try_get::<_, i64>(0), row.try_get::<_, String>(1)) else {
                        tracing::error!("an inbox row does not read as the schema says");
                        return;
                    };
                    after = id;
                    match serde_json::from_str::<M::Event>(&text) {
                        Ok(event) => {
                            // The step that takes the event marks the row
                            // holding the event as the machine writes it
                            // (the fenced store's `take_inbox_row`). A
                            // sender may have written it otherwise (keys in
                            // another order, `{"Stop":null}` for `"Stop"`):
                            // rewritten first, or a step taking it out of
                            // turn would mark another row.
                            if let Ok(own) = serde_json::to_string(&event)
                                && own != text
                                && let Err(error) = client.execute(db::REWRITE, &[&id, &own]).await
                            {
                                tracing::warn!(inbox = id, %error, "cannot rewrite an inbox event as the machine writes it");
                            }
                            if handle.send(event).await.is_err() {
                                // The agent stopped: its watcher reports why.
                                return;
                            }
                        }
                        Err(error) => {
                            // Never applied by a step, so it must not count
                            // as the oldest unapplied row.
                            tracing::warn!(inbox = id, %error, "an inbox event does not decode: refused");
                            if let Err(error) = client.execute(db::REFUSE, &[&id]).await {
                                tracing::error!(inbox = id, %error, "cannot mark an inbox row refused");
                            }
                        }
                    }
                }
            }
            // Read again at the next wake (a notification or the poll).
            Err(error) => tracing::warn!(%error, "cannot read the inbox"),
        }
        wake.notified().await;
    }
}

/// Waits for the agent to end and reports how.
async fn watch<M, O>(handle: MachineHandle<M, O>, agent: String, epoch: u64, ended: mpsc::UnboundedSender<Ended>)
where
    M: StateMachine + 'static,
    M::Event: Send + 'static,
    O: Clone + Send + 'static,
{
    let end = match handle.wait_finished().await {
        Ok(kind) if M::DESCRIPTION.is_terminal(kind.name()) => End::Terminal,
        Ok(_) | Err(RequestError::Closed) => End::Stopped,
        Err(RequestError::Failed(error)) if is_fenced(&error) => End::Fenced,
        Err(error) => End::Failed(error.to_string()),
    };
    let _ = ended.send(Ended { agent, epoch, end });
}

/// Whether the agent stopped because the fence refused its write.
fn is_fenced<M: StateMachine>(error: &WorkerError<M>) -> bool {
    match error {
        WorkerError::Store(failure) => {
            matches!(failure.error().downcast_ref::<StoreError>(), Some(StoreError::Fenced { .. }))
        }
        _ => false,
    }
}
