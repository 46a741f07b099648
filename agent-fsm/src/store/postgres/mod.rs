//! [`PgStore`]: the checkpoint store on a Postgres server, for agents that
//! outlive one process or one machine, and the store a fleet of worker
//! processes shares.
//!
//! # What it stores
//!
//! The same rows as the SQLite store, in tables of one Postgres schema
//! (`agent_fsm` unless [`PgConfig::schema`] names another): `agents` (id,
//! machine, format, next sequence number, fork origin, creation time),
//! `events` (agent, seq, time, state name, event JSON, origin, and the
//! fence the write carried), `snapshots` and `effects`. The schema also
//! holds the tables of a fleet of workers: `leases` (which worker runs an
//! agent, under which epoch, until when), `inbox` (events sent to an agent
//! from any process, and the step that applied each) and `workers`. The
//! first [`PgStore::connect`] creates them all when absent, in one
//! transaction under an advisory lock, so that processes starting at once
//! do not race; the schema's version is kept in its `meta` table, and a
//! newer one is refused with [`StoreError::UnknownFormat`]. Reading an
//! agent checks that its row, its log and its snapshot and effect rows
//! agree on its last step, as the SQLite store does: a log that lost its
//! last steps is [`StoreError::Corrupt`], not an agent that is behind.
//! An agent id may be any text but one with a NUL byte, which Postgres text
//! cannot hold: the store holds no such agent, and refuses to add one with
//! [`StoreError::Write`].
//!
//! Every method is one transaction. Appending takes a row lock on the
//! agent's row, so two writers of one agent are serialized and the second
//! gets [`StoreError::Conflict`]; `append_all` writes its steps in one
//! transaction, all or none.
//!
//! # Fencing
//!
//! [`PgStore::fenced`] gives a store whose every write (create, append,
//! finish) first locks the agent's lease row, shared, in the same
//! transaction, and is refused with [`StoreError::Fenced`] unless the
//! lease is held by that worker at that epoch. A worker that claims an
//! agent raises the epoch (an update, which waits for the writes in
//! flight), so a worker that lost its lease (paused past its expiry, cut
//! off from the network) can never write for that agent again. The event
//! rows a fenced store writes carry its worker and epoch; an unfenced store
//! writes NULL there and checks nothing.
//!
//! A fenced store also consumes the agent's inbox: a step whose
//! [`StepRecord::origin`] is `"input"` (an event from the agent's mailbox,
//! which in a fleet only the inbox feeds, in id order) marks the agent's
//! oldest unapplied inbox row as applied at that step, in the step's
//! transaction. The k-th mailbox step takes the k-th row; a row still in
//! the mailbox when the worker stops stays unapplied, to be sent again.
//!
//! # Connections and threads
//!
//! The store keeps a small pool of connections ([`PgConfig::pool_size`],
//! 4 by default), each on a thread of its own; a call hands its work to a
//! free connection thread and blocks until it is done. The `postgres`
//! client drives its connection on a tokio runtime of its own, and panics
//! when called from inside another tokio runtime, which is where a durable
//! agent writes its steps: on the pool's threads it never is. Clones of a
//! store (and [`fenced`](PgStore::fenced) stores) share the pool; its
//! threads end when the last of them is dropped. A connection that broke
//! is opened again on its next call; one the server closed while it sat
//! idle (a restart, say) is seen closed before that call uses it, so the
//! call does not fail for it: a connection idle for 50 ms or more is asked
//! first with an empty query (one round trip; one used in the last 50 ms is
//! taken to be open). Opening a
//! connection, the server's answer included, is given up after the URL's
//! `connect_timeout` (10 seconds when it sets none): a call that must
//! connect while the server is away or does not answer fails with
//! [`StoreError::Read`] by then.
//!
//! A process stopped in the middle of a write (paused, frozen, cut off
//! from the network) would hold that write's row locks for as long as its
//! session lives, and every other writer of the agent (a worker that took
//! its lease over, say) would wait on them. Each connection therefore asks
//! the server to end it when it sits idle inside a transaction for
//! [`PgConfig::idle_in_transaction_timeout`] (10 seconds by default): the
//! transaction rolls back, its locks go, and the stopped process finds its
//! connection closed when it wakes (the write fails; nothing half-written
//! stays).
//!
//! The other side of that: a process cut off from the server by the
//! network, with no reset reaching it, waits in its call for as long as
//! TCP keeps retrying (many minutes on Linux), and under
//! [`Durability::BeforeAction`](crate::store::Durability::BeforeAction)
//! its agent waits with it. Its writes stay safe (a fenced write is
//! refused once the lease moved on), but to bound the wait, set
//! `tcp_user_timeout` in the URL (`?tcp_user_timeout=30`, in seconds): once
//! data sent has gone unacknowledged that long, the connection is closed
//! and the call fails.
//!
//! ```no_run
//! use agent_fsm::store::{CheckpointStore, PgConfig, PgStore};
//! let store = PgStore::connect_with(
//!     PgConfig::new("postgres://agent_fsm@127.0.0.1:54329/agent_fsm").schema("agents").pool_size(8),
//! )?;
//! println!("{:?}", store.agents()?);
//! # Ok::<(), agent_fsm::store::StoreError>(())
//! ```

pub(crate) mod pool;
mod read;
mod schema;
pub(crate) mod write;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use postgres::Client;
use postgres::types::FromSql;

use self::pool::{Pool, Statements};
use super::{
    AgentInfo, Checkpoint, CheckpointStore, EffectKind, EventRecord, InFlight, Snapshot, StepRecord, StoreError,
};

/// How a [`PgStore`] connects.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PgConfig {
    /// The server's URL (`postgres://user:password@host:port/database`,
    /// or the `key=value` form).
    pub url: String,
    /// The Postgres schema holding the tables, created if absent: at most
    /// 63 bytes, the longest name Postgres keeps whole.
    pub schema: String,
    /// How many connections (and threads) the store keeps.
    pub pool_size: usize,
    /// Whether a commit waits for the server's write-ahead log to reach
    /// the disk (Postgres's `synchronous_commit`), the default. Off, a
    /// step is committed sooner and may be lost if the server crashes
    /// right after (never half of one): as SQLite's `synchronous=NORMAL`.
    pub synchronous_commit: bool,
    /// How long the server lets one of the store's connections sit idle in
    /// the middle of a transaction before it ends the session (Postgres's
    /// `idle_in_transaction_session_timeout`), 10 seconds by default; zero
    /// leaves the server's setting. The store's transactions never wait on
    /// anything but the server, so only a client that stopped mid-write (a
    /// process paused or frozen, a machine cut off) is ever idle there: the
    /// timeout releases the row locks it holds, which would otherwise keep
    /// every other writer of that agent waiting for as long as the stopped
    /// process lives.
    pub idle_in_transaction_timeout: Duration,
    /// How long one of the store's statements may wait for a row lock
    /// before it fails (Postgres's `lock_timeout`); zero, the default,
    /// leaves the server's setting (by default, waiting as long as the
    /// lock is held). A step write waits on a lock only while another
    /// transaction holds its agent's rows: a second writer of the agent,
    /// or a sender stopped in the middle of a send (until the idle timeout
    /// above ends it). Under [`Durability::BeforeAction`](crate::store::Durability::BeforeAction)
    /// the write blocks its runtime thread meanwhile; bounded, the write
    /// fails with [`StoreError::Write`] instead, and only its agent stops.
    /// A [fleet](crate::fleet) sets it to a third of its lease, so that no
    /// write holds up the renewal of the worker's leases.
    pub lock_timeout: Duration,
}

/// [`PgConfig::idle_in_transaction_timeout`]'s default.
pub(crate) const IDLE_IN_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(10);

/// The statement that sets Postgres's `idle_in_transaction_session_timeout`
/// to `timeout` for one session; `None` for zero (the server's setting).
pub(crate) fn idle_in_transaction_setting(timeout: Duration) -> Option<String> {
    let millis = timeout.as_millis();
    // The setting is an `int` of milliseconds; a sub-millisecond timeout
    // is one millisecond, not zero (which would turn it off).
    (!timeout.is_zero())
        .then(|| format!("SET idle_in_transaction_session_timeout TO {}", millis.clamp(1, i32::MAX as u128)))
}

impl PgConfig {
    /// The server at `url`, schema `agent_fsm`, 4 connections, commits
    /// waiting for the disk, a connection idle in a transaction ended
    /// after 10 seconds, the server's lock timeout.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: "agent_fsm".to_owned(),
            pool_size: 4,
            synchronous_commit: true,
            idle_in_transaction_timeout: IDLE_IN_TRANSACTION_TIMEOUT,
            lock_timeout: Duration::ZERO,
        }
    }

    /// This configuration with the tables in schema `schema`.
    #[must_use]
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// This configuration with commits waiting for the disk, or not.
    #[must_use]
    pub fn synchronous_commit(mut self, on: bool) -> Self {
        self.synchronous_commit = on;
        self
    }

    /// This configuration with `size` connections (at least one).
    #[must_use]
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// This configuration with the server ending a connection left idle
    /// in a transaction for `timeout` (zero: the server's setting); see
    /// [`idle_in_transaction_timeout`](Self#structfield.idle_in_transaction_timeout).
    #[must_use]
    pub fn idle_in_transaction_timeout(mut self, timeout: Duration) -> Self {
        self.idle_in_transaction_timeout = timeout;
        self
    }

    /// This configuration with a statement that waits `timeout` for a row
    /// lock failing (zero: the server's setting); see
    /// [`lock_timeout`](Self#structfield.lock_timeout).
    #[must_use]
    pub fn lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }
}

/// The worker and epoch a fenced store writes under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fence {
    pub(crate) worker: String,
    pub(crate) epoch: u64,
    /// The machine's terminal states, for a fleet's agent: the step that
    /// reaches one marks the lease done in its own transaction.
    pub(crate) terminal: Vec<&'static str>,
}

/// A checkpoint store on a Postgres server. Cloning it shares its
/// connections.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: Arc<Pool>,
    config: Arc<PgConfig>,
    fence: Option<Arc<Fence>>,
}

impl PgStore {
    /// Connects to the server at `url`, with the tables in schema
    /// `agent_fsm`, created if absent.
    ///
    /// # Errors
    /// [`StoreError::Read`] if the URL does not parse, the schema's name is
    /// longer than Postgres keeps (63 bytes) or the server cannot be
    /// reached, [`StoreError::UnknownFormat`] for a schema a newer
    /// release wrote, [`StoreError::Write`] if the tables cannot be created.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(PgConfig::new(url))
    }

    /// Connects as `config` says.
    ///
    /// # Errors
    /// As [`connect`](Self::connect).
    pub fn connect_with(config: PgConfig) -> Result<Self, StoreError> {
        let mut pg: postgres::Config = config.url.parse().map_err(|e| StoreError::Read(Box::new(e)))?;
        // Postgres cuts a longer name to its first 63 bytes: two
        // configurations naming different schemas would share one, each
        // taking its own migration lock and notifying its own channel.
        if config.schema.len() > MAX_SCHEMA_LEN {
            let why = format!("the schema name `{}` is longer than {MAX_SCHEMA_LEN} bytes", config.schema);
            return Err(StoreError::Read(why.into()));
        }
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(pool::CONNECT_TIMEOUT);
        }
        if pg.get_application_name().is_none() {
            pg.application_name("agent-fsm");
        }
        // Every statement names its tables unqualified: the schema is each
        // connection's search path.
        let mut setup = format!("SET search_path TO {}", quote_ident(&config.schema));
        if !config.synchronous_commit {
            setup.push_str("; SET synchronous_commit TO off");
        }
        if let Some(set) = idle_in_transaction_setting(config.idle_in_transaction_timeout) {
            setup.push_str("; ");
            setup.push_str(&set);
        }
        if !config.lock_timeout.is_zero() {
            // An `int` of milliseconds, as above: never rounded down to 0.
            let millis = config.lock_timeout.as_millis().clamp(1, i32::MAX as u128);
            setup.push_str(&format!("; SET lock_timeout TO {millis}"));
        }
        let pool = Pool::start(pg, &setup, config.pool_size)?;
        let schema = config.schema.clone();
        pool.run(move |client, _| schema::migrate(client, &schema))?;
        Ok(Self { pool: Arc::new(pool), config: Arc::new(config), fence: None })
    }

    /// This store, fenced for `worker` holding the agent's lease at
    /// `epoch`: each write checks the lease in its transaction and is
    /// refused with [`StoreError::Fenced`] when it has moved on (see the
    /// module docs). Shares this store's connections.
    #[must_use]
    pub fn fenced(&self, worker: &str, epoch: u64) -> Self {
        self.fenced_until(worker, epoch, Vec::new())
    }

    /// [`fenced`](Self::fenced), for a fleet's agent whose terminal states
    /// are `terminal`: the step that reaches one marks the agent's lease
    /// done in the same transaction, and refuses what is still in its inbox,
    /// so that no send is accepted for it after that step (see
    /// [`Fleet::send`](crate::fleet::Fleet::send)).
    #[cfg(feature = "fleet")]
    pub(crate) fn fenced_terminal(&self, worker: &str, epoch: u64, terminal: Vec<&'static str>) -> Self {
        self.fenced_until(worker, epoch, terminal)
    }

    fn fenced_until(&self, worker: &str, epoch: u64, terminal: Vec<&'static str>) -> Self {
        let fence = Fence { worker: worker.to_owned(), epoch, terminal };
        Self { pool: Arc::clone(&self.pool), config: Arc::clone(&self.config), fence: Some(Arc::new(fence)) }
    }

    /// The worker and epoch this store is fenced for, `None` if it is not.
    #[must_use]
    pub fn fence(&self) -> Option<(&str, u64)> {
        self.fence.as_deref().map(|f| (f.worker.as_str(), f.epoch))
    }

    /// How the store connected.
    #[must_use]
    pub fn config(&self) -> &PgConfig {
        &self.config
    }

    /// Runs `job` on one of the store's connection threads (its search path
    /// set to the store's schema, its prepared statements at hand) and
    /// waits for it. Each call is its own unit of work: open a transaction
    /// on the client for several statements.
    ///
    /// # Errors
    /// The job's error, or [`StoreError::Read`] when no connection can be
    /// opened.
    pub(crate) fn run<R, F>(&self, job: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Client, &mut Statements) -> Result<R, StoreError> + Send + 'static,
    {
        self.pool.run(job)
    }

    /// The fence as the writes take it.
    fn fence_owned(&self) -> Option<Arc<Fence>> {
        self.fence.clone()
    }
}

/// The longest name Postgres keeps whole (its `NAMEDATALEN` less one).
const MAX_SCHEMA_LEN: usize = 63;

/// `name` as a quoted SQL identifier.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A sequence number as a `bigint` (the largest one past it).
pub(crate) fn seq_to_sql(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// The latest time a store writes: the year 100,000, well inside
/// Postgres's range (a deadline of `Duration::MAX` is clamped to it).
const MAX_MILLIS: u64 = 3_093_527_980_800_000;

/// `at` as the store keeps it: whole milliseconds, as SQLite keeps times,
/// from the Unix epoch (earlier times are the epoch) to [`MAX_MILLIS`].
pub(crate) fn to_pg_time(at: SystemTime) -> SystemTime {
    let millis = at.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    UNIX_EPOCH + Duration::from_millis(millis.min(MAX_MILLIS))
}

/// Column `i` of `row`, or a read error naming the column when it does
/// not hold what the schema says (a table altered by hand).
pub(crate) fn get<'a, T: FromSql<'a>>(row: &'a postgres::Row, i: usize) -> Result<T, StoreError> {
    row.try_get(i).map_err(|e| StoreError::Read(Box::new(e)))
}

/// Whether Postgres text can hold the agent id `agent`: not with a NUL
/// byte (which SQLite and memory keep). An id it cannot hold is no
/// agent's here, rather than a query the server refuses, which would read
/// as the server failing.
fn storable(agent: &str) -> Result<(), StoreError> {
    if agent.contains('\0') {
        return Err(StoreError::UnknownAgent(agent.to_owned()));
    }
    Ok(())
}

/// The error of adding agent `agent`, whose id Postgres cannot hold.
fn unstorable(agent: &str) -> StoreError {
    StoreError::Write(format!("agent id {agent:?} holds a NUL byte, which Postgres text cannot store").into())
}

impl CheckpointStore for PgStore {
    fn create(&self, agent: &str, machine: &str, at: SystemTime, initial: &Snapshot) -> Result<(), StoreError> {
        storable(agent).map_err(|_| unstorable(agent))?;
        let (agent, machine, initial, fence) =
            (agent.to_owned(), machine.to_owned(), initial.clone(), self.fence_owned());
        self.run(move |client, statements| {
            write::create(client, statements, fence.as_deref(), &agent, &machine, at, &initial)
        })
    }

    fn agent(&self, agent: &str) -> Result<Option<AgentInfo>, StoreError> {
        if storable(agent).is_err() {
            return Ok(None);
        }
        let agent = agent.to_owned();
        self.run(move |client, statements| read::agent(client, statements, &agent))
    }

    fn agents(&self) -> Result<Vec<String>, StoreError> {
        self.run(read::agents)
    }

    fn append(&self, agent: &str, step: &StepRecord) -> Result<(), StoreError> {
        self.append_all(agent, std::slice::from_ref(step))
    }

    /// One transaction for all the steps, rather than one per step.
    fn append_all(&self, agent: &str, steps: &[StepRecord]) -> Result<(), StoreError> {
        storable(agent)?;
        let (agent, steps, fence) = (agent.to_owned(), steps.to_vec(), self.fence_owned());
        self.run(move |client, statements| write::append_all(client, statements, fence.as_deref(), &agent, &steps))
    }

    fn finish(&self, agent: &str, finished: &[(EffectKind, String)]) -> Result<(), StoreError> {
        storable(agent)?;
        let (agent, finished, fence) = (agent.to_owned(), finished.to_vec(), self.fence_owned());
        self.run(move |client, statements| write::finish(client, statements, fence.as_deref(), &agent, &finished))
    }

    fn snapshot_at_or_before(&self, agent: &str, seq: u64) -> Result<Option<(u64, Snapshot)>, StoreError> {
        storable(agent)?;
        let agent = agent.to_owned();
        self.run(move |client, statements| read::snapshot_at_or_before(client, statements, &agent, seq))
    }

    fn events(&self, agent: &str, after: u64, through: u64) -> Result<Vec<EventRecord>, StoreError> {
        storable(agent)?;
        let agent = agent.to_owned();
        self.run(move |client, statements| read::events(client, statements, &agent, after, through))
    }

    fn in_flight(&self, agent: &str, seq: u64) -> Result<Vec<InFlight>, StoreError> {
        storable(agent)?;
        let agent = agent.to_owned();
        self.run(move |client, statements| read::in_flight(client, statements, &agent, seq))
    }

    fn checkpoints(&self, agent: &str) -> Result<Vec<Checkpoint>, StoreError> {
        storable(agent)?;
        let agent = agent.to_owned();
        self.run(move |client, statements| read::checkpoints(client, statements, &agent))
    }

    /// Not fenced: a fork is a new agent, which no lease covers yet.
    fn fork(&self, source: &str, seq: u64, new: &str) -> Result<(), StoreError> {
        storable(source)?;
        storable(new).map_err(|_| unstorable(new))?;
        let (source, new) = (source.to_owned(), new.to_owned());
        self.run(move |client, statements| write::fork(client, statements, &source, seq, &new))
    }
}

#[cfg(test)]
mod tests;
