//! The fleet's errors: what creating, sending to and running agents across
//! worker processes can fail with.

use crate::store::StoreError;

/// What a [`Fleet`](super::Fleet) or [`Worker`](super::Worker) call failed
/// with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// The Postgres server could not be reached, or the URL does not parse.
    #[error("cannot connect to the fleet's database: {0}")]
    Connect(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A statement of the fleet's own tables (leases, inbox, workers)
    /// failed.
    #[error("the fleet's database refused a statement: {0}")]
    Database(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The checkpoint store failed (creating an agent, resuming one).
    #[error("checkpoint store: {0}")]
    Store(#[from] StoreError),
    /// An event did not serialize, or holds a float that is not finite
    /// (JSON would write it as `null`, which does not read back).
    #[error("the event does not serialize: {0}")]
    Encode(#[source] serde_json::Error),
    /// The fleet has no agent with this id.
    #[error("the fleet has no agent `{0}`")]
    UnknownAgent(String),
    /// An agent with this id is already in the fleet, or in its store as
    /// another machine.
    #[error("agent `{0}` is already in the fleet")]
    AgentExists(String),
    /// The agent reached its terminal state: nothing sent to it would ever
    /// be applied.
    #[error("agent `{0}` has finished")]
    Finished(String),
    /// The id cannot name an agent or a worker: it holds a NUL byte, or is
    /// longer than [`MAX_ID_BYTES`](super::MAX_ID_BYTES). Refused before any
    /// statement is sent.
    #[error("`{id}` cannot be a fleet id: {reason}")]
    InvalidId {
        /// The id, cut to its first 64 bytes, a NUL written `\\0`.
        id: String,
        /// Why it cannot.
        reason: &'static str,
    },
    /// Another process registered under this worker's id while it ran, and
    /// took its leases over: the worker stopped its agents, and handed
    /// nothing back (the leases are the other's now).
    #[error("another process registered as worker `{worker}` and took its agents over")]
    Replaced {
        /// The worker's id.
        worker: String,
        /// What the worker did until then; the agents it stopped are
        /// counted as lost.
        report: super::WorkerReport,
    },
}

impl FleetError {
    /// A failed statement.
    pub(crate) fn db(error: tokio_postgres::Error) -> Self {
        Self::Database(Box::new(error))
    }
}
