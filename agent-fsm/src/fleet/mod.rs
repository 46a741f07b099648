//! A fleet of worker processes sharing durable agents through Postgres:
//! each agent runs on exactly one worker at a time, under a lease whose
//! epoch fences every write it makes; events sent to an agent from any
//! process go through a durable inbox and are applied exactly once, in the
//! order sent; a worker that dies loses its agents to the others when
//! their leases expire, and they resume from their checkpoints.
//!
//! ```no_run
//! # #[agent_fsm::state_machine(fallback = Nothing, serde, name = Counter)]
//! # mod counter {
//! #     #[states]
//! #     #[derive(Debug, Clone)]
//! #     pub enum State { #[initial] Counting { n: u32 }, #[terminal] Done }
//! #     #[events]
//! #     #[derive(Debug)]
//! #     pub enum Event { Add(u32), Stop }
//! #     #[actions]
//! #     #[derive(Debug, Default)]
//! #     pub enum Action { #[default] Nothing }
//! #     transitions! {
//! #         Counting { n } + Add(k) => Counting { n: n + k } / Nothing,
//! #         Counting + Stop => Done / Nothing,
//! #     }
//! # }
//! use agent_fsm::fleet::{Fleet, FleetConfig, Worker};
//! use agent_fsm::runtime::ExecutorConfig;
//! use counter::{Counter, Event};
//!
//! # async fn demo() -> Result<(), agent_fsm::fleet::FleetError> {
//! let url = "postgres://agent_fsm@127.0.0.1:54329/agent_fsm";
//! let fleet = Fleet::connect(FleetConfig::new(url)).await?;
//!
//! // In each worker process: run the agents this worker claims until told
//! // to stop (a signal, say), then hand them back.
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let worker = Worker::new(&fleet, "worker-1").capacity(100);
//! let effects = |_agent: &str| ((), ExecutorConfig::<Counter>::new());
//! let running = tokio::spawn(worker.run(effects, async { let _ = stopped.await; }));
//!
//! // From any process: add an agent (placed on the worker with the most
//! // room), send it events, read its status.
//! fleet.create("counter-1", &Counter::new(0)).await?;
//! fleet.send("counter-1", &Event::Add(2)).await?;
//! fleet.send("counter-1", &Event::Stop).await?;
//! let status = fleet.status("counter-1").await?;
//! println!("{} after {} steps, done: {}", status.state, status.steps, status.done);
//!
//! let _ = stop.send(());
//! let report = running.await.expect("the worker did not panic")?;
//! println!("{report:?}");
//! # Ok(())
//! # }
//! ```
//!
//! # Running a fleet
//!
//! Every process connects to the same Postgres database and schema
//! ([`FleetConfig`]); the first creates the tables (the checkpoint store's,
//! and `leases`, `inbox`, `workers`). A worker process runs
//! [`Worker::run`] with a unique worker id and the effects each agent runs
//! with; any process (a worker too) creates agents and sends them events
//! through a [`Fleet`]. An agent's or a worker's id is any text of at
//! most [`MAX_ID_BYTES`] without a NUL byte (what Postgres can hold and
//! index); a call naming another fails with [`FleetError::InvalidId`]
//! before it sends any statement. `scripts/postgres.sh` starts a server on
//! loopback for trying it out.
//!
//! # How a worker works
//!
//! - It registers in `workers`, with the name of its machine and a token
//!   new to this process, and beats every lease/3; agents are placed
//!   ([`Fleet::create`]) on the live worker of their machine with the most
//!   room (capacity less the agents placed on it), which is woken by a
//!   `NOTIFY`. A process that registers under an id already live takes
//!   the row, and the leases, over; the one before it finds its token gone
//!   at its next beat (its renewals and claims, which check the token,
//!   already fail), stops its agents and ends with
//!   [`FleetError::Replaced`], handing nothing back: two processes started
//!   under one id do not take agents from each other, lease after lease.
//! - It claims agents of its machine (workers of several machines may share
//!   a schema: each takes only the agents it can resume) up to its capacity
//!   with `SELECT .. FOR UPDATE SKIP LOCKED`, raising each lease's epoch:
//!   first those placed on it, then
//!   those nobody holds, then those whose lease expired. Each claimed agent
//!   is spawned from its checkpoint by [`Durable`](crate::store::Durable)
//!   on the store [`fenced`](crate::store::PgStore::fenced) with the
//!   worker's id and the new epoch. A checkpoint not read within half a
//!   lease (the database slow, or locked) is given up on as a failed
//!   resume, tried again a lease later, so that the renewals are never
//!   held up long enough for the leases of the agents it runs to lapse.
//! - It renews its leases every lease/3, from a thread and a connection
//!   of its own: its agents' step writes block the threads of the runtime
//!   they run on, and a burst of them across many agents may hold that
//!   runtime for longer than a lease. It renews them while that runtime
//!   shows signs of life (the worker's loop checked in, or an agent's store
//!   call returned, within the last lease): a runtime stuck for good lets
//!   them lapse. An agent whose renewal finds the
//!   lease gone (another worker claimed it) is stopped at once, as a crash
//!   would stop it, with no more effects; so is every agent when renewals
//!   have failed for a whole lease (a query unanswered for a lease, as on
//!   a connection the network cut off, counts as failed).
//! - It delivers each agent's inbox rows, in id order, to the agent's
//!   handle, woken by `LISTEN/NOTIFY` with a poll every
//!   [`Worker::poll`] as a backstop; nothing else sends to that handle.
//! - An agent's step writes block the thread it runs on (durability
//!   `BeforeAction`), so a write waits for a row lock (another session
//!   holding its agent's rows, such as a sender stopped mid-send) at most
//!   lease/3, then fails: that agent stops, and the worker's loop, which
//!   may share its thread, is not held up for longer.
//! - An agent that reaches its terminal state is marked done by the
//!   transaction that writes that step, which also refuses
//!   ([`Refusal::Finished`]) the events still in its inbox: a send that
//!   commits after it fails with [`FleetError::Finished`]. An agent that
//!   fails (a write the fence refused, a store error, a panic) is dropped
//!   and its lease left to expire, so that it is tried again, elsewhere or
//!   here, a lease later. A failure of the machine (a panic, or a row that
//!   left it poisoned) on an inbox event is counted against that event's
//!   row: after [`FleetConfig::event_attempts`] of them the event is
//!   refused ([`Refusal::Panicked`]), and the agent, resumed from its
//!   checkpoint, goes on with the events sent after it. One on an event of
//!   its own work (a task's result, a timer) is counted against the agent:
//!   after as many in a row at one step the agent is halted
//!   ([`AgentStatus::halted`], [`Halt`]), and no worker claims it until
//!   [`Fleet::revive`]; the other agents run on. A panic of the function
//!   a worker builds an agent's effects and configuration with fails that
//!   agent's start, not the worker, and is counted against the agent in
//!   the same way. An agent whose stored data does not read (a snapshot,
//!   a step of its log or its work in flight that is not what its machine
//!   writes, text that is not UTF-8, or whose reading panics) is halted at
//!   once ([`Halt::Unreadable`]), as is one whose step does not encode
//!   ([`Halt::Unencodable`]): resumed, it would fail the same way on every
//!   lease. An inbox event that is not UTF-8 (which a database of encoding
//!   `SQL_ASCII` stores) is refused as undecodable, and an agent whose id
//!   is not UTF-8, which would fail every claim that picks it, is halted.
//! - It reads an agent's inbox a page at a time (64 rows, or a mebibyte
//!   of events), the next page once the last is in the agent's mailbox: a
//!   backlog of any size is never read into memory whole.
//! - When the shutdown future completes, it stops its agents (a stop is a
//!   pause: see [`Durable`](crate::store::Durable); a configured shutdown
//!   event is delivered, its action performed and not written), hands their
//!   leases back and notifies the others, which claim them at once.
//!
//! # Guarantees
//!
//! - **One owner per epoch.** A lease is claimed by one worker at a time,
//!   each claim raising its epoch, and every write of the agent's steps
//!   carries the worker and epoch and is refused
//!   ([`StoreError::Fenced`]) unless the
//!   lease still says so. A worker paused past its lease (a `SIGSTOP`, a
//!   long GC-like stall, a network cut) and resumed can never write for an
//!   agent another worker has claimed since: its copy of the agent stops
//!   at its next write.
//! - **Each step once.** An agent resumes from its checkpoint on the worker
//!   that claims it; its event log has no gap and no duplicate.
//! - **The inbox exactly once, in order.** An event sent with
//!   [`Fleet::send`] is a row of the agent's inbox, committed before `send`
//!   returns; sends to one agent are serialized, so their ids are in the
//!   order sent. The owning worker delivers unapplied rows in id order, and
//!   the step that takes one marks it applied in the same transaction; rows
//!   delivered but not yet taken when the agent stopped or moved stay
//!   unapplied and are delivered again by the next owner. A row no step
//!   will apply is refused instead, and counted in
//!   [`AgentStatus::refused`]; [`Fleet::refused`] lists them (and
//!   [`Fleet::refused_page`] a page at a time) with the reason
//!   ([`Refusal`]): an event that does not decode (or whose
//!   decoding panics), one still
//!   waiting when the agent finished, one the machine failed on every time.
//!
//! # What is not guaranteed
//!
//! - **Effects are at least once.** A tool call whose result was not
//!   written before its worker died is performed again by the next owner
//!   (under the same key). A tool that must not act twice (a payment, an
//!   email) deduplicates by its key.
//! - **A send that failed may have been sent.** A [`Fleet::send`] whose
//!   connection is lost while its commit is on the way returns an error
//!   though the server may have committed the row; sending the event again
//!   then delivers it twice. An event that must not be applied twice
//!   carries an id of its own that the machine checks.
//! - **Hand-over takes a lease.** A worker that dies without a clean
//!   shutdown holds its agents until their leases expire (plus up to a
//!   third of a lease until another worker looks): the lease is the time
//!   to recovery. A clean shutdown hands them over at once.
//! - **Placement is a hint.** Two agents created at once may be placed on
//!   one worker by the same count; an agent its worker does not claim
//!   within a lease (the worker is full, say) is taken by any worker with
//!   room, and a worker takes any agent nobody holds once its own
//!   placements run.
//! - **Order across senders** is the order in which their sends committed.
//!   A machine with `#[during_work]` events takes such an event before the
//!   older input it holds back during work; the step marks the row of the
//!   event it took (the oldest unapplied row holding that event), so each
//!   row is still applied once.

mod config;
mod db;
mod error;
mod halt;
mod ids;
mod keeper;
mod refused;
mod running;
mod worker;

use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;
use tokio::sync::Mutex;
use tokio_postgres::Client;

use crate::StateMachine;
use crate::store::{CheckpointStore, PgConfig, PgStore, StoreError};

pub use config::FleetConfig;
pub use error::FleetError;
pub use ids::MAX_ID_BYTES;
pub use refused::{Halt, Refusal, Refused};
pub use worker::{Worker, WorkerReport};

/// An agent as the fleet knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentStatus {
    /// The name of its state at its last written step.
    pub state: String,
    /// How many steps it has written.
    pub steps: u64,
    /// Whether it reached its terminal state.
    pub done: bool,
    /// The worker holding its lease, if one does.
    pub worker: Option<String>,
    /// The worker it is placed on (the last that claimed it), if any.
    pub assigned: Option<String>,
    /// Its lease's epoch: how many times it was claimed.
    pub epoch: u64,
    /// Events sent to it and not yet applied.
    pub unapplied: u64,
    /// Events sent to it that no step will apply ([`Fleet::refused`] says
    /// which, and why).
    pub refused: u64,
    /// Why no worker runs it any more, though it has not finished (its
    /// machine failed on its own work every time); [`Fleet::revive`] lets
    /// it run again.
    pub halted: Option<Halt>,
}

/// A handle on a fleet: creates agents, sends them events, reads their
/// status. Cloning it shares its connections.
#[derive(Debug, Clone)]
pub struct Fleet {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: FleetConfig,
    target: db::Target,
    store: PgStore,
    /// The fleet's own connection, behind an async mutex because a send's
    /// transaction holds it across awaits; `None` until connected, or after
    /// it closed (opened again by the next call).
    client: Mutex<Option<Client>>,
}

impl Fleet {
    /// Connects to the fleet's database, creating its tables if absent.
    ///
    /// # Errors
    /// [`FleetError::Connect`] when the server cannot be reached,
    /// [`FleetError::Store`] when the checkpoint store cannot be opened.
    pub async fn connect(config: FleetConfig) -> Result<Self, FleetError> {
        let target = db::Target::new(&config.url, &config.schema, config.idle_in_transaction_timeout)?;
        // The fleet's own connection first: a server that cannot be reached
        // is `Connect`, as documented, not the store's read error.
        let client = target.connect(None).await?;
        let pg = PgConfig::new(config.url.clone())
            .schema(config.schema.clone())
            .pool_size(config.pool_size)
            .idle_in_transaction_timeout(config.idle_in_transaction_timeout)
            // A step write blocks its runtime thread (durability
            // `BeforeAction`): one stuck on a lock for longer would hold
            // up the renewal of every lease of its worker.
            .lock_timeout(config.lease / 3);
        // The store's connections block (on threads of their own).
        let store = blocking(move || PgStore::connect_with(pg)).await??;
        Ok(Self { inner: Arc::new(Inner { config, target, store, client: Mutex::new(Some(client)) }) })
    }

    /// How the fleet connected.
    #[must_use]
    pub fn config(&self) -> &FleetConfig {
        &self.inner.config
    }

    /// The checkpoint store holding the agents (unfenced: for reads, such
    /// as [`restore`](crate::store::restore) or the event log).
    #[must_use]
    pub fn store(&self) -> &PgStore {
        &self.inner.store
    }

    pub(crate) fn target(&self) -> &db::Target {
        &self.inner.target
    }

    /// Adds agent `agent` as `machine` (its checkpoint 0), placed on the
    /// live worker of its machine with the most room, which is woken to
    /// claim it. Returns that worker, `None` if no worker of its machine is
    /// live (the first of them to claim takes it). Only a worker running
    /// the same machine (by [`name`](crate::Description::name))
    /// ever claims it.
    ///
    /// The checkpoint and the lease are two writes: a create cut off between
    /// them is completed by calling it again with the same machine. The
    /// lease and the workers' wake-up are one statement: an error after
    /// the lease was written is one whose reply was lost (the connection
    /// cut), and calling again then says [`FleetError::AgentExists`].
    ///
    /// # Errors
    /// [`FleetError::InvalidId`], [`FleetError::AgentExists`] (the agent has
    /// a lease already, or the store holds it as another machine),
    /// [`FleetError::Store`] if the machine does not serialize or the store
    /// refuses it, or a database error.
    pub async fn create<M>(&self, agent: &str, machine: &M) -> Result<Option<String>, FleetError>
    where
        M: StateMachine,
        M::State: Serialize,
        M::Context: Serialize,
    {
        ids::check(agent)?;
        let snapshot = crate::store::journal::snapshot_of(machine)?;
        let store = self.inner.store.clone();
        let id = agent.to_owned();
        let created = blocking(move || store.create(&id, M::DESCRIPTION.name, SystemTime::now(), &snapshot)).await?;
        match created {
            Ok(()) => {}
            // A create cut off before its lease is completed; an agent of
            // another machine (or of none: written outside the fleet) is
            // not adopted, as no worker could resume it as this one.
            Err(StoreError::AgentExists(_)) => {
                let store = self.inner.store.clone();
                let id = agent.to_owned();
                let info = blocking(move || store.agent(&id)).await??;
                if info.is_none_or(|info| info.machine != M::DESCRIPTION.name) {
                    return Err(FleetError::AgentExists(agent.to_owned()));
                }
            }
            Err(error) => return Err(error.into()),
        }
        let mut guard = self.client().await?;
        let client = guard.as_mut().ok_or_else(closed)?;
        let heartbeat = db::millis(self.inner.config.lease);
        let channel = self.inner.target.channel();
        let machine = M::DESCRIPTION.name;
        let placed = client
            .query_opt(db::PLACE, &[&agent, &heartbeat, &channel, &db::CLAIM, &machine])
            .await
            .map_err(FleetError::db)?;
        let Some(row) = placed else {
            return Err(FleetError::AgentExists(agent.to_owned()));
        };
        let worker: Option<String> = row.try_get(0).map_err(FleetError::db)?;
        tracing::debug!(agent, worker = worker.as_deref(), "agent created");
        Ok(worker)
    }

    /// Sends `event` to agent `agent`: a row of its durable inbox, committed
    /// when this returns, delivered exactly once, after the events sent to
    /// it before, by whichever worker owns it. Returns the row's id.
    ///
    /// `event` may be any value that serializes to what the machine's event
    /// reads from (the event itself, or a `serde_json::Value`); the worker
    /// rewrites the row as the machine writes the event before delivering
    /// it, and refuses (marks applied by no step) a row that does not read
    /// as one. An event sent before the step that finished the agent
    /// committed but not taken by it is refused too ([`Refusal::Finished`]);
    /// once that step committed, the send fails with
    /// [`FleetError::Finished`].
    ///
    /// # Errors
    /// [`FleetError::InvalidId`], [`FleetError::UnknownAgent`],
    /// [`FleetError::Finished`] for an agent that reached its terminal
    /// state, [`FleetError::Encode`], or a
    /// database error ([`FleetError::Connect`] while the server cannot be
    /// reached). A database error from the commit itself leaves the row
    /// perhaps written (see the [module docs](self)).
    pub async fn send<E: Serialize + ?Sized>(&self, agent: &str, event: &E) -> Result<u64, FleetError> {
        ids::check(agent)?;
        let text = crate::finite::to_string(event).map_err(FleetError::Encode)?;
        let mut guard = self.client().await?;
        let client = guard.as_mut().ok_or_else(closed)?;
        let tx = client.transaction().await.map_err(FleetError::db)?;
        // Sends to one agent take turns: a row's id is drawn after the one
        // before it committed, so ids are in commit order and a worker
        // reading past the last id it delivered misses none.
        tx.execute("SELECT pg_advisory_xact_lock(hashtext('agent_fsm inbox ' || $1))", &[&agent])
            .await
            .map_err(FleetError::db)?;
        let lease =
            tx.query_opt("SELECT done FROM leases WHERE agent = $1", &[&agent]).await.map_err(FleetError::db)?;
        match lease.map(|row| row.try_get::<_, bool>(0)).transpose().map_err(FleetError::db)? {
            None => return Err(FleetError::UnknownAgent(agent.to_owned())),
            Some(true) => return Err(FleetError::Finished(agent.to_owned())),
            Some(false) => {}
        }
        let row = tx
            .query_one("INSERT INTO inbox (agent, event) VALUES ($1, $2) RETURNING id", &[&agent, &text])
            .await
            .map_err(FleetError::db)?;
        let id: i64 = row.try_get(0).map_err(FleetError::db)?;
        let mut payload = format!("{}{agent}", db::INBOX);
        // An id too long for a payload (Postgres refuses one of 8000 bytes,
        // failing the send) wakes every feeder instead. Ids are capped well
        // under that: this is a guard should the cap ever be raised.
        if payload.len() >= db::MAX_PAYLOAD {
            payload = db::INBOX_ANY.to_owned();
        }
        tx.execute(db::NOTIFY, &[&self.inner.target.channel(), &payload]).await.map_err(FleetError::db)?;
        tx.commit().await.map_err(FleetError::db)?;
        Ok(db::unsigned(id))
    }

    /// Agent `agent`'s state, steps, owner and inbox.
    ///
    /// # Errors
    /// [`FleetError::InvalidId`], [`FleetError::UnknownAgent`],
    /// [`FleetError::Store`] with [`StoreError::Corrupt`] when the agent's row counts no step 0 (a
    /// row written by hand), or a database error.
    pub async fn status(&self, agent: &str) -> Result<AgentStatus, FleetError> {
        ids::check(agent)?;
        let mut guard = self.client().await?;
        let client = guard.as_mut().ok_or_else(closed)?;
        let row = client.query_opt(db::STATUS, &[&agent]).await.map_err(FleetError::db)?;
        let row = row.ok_or_else(|| FleetError::UnknownAgent(agent.to_owned()))?;
        let next: i64 = row.try_get(0).map_err(FleetError::db)?;
        // The store counts from 1; a row that says less (written outside
        // the store) is refused, not read as a step count that wrapped.
        let steps = next
            .checked_sub(1)
            .and_then(|steps| u64::try_from(steps).ok())
            .ok_or_else(|| StoreError::corrupt(agent, "agent", 0, format!("next step {next}")))?;
        let done: Option<bool> = row.try_get(1).map_err(FleetError::db)?;
        let epoch: Option<i64> = row.try_get(3).map_err(FleetError::db)?;
        let unapplied: i64 = row.try_get(5).map_err(FleetError::db)?;
        let refused: i64 = row.try_get(7).map_err(FleetError::db)?;
        let halted: Option<bool> = row.try_get(8).map_err(FleetError::db)?;
        let halted = if halted == Some(true) {
            let attempts: i32 = row.try_get(9).map_err(FleetError::db)?;
            let message: Option<String> = row.try_get(10).map_err(FleetError::db)?;
            let kind: Option<String> = row.try_get(11).map_err(FleetError::db)?;
            Some(Halt::from_row(kind.as_deref(), attempts, message))
        } else {
            None
        };
        Ok(AgentStatus {
            state: row.try_get(4).map_err(FleetError::db)?,
            steps,
            done: done.unwrap_or(false),
            worker: row.try_get(2).map_err(FleetError::db)?,
            assigned: row.try_get(6).map_err(FleetError::db)?,
            epoch: db::unsigned(epoch.unwrap_or(0)),
            unapplied: db::unsigned(unapplied),
            refused: db::unsigned(refused),
            halted,
        })
    }

    /// The fleet's agents that have not reached their terminal state, sorted.
    ///
    /// # Errors
    /// A database error.
    pub async fn unfinished(&self) -> Result<Vec<String>, FleetError> {
        let mut guard = self.client().await?;
        let client = guard.as_mut().ok_or_else(closed)?;
        let rows = client
            .query("SELECT agent FROM leases WHERE NOT done ORDER BY agent", &[])
            .await
            .map_err(FleetError::db)?;
        rows.iter().map(|row| row.try_get(0).map_err(FleetError::db)).collect()
    }

    /// The fleet's connection, opened again if it closed.
    async fn client(&self) -> Result<tokio::sync::MutexGuard<'_, Option<Client>>, FleetError> {
        let mut guard = self.inner.client.lock().await;
        if guard.as_ref().is_none_or(Client::is_closed) {
            *guard = Some(self.inner.target.connect(None).await?);
        }
        Ok(guard)
    }
}

fn closed() -> FleetError {
    FleetError::Connect("the connection closed".into())
}

/// Runs `job`, which blocks (the checkpoint store's calls), off the async
/// threads.
pub(crate) async fn blocking<R: Send + 'static>(job: impl FnOnce() -> R + Send + 'static) -> Result<R, FleetError> {
    tokio::task::spawn_blocking(job).await.map_err(|e| FleetError::Database(Box::new(e)))
}

/// What `CheckpointStore` a worker's agents write through: fenced, and
/// each call that returns a sign of life for the worker's lease keeper.
/// Its step that reaches one of `M`'s terminal states marks the lease done.
pub(crate) fn fenced<M: StateMachine>(
    fleet: &Fleet,
    worker: &str,
    epoch: u64,
    pulse: keeper::Pulse,
) -> Arc<dyn CheckpointStore> {
    let terminal = M::DESCRIPTION.states.iter().filter(|state| state.terminal).map(|state| state.name).collect();
    Arc::new(keeper::Stamped { store: Arc::new(fleet.inner.store.fenced_terminal(worker, epoch, terminal)), pulse })
}
