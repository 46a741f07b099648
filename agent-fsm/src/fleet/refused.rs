//! Inbox rows no step will apply, and why: an event that does not decode
//! as the machine's, one still in the inbox when the agent finished, or
//! one the machine panicked on as many times as the fleet allows
//! ([`FleetConfig::event_attempts`](super::FleetConfig::event_attempts));
//! and agents no worker runs any more, halted because their machine failed
//! as many times on their own work.

use super::{Fleet, FleetError, closed, db};
use crate::store::postgres::pool::untranslatable;

/// Why an event sent to an agent was refused rather than applied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// It does not read as one of the machine's events, or the machine's
    /// serde impls panicked reading it, or failed or panicked writing it as
    /// the machine writes its events (as the step taking it would).
    Undecodable,
    /// The agent reached its terminal state before taking it.
    Finished,
    /// The machine panicked (or was left poisoned) handling it, or the
    /// effects panicked performing its action, on each of its `attempts`;
    /// the agent went on from its checkpoint without it.
    Panicked {
        /// How many times the machine failed on it.
        attempts: u32,
        /// The last failure's message.
        message: String,
    },
}

/// Why the fleet no longer runs an agent that has not finished
/// ([`AgentStatus::halted`](super::AgentStatus::halted)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Halt {
    /// The agent failed `attempts` times in a row at one step (its machine
    /// panicking, or left poisoned, on an event of its own work: a task's
    /// result, a timer, a stream's item; or its effects panicking as they
    /// performed an action; or the worker's function building its effects
    /// and configuration panicking): resumed from its checkpoint each
    /// time, it failed again before it got past that step.
    Failed {
        /// How many times in a row it failed.
        attempts: u32,
        /// The last failure, as the worker reported it.
        message: String,
    },
    /// Its stored data does not read (its snapshot, a step of its log or
    /// its work in flight is not what its machine writes, or reading it
    /// panicked): resuming it again would fail the same way. Once the rows
    /// are mended, [`Fleet::revive`] lets it run again.
    Unreadable {
        /// What the store said, or the panic's message.
        message: String,
    },
    /// A step it took does not encode (serde refused its state or context,
    /// or an event of its own work: an inbox event that does not encode is
    /// refused instead), so it could not be written: taken again after a
    /// resume, it would fail the same way.
    Unencodable {
        /// What serde said.
        message: String,
    },
}

impl Halt {
    /// The halt a lease row records: its `halt` kind (`None` for failures
    /// counted), its count of failures and its last message.
    pub(crate) fn from_row(kind: Option<&str>, attempts: i32, message: Option<String>) -> Self {
        let message = message.unwrap_or_default();
        match kind {
            Some(HALT_UNREADABLE) => Self::Unreadable { message },
            Some(HALT_UNENCODABLE) => Self::Unencodable { message },
            _ => Self::Failed { attempts: u32::try_from(attempts).unwrap_or(0), message },
        }
    }
}

/// The `halt` of a lease whose agent's stored data does not read.
pub(crate) const HALT_UNREADABLE: &str = "unreadable";
/// The `halt` of a lease whose agent took a step that does not encode.
pub(crate) const HALT_UNENCODABLE: &str = "unencodable";

/// An event sent to an agent that no step will apply.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refused {
    /// Its inbox row's id, as [`Fleet::send`] returned it.
    pub id: u64,
    /// The event, as its row holds it (bytes that are not UTF-8, which
    /// a database of encoding `SQL_ASCII` holds as given, replaced by
    /// U+FFFD).
    pub event: String,
    /// Why it was refused.
    pub reason: Refusal,
}

impl Fleet {
    /// The events sent to agent `agent` that were refused, in the order
    /// sent: all of them, at once. (An agent the fleet does not know has
    /// none.) [`Fleet::refused_page`] reads them a page at a time.
    ///
    /// # Errors
    /// [`FleetError::InvalidId`], or a database error.
    pub async fn refused(&self, agent: &str) -> Result<Vec<Refused>, FleetError> {
        self.refused_rows(agent, i64::MIN, i64::MAX).await
    }

    /// At most `limit` of the events sent to agent `agent` that were
    /// refused, in the order sent, from the first whose id is greater than
    /// `after` (0 for the first page; the last [`Refused::id`] of a page for
    /// the next). A page shorter than `limit` is the last.
    ///
    /// ```no_run
    /// # async fn demo(fleet: &agent_fsm::fleet::Fleet) -> Result<(), agent_fsm::fleet::FleetError> {
    /// let mut after = 0;
    /// loop {
    ///     let page = fleet.refused_page("agent-1", after, 100).await?;
    ///     for refused in &page {
    ///         tracing::warn!(id = refused.id, reason = ?refused.reason, "refused");
    ///     }
    ///     match page.last() {
    ///         Some(last) if page.len() == 100 => after = last.id,
    ///         _ => break,
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`FleetError::InvalidId`], or a database error.
    pub async fn refused_page(&self, agent: &str, after: u64, limit: u32) -> Result<Vec<Refused>, FleetError> {
        // Past the largest id a row can have: an empty page.
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.refused_rows(agent, after, i64::from(limit)).await
    }

    async fn refused_rows(&self, agent: &str, after: i64, limit: i64) -> Result<Vec<Refused>, FleetError> {
        super::ids::check(agent)?;
        let mut guard = self.client().await?;
        let client = guard.as_mut().ok_or_else(closed)?;
        let (rows, bytes) = match client.query(db::REFUSED, &[&agent, &after, &limit]).await {
            Ok(rows) => (rows, false),
            Err(error) if untranslatable(&error) => {
                (client.query(db::REFUSED_BYTES, &[&agent, &after, &limit]).await.map_err(FleetError::db)?, true)
            }
            Err(error) => return Err(FleetError::db(error)),
        };
        rows.iter()
            .map(|row| {
                let id: i64 = row.try_get(0).map_err(FleetError::db)?;
                let refusal: Option<String> = row.try_get(2).map_err(FleetError::db)?;
                let attempts: i32 = row.try_get(3).map_err(FleetError::db)?;
                let message: Option<String> = row.try_get(4).map_err(FleetError::db)?;
                let reason = match refusal.as_deref() {
                    Some("finished") => Refusal::Finished,
                    Some("panicked") => Refusal::Panicked {
                        attempts: u32::try_from(attempts).unwrap_or(0),
                        message: message.unwrap_or_default(),
                    },
                    // Rows refused by an earlier release carry no reason:
                    // it refused only those that did not decode.
                    _ => Refusal::Undecodable,
                };
                // An event that is not UTF-8 is shown lossily: the list is
                // how one finds it.
                let event = if bytes {
                    String::from_utf8_lossy(row.try_get::<_, &[u8]>(1).map_err(FleetError::db)?).into_owned()
                } else {
                    row.try_get(1).map_err(FleetError::db)?
                };
                Ok(Refused { id: db::unsigned(id), event, reason })
            })
            .collect()
    }

    /// Lets agent `agent`, halted ([`AgentStatus::halted`](super::AgentStatus::halted)),
    /// be claimed again, its failures forgotten (once what failed it is
    /// mended, say), and wakes the workers. Returns whether it was halted.
    /// The events sent to it meanwhile wait in its inbox, in order.
    ///
    /// # Errors
    /// [`FleetError::InvalidId`], [`FleetError::UnknownAgent`], or a
    /// database error.
    pub async fn revive(&self, agent: &str) -> Result<bool, FleetError> {
        super::ids::check(agent)?;
        let mut guard = self.client().await?;
        let client = guard.as_mut().ok_or_else(closed)?;
        let channel = self.target().channel();
        let revived = client.query_opt(db::REVIVE, &[&agent, &channel, &db::CLAIM]).await.map_err(FleetError::db)?;
        if revived.is_some() {
            return Ok(true);
        }
        let known =
            client.query_opt("SELECT 1 FROM leases WHERE agent = $1", &[&agent]).await.map_err(FleetError::db)?;
        match known {
            Some(_) => Ok(false),
            None => Err(FleetError::UnknownAgent(agent.to_owned())),
        }
    }
}
