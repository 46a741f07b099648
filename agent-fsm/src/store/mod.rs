//! Checkpoint stores: an agent's event log, snapshots and effect work in
//! flight, kept under an agent id the user chooses, so that the agent can
//! be rebuilt after its process is gone, inspected at any earlier step,
//! and forked.
//!
//! ```
//! use agent_fsm::store::{Journal, MemoryStore, StoreError, restore};
//!
//! #[agent_fsm::state_machine(fallback = Nothing, serde, name = Tally)]
//! mod tally {
//!     #[states]
//!     #[derive(Debug, PartialEq)]
//!     pub enum State {
//!         #[initial]
//!         Counting { n: u32 },
//!     }
//!     #[events]
//!     #[derive(Debug)]
//!     pub enum Event { Add(u32) }
//!     #[actions]
//!     #[derive(Debug)]
//!     pub enum Action { Nothing }
//!     transitions! {
//!         Counting { n } + Add(k) => Counting { n: n + k } / Nothing,
//!     }
//! }
//! use tally::{Event, State, Tally};
//!
//! let store = MemoryStore::new(); // or `SqliteStore::open("agents.db")?` (feature `sqlite`)
//! let mut machine = Tally::new(0);
//! let mut journal = Journal::create(&store, "user-42", &machine)?;
//! for k in [1, 2, 3] {
//!     let event = Event::Add(k);
//!     let step = journal.begin(&event)?; // the event, serialized before the machine takes it
//!     machine.handle_event(event);
//!     journal.commit(&store, step, &machine)?;
//! }
//!
//! // After a restart: the newest snapshot, and the events after it replayed.
//! let again = restore::<Tally, _>(&store, "user-42")?;
//! assert_eq!(again.machine.state(), &State::Counting { n: 6 });
//! # Ok::<(), StoreError>(())
//! ```
//!
//! # What is stored
//!
//! A machine's [`handle_event`](crate::StateMachine::handle_event) is
//! synchronous and deterministic, so the events it took are enough to
//! rebuild it (event sourcing). Per agent a store keeps:
//!
//! - the **event log**: every event, serialized with serde (the form the
//!   macro's `serde` flag derives), under gapless sequence numbers from 1,
//!   each with its time and the name of the state it led to;
//! - **snapshots** (the [`snapshot`](crate::snapshot) JSON: state and
//!   context) taken now and then, sequence number 0 being the machine the
//!   agent started as. A snapshot at `n` is the machine after event `n`;
//!   [`restore`] starts from the newest one and replays the events after
//!   it. [`SnapshotPolicy::Proportional`], the default, takes one when the
//!   events logged since the last one outweigh it, so the bytes written
//!   per step stay about three times the event's own size however long
//!   the conversation grows (never the whole conversation per step), and
//!   a replay reads no more event bytes than one snapshot holds;
//! - the **effect work in flight**: keyed tasks and streams by key, timers
//!   with their absolute deadline and the event they deliver. A row is
//!   recorded by the step whose action started the work and marked
//!   finished by the step that appends its result event (kept, not
//!   deleted, so that time travel sees what was in flight at any step);
//! - the agent's **machine name** (`name = ..` in the attribute, as in
//!   snapshots) and the **format version** ([`FORMAT_VERSION`]) of what it
//!   wrote.
//!
//! Appending a step ([`CheckpointStore::append`]) is one transaction: the
//! event, its sequence number (which must be the agent's next one, else
//! [`StoreError::Conflict`]), the effect rows it starts and finishes, and
//! optionally a snapshot. A write that fails leaves the store as it was.
//!
//! # Reading it back
//!
//! - [`restore`]: the machine at the agent's last step, its work in flight
//!   and a [`Journal`] to continue appending.
//! - [`restore_at`]: the machine at any earlier step (time travel);
//!   [`CheckpointStore::checkpoints`] lists the steps with their time and
//!   state name.
//! - [`CheckpointStore::fork`]: a new agent whose log is the source's up to
//!   a step; both then continue independently in one store.
//!
//! # Format versions
//!
//! Every snapshot row carries the format version it was written in, and the
//! SQLite file its schema version. Version 1 is the only one today; a
//! release that changes the format reads the older versions it knows (a
//! `match` on the version where rows are decoded) and refuses newer ones
//! with [`StoreError::UnknownFormat`] rather than misreading them.
//!
//! # Durable agents
//!
//! [`Durable`] runs a machine on the runtime with its steps written here
//! (its docs give the contract). How the worker uses the interface:
//!
//! 1. **A new agent**: [`Journal::create`] with the initial machine
//!    (checkpoint 0).
//! 2. **An agent the store holds**: [`restore`] checks that the log after
//!    its newest snapshot replays to the states it recorded; the worker
//!    then starts from the snapshot before the oldest step whose task or
//!    stream is still in flight and replays the events after it (checked
//!    the same way, gapless and reaching each recorded state, before any
//!    action is performed again), performing again the actions
//!    of those steps with only their work in flight starting (a stream
//!    skipping the items its [`StepRecord::origin`] says the machine took).
//!    Timers are armed for the time left to their deadline (at most the
//!    delay between their step's time and their deadline, should the
//!    clock have been set back), and sends queued, from their rows.
//! 3. **Each event**: [`Journal::begin`] before `handle_event` consumes it;
//!    after the action is performed, one row per piece of work it started
//!    (key `"{step}.{rank}"`: the step, and the work's rank among what the
//!    action started, so that performing the action again names the same
//!    work) and a finish for each piece that ended since the last step;
//!    then the commit. [`Durability::BeforeAction`] commits on the worker's
//!    thread before the step's tasks start (SQLite with `synchronous=FULL`
//!    syncs the disk there: a durable agent holds a runtime thread for a
//!    disk sync per step); [`Durability::WhileAction`] hands the record to
//!    a writer thread; [`Durability::OnStop`] keeps it until the stop.
//! 4. **A failed commit** ([`StoreError::Full`], [`StoreError::Write`]):
//!    the live machine has moved past the store, so the worker stops with
//!    [`WorkerError::Store`](crate::runtime::WorkerError::Store); the store
//!    holds the last good checkpoint to spawn again from.
//!    [`StoreError::Conflict`] means a second writer for the same agent id.
//!
//! # Stores
//!
//! [`MemoryStore`] keeps everything in memory (tests, and a baseline);
//! `SqliteStore` (feature `sqlite`) is an embedded SQLite file in WAL
//! mode, each row of a step kept with a checksum checked as it is read
//! (`SqliteStore::open_read_only` looks into a file without writing to
//! it); `PgStore` (feature `postgres`) keeps agents on a Postgres server,
//! with the fencing a fleet of worker processes sharing it needs.

// Durable agents run on the runtime; without it the store is the journal
// and restore alone.
#[cfg(feature = "runtime")]
mod durable;
mod error;
pub(crate) mod journal;
mod memory;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
mod restore;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use self::postgres::{PgConfig, PgStore};
#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub use durable::{Clock, Durability, Durable, Start};
#[cfg(feature = "fleet")]
pub(crate) use durable::{StepMark, StepWatch};
pub use error::StoreError;
pub use journal::{Journal, PendingStep, SnapshotPolicy};
pub use memory::MemoryStore;
pub use restore::{Restored, restore, restore_at};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteConfig, SqliteStore, Synchronous};

use std::time::SystemTime;

/// The format version this build writes, and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;

/// The [`StepRecord::origin`] of a durable agent's step whose event came
/// from its handles' mailbox (`send`, `call`) rather than from its own
/// work (a task's result, a stream's item, a timer, a send).
pub const INPUT_ORIGIN: &str = "input";

/// The kind of an effect row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum EffectKind {
    /// A keyed task (`EffectContext::spawn_keyed`).
    Task,
    /// A keyed stream (`EffectContext::stream_keyed`).
    Stream,
    /// A timer that delivers an event at a deadline and lets external
    /// input through meanwhile (`EffectContext::deadline`).
    Timer,
    /// A timer that holds external input back until it fires
    /// (`EffectContext::pause`).
    Pause,
    /// An event sent for delivery right after its step
    /// (`EffectContext::send`), or owed by work the effects cancelled.
    Send,
}

impl EffectKind {
    /// The kind's code in a store row.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Self::Task => 1,
            Self::Stream => 2,
            Self::Timer => 3,
            Self::Pause => 4,
            Self::Send => 5,
        }
    }

    /// The kind a store row's code names, `None` for an unknown code.
    #[must_use]
    pub const fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Self::Task),
            2 => Some(Self::Stream),
            3 => Some(Self::Timer),
            4 => Some(Self::Pause),
            5 => Some(Self::Send),
            _ => None,
        }
    }
}

/// Effect work a step started: a keyed task or stream, or a timer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    /// What it is.
    pub kind: EffectKind,
    /// Its key, unique among the agent's work in flight of its kind.
    pub key: String,
    /// A timer's absolute deadline.
    pub deadline: Option<SystemTime>,
    /// The event a timer delivers, serialized as the log's events are.
    pub event: Option<String>,
}

impl Effect {
    /// A keyed task.
    #[must_use]
    pub fn task(key: impl Into<String>) -> Self {
        Self { kind: EffectKind::Task, key: key.into(), deadline: None, event: None }
    }

    /// A keyed stream.
    #[must_use]
    pub fn stream(key: impl Into<String>) -> Self {
        Self { kind: EffectKind::Stream, key: key.into(), deadline: None, event: None }
    }

    /// A timer that delivers `event` (serialized) at `deadline`.
    #[must_use]
    pub fn timer(key: impl Into<String>, deadline: SystemTime, event: String) -> Self {
        Self { kind: EffectKind::Timer, key: key.into(), deadline: Some(deadline), event: Some(event) }
    }
}

/// Effect work in flight at a step: started and not yet finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    /// The work.
    pub effect: Effect,
    /// The step that started it.
    pub started: u64,
}

/// A machine snapshot as a store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The format version it was written in.
    pub format: u32,
    /// The name of the machine's state.
    pub state: String,
    /// The [`snapshot`](crate::snapshot) JSON.
    pub data: String,
}

/// One step to append: an event and what it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    /// Its sequence number: the agent's next one.
    pub seq: u64,
    /// When the event was handled.
    pub at: SystemTime,
    /// The name of the state the event led to.
    pub state: String,
    /// The event, serialized.
    pub event: String,
    /// Where the event came from, when a restart or an inbox needs to
    /// know: `stream:` and the key of the stream whose item it is (a stream
    /// performed again after a restart skips the items the machine already
    /// took), or [`INPUT_ORIGIN`] for an event a durable agent took from its
    /// handles' mailbox (`send`, `call`), which a store keeping an inbox
    /// counts against it. A restart reads only stream origins.
    pub origin: Option<String>,
    /// Effect rows this step finishes (the event is their result), by kind
    /// and key. A key with nothing in flight is ignored.
    pub finished: Vec<(EffectKind, String)>,
    /// Effect rows this step starts. One whose kind and key are already in
    /// flight replaces that row (the runtime cancels the older work).
    pub started: Vec<Effect>,
    /// A snapshot of the machine after the event, when one is due.
    pub snapshot: Option<Snapshot>,
}

/// An event of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    /// Its sequence number.
    pub seq: u64,
    /// When it was handled.
    pub at: SystemTime,
    /// The name of the state it led to.
    pub state: String,
    /// The event, serialized.
    pub event: String,
    /// Where it came from (see [`StepRecord::origin`]).
    pub origin: Option<String>,
}

/// An agent as the store knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInfo {
    /// The machine's name (`StateMachine::DESCRIPTION.name`).
    pub machine: String,
    /// The format version the agent was created in.
    pub format: u32,
    /// The sequence number its next step must carry.
    pub next_seq: u64,
    /// The agent and step it was forked from, if it was.
    pub forked_from: Option<(String, u64)>,
}

/// A step an agent can be rebuilt at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Its sequence number (0: the machine the agent started as).
    pub seq: u64,
    /// When it was taken.
    pub at: SystemTime,
    /// The name of the machine's state there.
    pub state: String,
    /// Whether a snapshot is stored there (rebuilding it replays nothing).
    pub snapshot: bool,
}

/// Where an agent's checkpoints are kept.
///
/// Every method is one transaction: it sees a consistent store, and a
/// write either happens whole or not at all. Calls block; see the module
/// docs for where the executor makes them.
pub trait CheckpointStore: Send + Sync {
    /// Adds `agent`, written by machine `machine`, with its initial
    /// snapshot as checkpoint 0.
    ///
    /// # Errors
    /// [`StoreError::AgentExists`], or the backend's write error.
    fn create(&self, agent: &str, machine: &str, at: SystemTime, initial: &Snapshot) -> Result<(), StoreError>;

    /// The agent, `None` if it is not in the store.
    ///
    /// # Errors
    /// The backend's read error.
    fn agent(&self, agent: &str) -> Result<Option<AgentInfo>, StoreError>;

    /// The ids of every agent in the store, sorted.
    ///
    /// # Errors
    /// The backend's read error.
    fn agents(&self) -> Result<Vec<String>, StoreError>;

    /// Appends one step, in one transaction.
    ///
    /// # Errors
    /// [`StoreError::UnknownAgent`], [`StoreError::Conflict`] if `step.seq`
    /// is not the agent's next sequence number, [`StoreError::Full`] or
    /// [`StoreError::Write`]; on any error nothing was written.
    fn append(&self, agent: &str, step: &StepRecord) -> Result<(), StoreError>;

    /// Appends several steps, in order; a store may write them in one
    /// transaction (SQLite does: one disk sync for all). The default appends
    /// them one by one, stopping at the first error (the steps before it
    /// are written).
    ///
    /// # Errors
    /// As [`append`](Self::append), for the first step refused.
    fn append_all(&self, agent: &str, steps: &[StepRecord]) -> Result<(), StoreError> {
        steps.iter().try_for_each(|step| self.append(agent, step))
    }

    /// Marks work in flight as finished at the agent's last step, without
    /// a new step: work that ended between two steps (a stream's end, seen
    /// after the step of its last item). A key with nothing in flight is
    /// ignored.
    ///
    /// # Errors
    /// [`StoreError::UnknownAgent`], or the backend's write error; on an
    /// error nothing was written.
    fn finish(&self, agent: &str, finished: &[(EffectKind, String)]) -> Result<(), StoreError>;

    /// The newest snapshot at or before `seq`, with its sequence number.
    ///
    /// # Errors
    /// [`StoreError::UnknownAgent`], or the backend's read error.
    fn snapshot_at_or_before(&self, agent: &str, seq: u64) -> Result<Option<(u64, Snapshot)>, StoreError>;

    /// The events with sequence numbers in `after + 1 ..= through`, in
    /// order.
    ///
    /// # Errors
    /// [`StoreError::UnknownAgent`], or the backend's read error.
    fn events(&self, agent: &str, after: u64, through: u64) -> Result<Vec<EventRecord>, StoreError>;

    /// The effect work in flight after step `seq`, oldest first.
    ///
    /// # Errors
    /// [`StoreError::UnknownAgent`], or the backend's read error.
    fn in_flight(&self, agent: &str, seq: u64) -> Result<Vec<InFlight>, StoreError>;

    /// Every checkpoint of the agent, oldest first: 0, then one per event.
    ///
    /// # Errors
    /// [`StoreError::UnknownAgent`], or the backend's read error.
    fn checkpoints(&self, agent: &str) -> Result<Vec<Checkpoint>, StoreError>;

    /// Adds agent `new`, a copy of `source` up to step `seq`: its events,
    /// snapshots and effect rows to that step, with the work in flight
    /// there in flight again. The two then continue independently.
    ///
    /// # Errors
    /// [`StoreError::UnknownAgent`], [`StoreError::AgentExists`] for `new`,
    /// [`StoreError::NoCheckpoint`] if `seq` is past the source's last
    /// step, or the backend's write error.
    fn fork(&self, source: &str, seq: u64, new: &str) -> Result<(), StoreError>;
}
