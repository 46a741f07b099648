//! [`StoreError`]: every way reading or writing a checkpoint store fails,
//! one variant each, so that a caller can tell a conflict it may retry from
//! a corrupt store it must not resume from.

use crate::snapshot::SnapshotError;

/// Why a checkpoint store refused a read or a write.
///
/// A write that fails leaves the store as it was before it: the agent's
/// last good checkpoint stays readable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No agent with this id is in the store.
    #[error("agent `{0}` is not in the store")]
    UnknownAgent(String),
    /// An agent with this id is already in the store.
    #[error("agent `{0}` is already in the store")]
    AgentExists(String),
    /// The step's sequence number is not the agent's next one: another
    /// writer appended first, or the caller lost track.
    #[error("agent `{agent}`: step {found} is not the next one, {expected}")]
    Conflict {
        /// The agent.
        agent: String,
        /// The sequence number the store expected.
        expected: u64,
        /// The one the step carried.
        found: u64,
    },
    /// No checkpoint at this sequence number: it is past the agent's last
    /// step.
    #[error("agent `{agent}` has no checkpoint {seq} (its last is {last})")]
    NoCheckpoint {
        /// The agent.
        agent: String,
        /// The sequence number asked for.
        seq: u64,
        /// The agent's last sequence number.
        last: u64,
    },
    /// The agent was written by another machine than the one restoring it.
    #[error("agent `{agent}` was written by machine `{found}`, not `{expected}`")]
    WrongMachine {
        /// The agent.
        agent: String,
        /// The machine restoring.
        expected: &'static str,
        /// The machine named in the store.
        found: String,
    },
    /// A format version this build does not read (a store written by a
    /// newer release).
    #[error("{what} has format version {found}; this build reads versions up to {supported}")]
    UnknownFormat {
        /// What carries the version: the store file, or an agent's snapshot.
        what: String,
        /// The version found.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// A row that cannot be read back: bytes that are not what was
    /// written, an event or snapshot that no longer decodes, or a gap in
    /// the event log.
    #[error("agent `{agent}`: corrupt {what} at step {seq}: {reason}")]
    Corrupt {
        /// The agent.
        agent: String,
        /// What is corrupt: `event`, `snapshot`, `effect` or `log`.
        what: &'static str,
        /// The sequence number of the row.
        seq: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A live event or machine could not be serialized (a poisoned
    /// machine, a value serde refuses); nothing was written.
    #[error("could not encode the step: {0}")]
    Encode(#[source] SnapshotError),
    /// The store is full (disk full, a size cap reached); nothing was
    /// written.
    #[error("the store is full: {0}")]
    Full(String),
    /// A fenced store's write refused: the agent's lease is not held by
    /// the writer at the writer's epoch (another worker claimed the agent,
    /// or the lease was released). Nothing was written, and nothing this
    /// writer tries later will be: it must drop the agent.
    #[error("agent `{agent}`: the write of worker `{worker}` at epoch {epoch} is fenced off: {}", lease(.holder.as_deref(), *.current))]
    Fenced {
        /// The agent.
        agent: String,
        /// The worker the store was fenced for.
        worker: String,
        /// The epoch the store was fenced at.
        epoch: u64,
        /// The worker holding the lease now, `None` if nobody does.
        holder: Option<String>,
        /// The lease's epoch now, `None` if the agent has no lease.
        current: Option<u64>,
    },
    /// The backend failed to write; nothing was written.
    #[error("write failed: {0}")]
    Write(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The backend failed to read or to open the store.
    #[error("read failed: {0}")]
    Read(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// How a [`StoreError::Fenced`] describes the lease it found.
fn lease(holder: Option<&str>, current: Option<u64>) -> String {
    match (holder, current) {
        (_, None) => "the agent has no lease".to_owned(),
        (None, Some(epoch)) => format!("its lease is held by no worker (epoch {epoch})"),
        (Some(holder), Some(epoch)) => format!("its lease is held by `{holder}` at epoch {epoch}"),
    }
}

impl StoreError {
    /// A [`Corrupt`](Self::Corrupt) error.
    pub(crate) fn corrupt(agent: &str, what: &'static str, seq: u64, reason: impl ToString) -> Self {
        Self::Corrupt { agent: agent.to_owned(), what, seq, reason: reason.to_string() }
    }
}
