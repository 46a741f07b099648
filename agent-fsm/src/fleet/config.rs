//! [`FleetConfig`]: where a fleet's agents are kept, how long its leases
//! last, and how many failures an event or an agent is given.

use std::time::Duration;

#[cfg(doc)]
use super::{AgentStatus, Fleet, FleetError, Refusal};
#[cfg(doc)]
use crate::store::PgConfig;
use crate::store::postgres::IDLE_IN_TRANSACTION_TIMEOUT;

/// Where a fleet's agents are kept, and how long its leases last.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FleetConfig {
    /// The Postgres server's URL (`postgres://user:password@host:port/db`).
    /// Its `connect_timeout` (10 seconds when it sets none) bounds the
    /// opening of each of the fleet's own connections, the server's answer
    /// included: a call that must connect while the server is away or
    /// does not answer fails with [`FleetError::Connect`] by then. A call
    /// on a connection already open that the network cut off without a
    /// reset waits for as long as TCP retries (many minutes on Linux), as
    /// the checkpoint store's calls do: `tcp_user_timeout` in the URL
    /// (`?tcp_user_timeout=30`, in seconds) bounds that.
    pub url: String,
    /// The Postgres schema holding the tables, created if absent.
    pub schema: String,
    /// How many connections the checkpoint store keeps.
    pub pool_size: usize,
    /// How long a worker's claim on an agent lasts without renewal: the
    /// time a dead worker's agents wait before another takes them. A third
    /// of it is also how long an agent's step write may wait for a row lock
    /// ([`PgConfig::lock_timeout`]) before it fails and the agent stops, to
    /// be resumed by the next claim: a write stuck on a lock blocks its
    /// runtime thread, and must not hold up the renewal of the worker's
    /// other leases.
    pub lease: Duration,
    /// How long the server lets any of the fleet's connections (the
    /// store's and its own) sit idle in the middle of a transaction before
    /// it ends the session, 10 seconds by default; zero leaves the
    /// server's setting. See [`PgConfig::idle_in_transaction_timeout`]:
    /// a process stopped mid-write or mid-send releases the locks it held
    /// (on an agent's rows, on its inbox) after this, not when it dies.
    pub idle_in_transaction_timeout: Duration,
    /// How many times an inbox event may make the machine panic (or leave
    /// it poisoned, or panic in the event's own `Clone`, which a worker
    /// recording its events calls, or make the effects panic as they
    /// perform its action) before it is refused ([`Refusal::Panicked`]),
    /// 3 by default. Each failure stops the agent, which is resumed from its
    /// checkpoint a lease later and sent the event again; once refused, it
    /// is skipped, and the events sent after it are applied in order. A
    /// failure is counted against the inbox row the failed step took (the
    /// row its write would have marked applied).
    ///
    /// A failure on an event of the agent's own work (a task's result, a
    /// timer, a stream's item), or between steps, is counted against the
    /// agent, at the step it happened: after this many in a row at one
    /// step (the agent resumed each time and failing again before it got
    /// past that step) the agent is halted ([`AgentStatus::halted`]): no
    /// worker runs it until [`Fleet::revive`]. So is a panic of the
    /// function a worker builds the agent's effects and configuration with
    /// ([`Worker::run`](super::Worker::run)), counted at the agent's next
    /// step: a step taken in between starts the count again.
    pub event_attempts: u32,
}

impl FleetConfig {
    /// The server at `url`, schema `agent_fsm`, 4 store connections,
    /// leases of 10 seconds.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: "agent_fsm".to_owned(),
            pool_size: 4,
            lease: Duration::from_secs(10),
            idle_in_transaction_timeout: IDLE_IN_TRANSACTION_TIMEOUT,
            event_attempts: 3,
        }
    }

    /// This configuration with the tables in schema `schema`.
    #[must_use]
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// This configuration with `size` store connections (at least one).
    #[must_use]
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// This configuration with leases of `lease` (at least 30 ms), the
    /// default of its workers.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(30));
        self
    }

    /// This configuration with an inbox event refused once it made the
    /// machine fail `attempts` times (at least one).
    #[must_use]
    pub fn event_attempts(mut self, attempts: u32) -> Self {
        self.event_attempts = attempts.max(1);
        self
    }

    /// This configuration with the server ending a connection left idle
    /// in a transaction for `timeout` (zero: the server's setting).
    #[must_use]
    pub fn idle_in_transaction_timeout(mut self, timeout: Duration) -> Self {
        self.idle_in_transaction_timeout = timeout;
        self
    }
}
