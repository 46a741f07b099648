//! Stopping an agent for good, rather than resuming it on every lease for
//! ever: at once when its stored data does not read or a step of it does
//! not encode (no retry mends those), or once its failures in a row at
//! one step reach the fleet's limit.

use std::fmt;
use std::time::Duration;

use tokio_postgres::Client;

use super::refused::{HALT_UNENCODABLE, HALT_UNREADABLE};
use super::{FleetError, db};
use crate::store::StoreError;

/// What no retry mends: the agent is halted at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hopeless {
    /// Its stored data does not read.
    Unreadable,
    /// A step of it does not encode.
    Unencodable,
}

impl Hopeless {
    /// What a failure of the store says of the agent: `None` for what may
    /// pass (a lost connection, a lock, a fence).
    ///
    /// A machine of another name ([`StoreError::WrongMachine`]) is data
    /// that does not read: a worker claims only agents the store names as
    /// of its machine, so its snapshot names another. A format of a newer
    /// release ([`StoreError::UnknownFormat`]) is not hopeless: a worker of
    /// that release reads it.
    pub(crate) fn of(error: &StoreError) -> Option<Self> {
        match error {
            StoreError::Corrupt { .. } | StoreError::WrongMachine { .. } => Some(Self::Unreadable),
            StoreError::Encode(_) => Some(Self::Unencodable),
            _ => None,
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Self::Unreadable => HALT_UNREADABLE,
            Self::Unencodable => HALT_UNENCODABLE,
        }
    }
}

/// Why a claimed agent did not start.
#[derive(Debug)]
pub(crate) enum StartFailure {
    /// The worker's function giving the agent's effects and configuration
    /// panicked, with this message.
    Panicked(String),
    /// Spawning it from its checkpoint failed.
    Resume(FleetError),
}

impl fmt::Display for StartFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Panicked(message) => write!(f, "the function giving the agent's effects panicked: {message}"),
            Self::Resume(error) => write!(f, "{error}"),
        }
    }
}

/// Settles agent `agent`'s failed start under `worker`'s lease at `epoch`:
/// one whose data does not read is halted at once; a panic of the
/// worker's function is counted against the agent at its next step, and
/// halts it after `attempts` in a row there (a step taken in between
/// starts the count again). Any other failure (the store slow, or away)
/// may pass, and is left to the next claim.
pub(crate) async fn start_failed(
    client: &Client,
    agent: &str,
    worker: &str,
    epoch: u64,
    failure: &StartFailure,
    attempts: u32,
) {
    match failure {
        StartFailure::Resume(FleetError::Store(store)) => {
            if let Some(why) = Hopeless::of(store) {
                halt(client, agent, worker, epoch, why, &failure.to_string()).await;
            }
        }
        StartFailure::Resume(_) => {}
        StartFailure::Panicked(_) => {
            count_agent_failure(client, agent, worker, epoch, None, &failure.to_string(), attempts).await;
        }
    }
}

/// Halts agent `agent`, held by `worker` at `epoch`, for `why`, with
/// `message` (the error) kept in its lease. Logged, not returned: the
/// caller stops the agent either way, and a halt that was not written
/// leaves the lease to expire, to be tried again.
pub(crate) async fn halt(client: &Client, agent: &str, worker: &str, epoch: u64, why: Hopeless, message: &str) {
    let epoch = i64::try_from(epoch).unwrap_or(i64::MAX);
    let message = storable(message);
    match client.query_opt(db::HALT, &[&agent, &worker, &epoch, &why.kind(), &message]).await {
        Ok(Some(_)) => tracing::error!(agent, kind = why.kind(), message, "agent halted"),
        // The lease moved on: the next owner finds the same and halts it.
        Ok(None) => {}
        Err(error) => tracing::warn!(agent, %error, "cannot halt the agent"),
    }
}

/// Counts a failure against agent `agent` (its machine on its own work,
/// or its start) at step `seq` (`None`: its next step), `error` kept, if
/// `worker` holds it at `epoch`; halts it once it failed `limit` times in
/// a row at that step.
pub(crate) async fn count_agent_failure(
    client: &Client,
    agent: &str,
    worker: &str,
    epoch: u64,
    seq: Option<u64>,
    error: &str,
    limit: u32,
) {
    let seq = seq.map(|seq| i64::try_from(seq).unwrap_or(i64::MAX));
    let epoch = i64::try_from(epoch).unwrap_or(i64::MAX);
    let limit = i32::try_from(limit).unwrap_or(i32::MAX);
    let error = storable(error);
    match client.query_opt(db::AGENT_FAILED, &[&agent, &worker, &epoch, &seq, &error, &limit]).await {
        Ok(Some(row)) => {
            let failures: i32 = row.try_get(0).unwrap_or(0);
            if row.try_get::<_, bool>(1).unwrap_or(false) {
                tracing::error!(agent, seq, failures, "the agent failed at one step every time: halted");
            } else {
                tracing::warn!(agent, seq, failures, "the agent failed");
            }
        }
        // The lease moved on: the next owner counts its own failures.
        Ok(None) => {}
        Err(error) => tracing::warn!(%error, "cannot count a failure against the agent"),
    }
}

/// Halts the agents whose ids are not UTF-8, in a database of encoding
/// `SQL_ASCII` (which stores text as given; the fleet never writes such
/// an id): the server cannot send one, which fails every claim that picks
/// it, of every worker, and with it the claims of every agent picked with
/// it. Only the ids' bytes are read. True if it halted any; its errors
/// are logged, each statement given up after `lease`.
pub(crate) async fn halt_unreadable_ids(client: &Client, lease: Duration) -> bool {
    let halted = async {
        let encoding = client.query_one("SELECT current_setting('server_encoding')", &[]).await?;
        // Elsewhere the conversion to SQL_ASCII is no copy of the bytes.
        if encoding.try_get::<_, String>(0)? != "SQL_ASCII" {
            return Ok::<_, tokio_postgres::Error>(0);
        }
        let mut halted = 0;
        for row in client.query(db::LEASE_IDS, &[]).await? {
            let id: &[u8] = row.try_get(0)?;
            if std::str::from_utf8(id).is_err() {
                let message = format!("its id is not UTF-8: {}", String::from_utf8_lossy(id));
                halted += client.execute(db::HALT_ID, &[&id, &storable(&message)]).await?;
            }
        }
        Ok(halted)
    };
    match tokio::time::timeout(lease, halted).await {
        Ok(Ok(0)) => false,
        Ok(Ok(halted)) => {
            tracing::error!(halted, "agents whose ids are not UTF-8 halted");
            true
        }
        Ok(Err(error)) => {
            tracing::warn!(%error, "cannot halt the agents whose ids are not UTF-8");
            false
        }
        Err(_) => {
            tracing::warn!("cannot halt the agents whose ids are not UTF-8: no answer within a lease");
            false
        }
    }
}

/// The longest failure message kept with a row, in bytes.
const MAX_MESSAGE: usize = 4096;

/// `message` as a text column takes it: Postgres refuses a NUL byte (a
/// panic message may quote whatever the machine was given), which would
/// fail the count and leave the event to fail the agent for ever; and a
/// message of megabytes is cut to its start.
pub(crate) fn storable(message: &str) -> String {
    message[..message.floor_char_boundary(MAX_MESSAGE)].replace('\0', "\u{fffd}")
}
