//! One agent a worker runs: spawned from its checkpoint on the store fenced
//! with the worker's lease, its inbox rows fed to its handle in id order,
//! and its end (terminal state, a write the fence refused, a failure)
//! reported to the worker's loop.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_postgres::Client;
use tracing::Instrument;

use super::halt::{Hopeless, count_agent_failure, halt, storable};
use super::keeper::Pulse;
use super::{Fleet, FleetError, blocking, db};
use crate::panics::panic_message;
use crate::runtime::{Effects, ExecutorConfig, MachineHandle, RequestError, WorkerError};
use crate::store::postgres::pool::untranslatable;
use crate::store::{Durability, Durable, SnapshotPolicy, StepMark, StepWatch, StoreError};
use crate::{Kind, StateMachine};

/// What a worker asks of a machine, named once for its own code (the
/// public [`Worker::run`](super::Worker::run) spells it out): it runs on
/// a runtime thread, and its state, context and events are stored and read
/// back.
pub(crate) trait Resumable:
    StateMachine<
        State: Serialize + DeserializeOwned,
        Context: Serialize + DeserializeOwned,
        Event: Serialize + DeserializeOwned + Send + 'static,
    > + Send
    + 'static
{
}

impl<M> Resumable for M
where
    M: StateMachine + Send + 'static,
    M::State: Serialize + DeserializeOwned,
    M::Context: Serialize + DeserializeOwned,
    M::Event: Serialize + DeserializeOwned + Send + 'static,
{
}

/// The most inbox rows a feeder reads at once.
const PAGE_ROWS: i64 = 64;
/// The bytes of events past which a feeder's read stops (after the row
/// that crosses them: a single larger event is still read).
const PAGE_BYTES: i64 = 1 << 20;

/// The id of the last inbox row a feeder sent to its agent: the rows at or
/// before it that no step applied are where the watcher looks for the row
/// the machine failed on.
type Sent = Arc<AtomicI64>;

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

impl<E: Effects<M>, M: Resumable> Spawn<'_, E, M> {
    /// Spawns the agent from its checkpoint, with its feeder and watcher.
    pub(crate) async fn start(self) -> Result<Running<M, E::Output>, FleetError> {
        let Self { fleet, control, worker, agent, epoch, effects, config, durability, snapshots, ended, pulse } = self;
        let span = tracing::info_span!("fleet_agent", worker, agent = agent.as_str(), epoch);
        let store = super::fenced::<M>(fleet, worker, epoch, pulse);
        let steps = StepWatch::default();
        let durable =
            Durable::new(store, agent.clone()).durability(durability).snapshots(snapshots).watch(steps.clone());
        // Reading the checkpoint blocks (the store's calls do). A panic
        // reading it (a `Deserialize` of the machine's that panics on what
        // it finds) is data that does not read, not a crash of the worker.
        let id = agent.clone();
        let (handle, future, last) = blocking(move || {
            catch_unwind(AssertUnwindSafe(|| durable.resume(effects, config))).unwrap_or_else(|panic| {
                let reason = format!("reading the checkpoint panicked: {}", panic_message(&*panic));
                Err(StoreError::corrupt(&id, "log", 0, reason))
            })
        })
        .await??;
        span.in_scope(|| tracing::info!(last, "agent resumed"));
        let task = tokio::spawn(future.instrument(span.clone()));
        let wake = Arc::new(Notify::new());
        let sent: Sent = Arc::default();
        let feeder = tokio::spawn(
            feed(control.clone(), agent.clone(), handle.clone(), Arc::clone(&wake), Arc::clone(&sent))
                .instrument(span.clone()),
        );
        let blame = Blame {
            control,
            sent,
            steps,
            worker: worker.to_owned(),
            attempts: fleet.config().event_attempts,
            lease: fleet.config().lease,
        };
        let watcher = tokio::spawn(watch(handle.clone(), agent, epoch, ended, blame).instrument(span));
        Ok(Running { epoch, handle, wake, task, feeder, watcher })
    }
}

/// Sends the agent's unapplied inbox rows to its handle, in id order, each
/// once: after the first read (every unapplied row), each wake reads the
/// rows past the last one sent. Nothing else sends to the handle, so the
/// k-th step the agent takes from its mailbox is the k-th row sent, which
/// the fenced store marks applied in that step's transaction.
///
/// Rows are read a page at a time ([`PAGE_ROWS`], [`PAGE_BYTES`]), the
/// next page once the last is in the mailbox: a backlog of any size costs
/// the worker a page and a mailbox, not the whole of it in memory.
async fn feed<M, O>(control: Control, agent: String, handle: MachineHandle<M, O>, wake: Arc<Notify>, sent: Sent)
where
    M: StateMachine + 'static,
    M::Event: Serialize + DeserializeOwned + Send + 'static,
    O: Clone + Send + 'static,
{
    let mut after: i64 = 0;
    loop {
        let client = control.get();
        match client.query(db::UNAPPLIED, &[&agent, &after, &PAGE_ROWS, &PAGE_BYTES]).await {
            Ok(rows) => {
                // A page as long as asked for, or cut short by its bytes,
                // may have rows after it: read at once, not at the next wake.
                let held = rows.first().and_then(|row| row.try_get::<_, i64>(2).ok()).unwrap_or(0);
                let more = held == PAGE_ROWS || usize::try_from(held).is_ok_and(|held| held > rows.len());
                for row in rows {
                    let (Ok(id), Ok(text)) = (row.try_get::<_, i64>(0), row.try_get::<_, String>(1)) else {
                        tracing::error!("an inbox row does not read as the schema says");
                        return;
                    };
                    after = id;
                    if !deliver(&client, &handle, &sent, id, &text).await {
                        // The agent stopped: its watcher reports why.
                        return;
                    }
                }
                if more {
                    continue;
                }
            }
            // A row whose event the server cannot send as UTF-8 fails the
            // page it is in, every time: the rows are taken one at a time
            // until it is found, and refused.
            Err(error) if untranslatable(&error) => match next_row(&client, &agent, after).await {
                Ok(Some((id, Ok(text)))) => {
                    after = id;
                    if !deliver(&client, &handle, &sent, id, &text).await {
                        return;
                    }
                    continue;
                }
                Ok(Some((id, Err(error)))) => {
                    after = id;
                    refuse(&client, id, &error).await;
                    continue;
                }
                Ok(None) => {}
                Err(error) => tracing::warn!(%error, "cannot read the inbox"),
            },
            // Read again at the next wake (a notification or the poll).
            Err(error) => tracing::warn!(%error, "cannot read the inbox"),
        }
        wake.notified().await;
    }
}

/// The agent's first unapplied inbox row after `after`: its id, and its
/// event or the error of a server that cannot send it as UTF-8.
async fn next_row(
    client: &Client,
    agent: &str,
    after: i64,
) -> Result<Option<(i64, Result<String, tokio_postgres::Error>)>, tokio_postgres::Error> {
    let sql = "SELECT id FROM inbox WHERE agent = $1 AND applied_seq IS NULL AND id > $2 ORDER BY id LIMIT 1";
    let Some(row) = client.query_opt(sql, &[&agent, &after]).await? else { return Ok(None) };
    let id: i64 = row.try_get(0)?;
    let event = match client.query_one("SELECT event FROM inbox WHERE id = $1", &[&id]).await {
        Ok(row) => row.try_get(0),
        Err(error) if untranslatable(&error) => Err(error),
        Err(error) => return Err(error),
    };
    Ok(Some((id, event)))
}

/// Sends inbox row `id`, holding `text`, to the agent, or refuses it if it
/// does not decode; false if the agent stopped.
async fn deliver<M, O>(client: &Client, handle: &MachineHandle<M, O>, sent: &Sent, id: i64, text: &str) -> bool
where
    M: StateMachine + 'static,
    M::Event: Serialize + DeserializeOwned + Send + 'static,
    O: Clone + Send + 'static,
{
    // The machine's serde impls are the caller's code: one that panics on
    // what a sender wrote makes the row undecodable, not the feeder dead
    // (with it, every event sent to the agent after this one).
    let event = match catch_unwind(AssertUnwindSafe(|| serde_json::from_str::<M::Event>(text))) {
        Ok(Ok(event)) => event,
        Ok(Err(error)) => return refuse(client, id, &error).await,
        Err(panic) => return refuse(client, id, &format!("decoding it panicked: {}", panic_message(&*panic))).await,
    };
    // The step that takes the event marks the row holding the event as the
    // machine writes it (the fenced store's `take_inbox_row`). A sender may
    // have written it otherwise (keys in another order, `{"Stop":null}` for
    // `"Stop"`): rewritten first, or a step taking it out of turn would mark
    // another row. An event that cannot be written (serde refuses it, or
    // panics) would fail the step that takes it, on every resume: it is
    // refused here instead, and the agent goes on.
    let own = match catch_unwind(AssertUnwindSafe(|| crate::finite::to_string(&event))) {
        Ok(Ok(own)) => own,
        Ok(Err(error)) => return refuse(client, id, &format!("encoding it failed: {error}")).await,
        Err(panic) => return refuse(client, id, &format!("encoding it panicked: {}", panic_message(&*panic))).await,
    };
    if own != text
        && let Err(error) = client.execute(db::REWRITE, &[&id, &own]).await
    {
        tracing::warn!(inbox = id, %error, "cannot rewrite an inbox event as the machine writes it");
    }
    sent.store(id, Ordering::Release);
    handle.send(event).await.is_ok()
}

/// Refuses inbox row `id`, whose event does not decode (`error` says why):
/// never applied by a step, it must not count as the oldest unapplied row.
/// True: the feeder goes on.
async fn refuse(client: &Client, id: i64, error: &(dyn std::fmt::Display + Sync)) -> bool {
    tracing::warn!(inbox = id, %error, "an inbox event does not decode: refused");
    if let Err(error) = client.execute(db::REFUSE, &[&id]).await {
        tracing::error!(inbox = id, %error, "cannot mark an inbox row refused");
    }
    true
}

/// What the watcher needs to count a failure of the machine against what
/// it failed on.
struct Blame {
    control: Control,
    sent: Sent,
    /// Where the agent's journal was when it failed.
    steps: StepWatch,
    /// The worker's id: an agent's own failures are counted under its lease.
    worker: String,
    /// [`FleetConfig::event_attempts`](super::FleetConfig::event_attempts).
    attempts: u32,
    /// Bounds the statement: the loop waits for the report.
    lease: std::time::Duration,
}

/// Waits for the agent to end and reports how. A failure of the machine
/// (a panic, a row that left it poisoned, a panic of the event's `Clone`
/// or of the effects) is counted first, before the agent can be claimed
/// again, against what it failed on: the inbox row whose event the failed
/// step took, or else the agent itself (an event of its own work: a task's
/// result, a timer, a stream's item). An event that fails it every time is
/// refused after the configured attempts, and an agent that fails as many
/// times in a row at one step on its own work is halted, rather than stop
/// it on every lease, for ever.
async fn watch<M, O>(
    handle: MachineHandle<M, O>,
    agent: String,
    epoch: u64,
    ended: mpsc::UnboundedSender<Ended>,
    blame: Blame,
) where
    M: StateMachine + 'static,
    M::Event: DeserializeOwned + Send + 'static,
    O: Clone + Send + 'static,
{
    let end = match handle.wait_finished().await {
        Ok(kind) if M::DESCRIPTION.is_terminal(kind.name()) => End::Terminal,
        Ok(_) | Err(RequestError::Closed) => End::Stopped,
        Err(RequestError::Failed(error)) if is_fenced(&error) => End::Fenced,
        Err(error) => {
            if let RequestError::Failed(failure) = &error
                && let Some(why) = hopeless(failure)
            {
                // Resumed, it would fail on the same rows, or the same step.
                let (client, message) = (blame.control.get(), failure.to_string());
                let halted = halt(&client, &agent, &blame.worker, epoch, why, &message);
                if tokio::time::timeout(blame.lease, halted).await.is_err() {
                    tracing::warn!("cannot halt the agent: no answer within a lease");
                }
            } else if let RequestError::Failed(failure) = &error {
                let message = match &**failure {
                    WorkerError::MachinePanicked { message, .. }
                    | WorkerError::EventClonePanicked { message, .. }
                    | WorkerError::EffectsPanicked { message, .. } => Some(message.clone()),
                    WorkerError::MachinePoisoned { .. } => Some(failure.to_string()),
                    _ => None,
                };
                if let Some(message) = message {
                    let mark = blame.steps.mark();
                    let whole = failure.to_string();
                    let counted = count_failure(&blame, &agent, epoch, mark, &message, &whole);
                    if tokio::time::timeout(blame.lease, counted).await.is_err() {
                        tracing::warn!("cannot count the machine's failure: no answer within a lease");
                    }
                }
            }
            End::Failed(error.to_string())
        }
    };
    let _ = ended.send(Ended { agent, epoch, end });
}

/// Counts the machine's failure. A step under way whose event came from
/// the mailbox took an inbox row (the one its write would have marked):
/// the failure (`message`, the panic's) is counted against that row,
/// which is refused at the limit. Any other failure, on an event of the
/// agent's own work or between steps, is counted against the agent at the
/// step it happened (`error`, the whole failure, kept), which is halted
/// at the limit.
async fn count_failure(blame: &Blame, agent: &str, epoch: u64, mark: StepMark, message: &str, error: &str) {
    let client = blame.control.get();
    if mark.open
        && let Some(event) = &mark.input
    {
        let sent = blame.sent.load(Ordering::Acquire);
        let id = match client.query_opt(db::FAILED_ROW, &[&agent, &sent, event]).await {
            Ok(row) => row.and_then(|row| row.try_get::<_, i64>(0).ok()),
            Err(error) => {
                tracing::warn!(%error, "cannot find the inbox row the machine failed on");
                return;
            }
        };
        if let Some(id) = id {
            let limit = i32::try_from(blame.attempts).unwrap_or(i32::MAX);
            count_row_failure(&client, agent, id, &storable(message), limit).await;
            return;
        }
        // The row is gone (refused meanwhile): counted against the agent.
    }
    count_agent_failure(&client, agent, &blame.worker, epoch, Some(mark.seq), error, blame.attempts).await;
}

/// Counts a failure against inbox row `id`, refusing it at `limit`.
async fn count_row_failure(client: &Client, agent: &str, id: i64, message: &str, limit: i32) {
    match client.query_opt(db::FAILED, &[&id, &message, &limit]).await {
        Ok(Some(row)) => {
            let failures: i32 = row.try_get(0).unwrap_or(0);
            if row.try_get::<_, bool>(1).unwrap_or(false) {
                tracing::error!(
                    agent,
                    inbox = id,
                    failures,
                    "the machine failed on an inbox event every time: refused"
                );
            } else {
                tracing::warn!(agent, inbox = id, failures, "the machine failed on an inbox event");
            }
        }
        Ok(None) => {}
        Err(error) => tracing::warn!(inbox = id, %error, "cannot count a failure against an inbox row"),
    }
}

/// What no retry mends in the store's failure that stopped the agent.
fn hopeless<M: StateMachine>(error: &WorkerError<M>) -> Option<Hopeless> {
    match error {
        WorkerError::Store(failure) => failure.error().downcast_ref::<StoreError>().and_then(Hopeless::of),
        _ => None,
    }
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
