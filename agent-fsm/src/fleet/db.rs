//! The fleet's own connections to Postgres (tokio-postgres: the fleet is
//! async, and `LISTEN` needs a connection whose messages are read as they
//! come) and the statements on its tables: leases, inbox and workers. The
//! checkpoint store's rows are written by [`PgStore`](crate::store::PgStore)
//! alone.

use std::str::FromStr;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls};

use super::FleetError;
use crate::store::postgres::idle_in_transaction_setting;
use crate::store::postgres::pool::CONNECT_TIMEOUT;

/// The payload of a notification that agents can be claimed (one was
/// created, or handed back).
pub(crate) const CLAIM: &str = "claim";
/// The prefix of a notification that an agent's inbox has a new row; the
/// agent's id follows it.
pub(crate) const INBOX: &str = "inbox ";
/// The payload of a notification that the inbox of an agent whose id does
/// not fit in one has a new row: every feeder looks.
pub(crate) const INBOX_ANY: &str = "inbox?";
/// The bytes a notification's payload must stay under (Postgres's
/// `NOTIFY` limit with its default page size).
pub(crate) const MAX_PAYLOAD: usize = 8000;

/// `name` as a quoted SQL identifier.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A duration in whole milliseconds, as the statements take it.
pub(crate) fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// A count, an id or an epoch from a `bigint` column (never negative there).
pub(crate) fn unsigned(epoch: i64) -> u64 {
    u64::try_from(epoch).unwrap_or(0)
}

/// Where the fleet's tables are: the server and the schema.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) schema: String,
    /// What each connection runs first: its search path, and how long the
    /// server lets it sit idle in a transaction.
    setup: String,
}

impl Target {
    pub(crate) fn new(url: &str, schema: &str, idle_in_transaction: Duration) -> Result<Self, FleetError> {
        let mut config = tokio_postgres::Config::from_str(url).map_err(|e| FleetError::Connect(Box::new(e)))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("agent-fsm fleet");
        }
        let mut setup = format!("SET search_path TO {}", quote_ident(schema));
        if let Some(set) = idle_in_transaction_setting(idle_in_transaction) {
            setup.push_str("; ");
            setup.push_str(&set);
        }
        Ok(Self { config, schema: schema.to_owned(), setup })
    }

    /// The notification channel of this schema's fleet: fleets in other
    /// schemas of the same database do not wake each other.
    pub(crate) fn channel(&self) -> String {
        let channel = format!("{}.fleet", self.schema);
        // A channel name is an identifier: 63 bytes at most.
        if channel.len() <= 63 {
            return channel;
        }
        // FNV-1a: stable across processes and releases, unlike std's hasher.
        let hash = self
            .schema
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        format!("agent_fsm.fleet.{hash:016x}")
    }

    /// A connection with the schema as its search path; its messages are
    /// read by a task of its own, which forwards notifications to `notes`
    /// (dropped otherwise) and ends when the connection closes.
    ///
    /// The whole of it (the socket, the server's greeting, the setup) is
    /// given up after the connect timeout: tokio-postgres bounds only the
    /// socket's, and a server that accepts and never answers (hung, or
    /// behind a proxy that holds the traffic) would keep a call reconnecting
    /// (a send, say) waiting for as long as it does.
    pub(crate) async fn connect(&self, notes: Option<mpsc::UnboundedSender<String>>) -> Result<Client, FleetError> {
        let limit = self.config.get_connect_timeout().copied().unwrap_or(CONNECT_TIMEOUT);
        match tokio::time::timeout(limit, self.connect_unbounded(notes)).await {
            Ok(connected) => connected,
            Err(_) => Err(FleetError::Connect(format!("the server did not answer within {limit:?}").into())),
        }
    }

    async fn connect_unbounded(&self, notes: Option<mpsc::UnboundedSender<String>>) -> Result<Client, FleetError> {
        let (client, mut connection) =
            self.config.connect(NoTls).await.map_err(|e| FleetError::Connect(Box::new(e)))?;
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(message) = messages.next().await {
                match message {
                    Ok(AsyncMessage::Notification(note)) => {
                        if let Some(notes) = &notes {
                            let _ = notes.send(note.payload().to_owned());
                        }
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, "fleet connection closed");
                        break;
                    }
                }
            }
        });
        client.batch_execute(&self.setup).await.map_err(FleetError::db)?;
        Ok(client)
    }

    /// A connection listening on the fleet's channel: every notification's
    /// payload arrives on the receiver, which closes with the connection.
    pub(crate) async fn listen(&self) -> Result<(Client, mpsc::UnboundedReceiver<String>), FleetError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let client = self.connect(Some(tx)).await?;
        client.batch_execute(&format!("LISTEN {}", quote_ident(&self.channel()))).await.map_err(FleetError::db)?;
        Ok((client, rx))
    }
}

/// An agent as the leases say. A lease done is held by nobody, though
/// the worker that ran the agent's terminal step keeps its name until its
/// loop releases it (or for good, if it died first).
pub(crate) const STATUS: &str = "
SELECT a.next_seq, l.done, CASE WHEN l.done THEN NULL ELSE l.worker END, l.epoch,
       COALESCE((SELECT e.state FROM events e WHERE e.agent = a.agent ORDER BY e.seq DESC LIMIT 1),
                (SELECT s.state FROM snapshots s WHERE s.agent = a.agent AND s.seq = 0), ''),
       (SELECT count(*) FROM inbox i WHERE i.agent = a.agent AND i.applied_seq IS NULL),
       l.assigned,
       (SELECT count(*) FROM inbox i WHERE i.agent = a.agent AND i.applied_seq = -1),
       l.halted, l.failures, l.failure, l.halt
FROM agents a LEFT JOIN leases l ON l.agent = a.agent
WHERE a.agent = $1";

/// The lease row of a new agent of machine $5, placed on the live worker
/// of that machine (or of an earlier release, which names none) with the
/// most room (capacity less the agents placed on it and not done); none if
/// no such worker is live. $1 agent, $2 the lease (ms): how old a live worker's
/// heartbeat may be, and how long the placement holds (an agent its worker
/// has not claimed within a lease, being full, say, is anyone's). The
/// workers are woken ($3 the channel, $4 [`CLAIM`]) by the same statement,
/// so that the placement is never written without the wake-up, nor
/// reported failed after it was written because the wake-up failed.
pub(crate) const PLACE: &str = "
WITH target AS (
    SELECT w.worker FROM workers w
    WHERE NOT w.stopping AND w.heartbeat > now() - $2::bigint * interval '1 millisecond'
      AND (w.machine = $5 OR w.machine IS NULL)
    ORDER BY w.capacity - (SELECT count(*) FROM leases l WHERE l.assigned = w.worker AND NOT l.done) DESC, w.worker
    LIMIT 1
), placed AS (
    INSERT INTO leases (agent, assigned, expires_at)
    SELECT $1, worker, CASE WHEN worker IS NULL THEN NULL ELSE now() + $2::bigint * interval '1 millisecond' END
    FROM (SELECT (SELECT worker FROM target) AS worker) AS placed
    ON CONFLICT (agent) DO NOTHING
    RETURNING assigned
)
SELECT placed.assigned FROM placed, pg_notify($3, $4)";

/// Registers a worker, or takes its row over (a worker restarted under the
/// same id, or a second process started under it). $1 worker, $2 capacity,
/// $3 the name of its machine, $4 its life: what tells this process from
/// any other under the same id.
pub(crate) const REGISTER: &str = "
INSERT INTO workers (worker, capacity, heartbeat, stopping, machine, life) VALUES ($1, $2, now(), false, $3, $4)
ON CONFLICT (worker) DO UPDATE
SET capacity = excluded.capacity, heartbeat = now(), stopping = false, machine = excluded.machine,
    life = excluded.life";

/// A worker's heartbeat. $1 worker, $2 capacity, $3 the name of its
/// machine, $4 its life. Returns no row once another life took the row
/// over (this one was replaced), or once the row is marked stopping,
/// which only this life's own hand-back does, after its last beat.
pub(crate) const HEARTBEAT: &str = "
INSERT INTO workers (worker, capacity, heartbeat, stopping, machine, life) VALUES ($1, $2, now(), false, $3, $4)
ON CONFLICT (worker) DO UPDATE SET heartbeat = now()
WHERE NOT workers.stopping AND workers.life IS NOT DISTINCT FROM excluded.life
RETURNING 1";

/// Claims up to $2 agents of machine $5 for worker $1 (none of $3, which it
/// runs already), each under its lease's next epoch, for $4 ms: first those
/// placed on it, then those nobody holds whose placement is void (no
/// worker, or one that is stopping or silent for longer than a lease), then
/// those whose lease (or placement) expired, and those an earlier life of
/// this worker held. An agent of another machine is never claimed: the
/// worker could not resume it, and would only keep it from its own.
/// `SKIP LOCKED`: two workers claiming at once never wait for each other,
/// and never both take one agent (the row lock and the epoch's increment
/// decide); a lease locked by a write in flight is left for the next round.
/// A lease whose epoch was written out of range (by hand) takes no part in
/// the statement's failure: a negative epoch goes on from 1, and the
/// largest `bigint`, which cannot be raised, is never claimed (raising it
/// would fail the claims of every agent picked with it). Nothing is
/// claimed once the worker's row names another life ($6): a process
/// replaced under its id takes nothing back from its successor.
pub(crate) const CLAIM_AGENTS: &str = "
WITH picked AS (
    SELECT l.agent FROM leases l
    JOIN agents a ON a.agent = l.agent AND a.machine = $5
    LEFT JOIN workers w ON w.worker = l.assigned
    WHERE NOT l.done AND NOT l.halted AND NOT (l.agent = ANY($3::text[])) AND l.epoch < 9223372036854775807
      AND EXISTS (SELECT 1 FROM workers me WHERE me.worker = $1 AND me.life = $6)
      AND (
        (l.worker IS NULL AND (l.assigned IS NULL OR l.assigned = $1 OR w.worker IS NULL OR w.stopping
                               OR w.heartbeat < now() - $4::bigint * interval '1 millisecond'))
        OR l.worker = $1
        OR l.expires_at < now()
      )
    ORDER BY l.assigned IS NOT DISTINCT FROM $1 DESC, l.agent
    LIMIT $2
    FOR UPDATE OF l SKIP LOCKED
)
UPDATE leases l SET worker = $1, epoch = GREATEST(l.epoch, 0) + 1, assigned = $1,
       expires_at = now() + $4::bigint * interval '1 millisecond'
FROM picked WHERE l.agent = picked.agent
RETURNING l.agent, l.epoch";

/// Renews worker $1's leases on agents $2 at epochs $3 for $4 ms; returns
/// those it still holds. A lease the agent's terminal step marked done is
/// still held (not renewed) until the worker's loop releases it: it is not
/// lost to another worker. (A process registered under the same id since
/// claims them under the next epoch, which this one no longer renews.)
pub(crate) const RENEW: &str = "
UPDATE leases l
SET expires_at = CASE WHEN l.done THEN NULL ELSE now() + $4::bigint * interval '1 millisecond' END
FROM unnest($2::text[], $3::bigint[]) AS mine (agent, epoch)
WHERE l.agent = mine.agent AND l.epoch = mine.epoch AND l.worker = $1
RETURNING l.agent";

/// Marks agent $1 done, if worker $2 holds it at epoch $3.
pub(crate) const DONE: &str = "
UPDATE leases SET done = true, worker = NULL, expires_at = NULL
WHERE agent = $1 AND worker = $2 AND epoch = $3";

/// Hands back every lease worker $1 holds, unless another life than $2
/// registered under its id (whose leases they are then): anyone may claim
/// them at once.
pub(crate) const RELEASE: &str = "
UPDATE leases SET worker = NULL, expires_at = NULL, assigned = NULL
WHERE worker = $1 AND NOT done
  AND NOT EXISTS (SELECT 1 FROM workers other WHERE other.worker = $1 AND other.life IS DISTINCT FROM $2)";

/// Marks worker $1 of life $2 as stopping: nothing new is placed on it.
/// Returns whether another life registered under its id meanwhile.
pub(crate) const STOPPING: &str = "
WITH mine AS (UPDATE workers SET stopping = true WHERE worker = $1 AND life = $2 RETURNING 1)
SELECT NOT EXISTS (SELECT 1 FROM mine)
       AND EXISTS (SELECT 1 FROM workers other WHERE other.worker = $1 AND other.life IS DISTINCT FROM $2)";

/// Removes worker $1's row, if it still names its life $2.
pub(crate) const DEREGISTER: &str = "DELETE FROM workers WHERE worker = $1 AND life = $2";

/// A page of agent $1's inbox rows after id $2 not yet applied, in id
/// order: the first $3 of them, cut after the row that brings their events
/// to $4 bytes (never before the first). Each row also says how many the
/// page held before that cut: a page cut, or as long as asked for, may
/// have more after it.
pub(crate) const UNAPPLIED: &str = "
SELECT id, event, held FROM (
    SELECT id, event, count(*) OVER () AS held,
           sum(octet_length(event)) OVER (ORDER BY id) - octet_length(event) AS before
    FROM (SELECT id, event FROM inbox WHERE agent = $1 AND applied_seq IS NULL AND id > $2
          ORDER BY id LIMIT $3) AS first
) AS page
WHERE before < $4 ORDER BY id";

/// The newest unapplied inbox row of each of agents $1 that has one.
pub(crate) const PENDING: &str = "
SELECT agent, max(id) FROM inbox WHERE applied_seq IS NULL AND agent = ANY($1::text[]) GROUP BY agent";

/// Marks inbox row $1 as refused: its event does not decode as the
/// machine's, so no step will ever apply it (`applied_seq` -1).
pub(crate) const REFUSE: &str =
    "UPDATE inbox SET applied_seq = -1, refusal = 'undecodable' WHERE id = $1 AND applied_seq IS NULL";

/// Counts a panic of the machine on unapplied inbox row $1, with message
/// $2; the row is refused once it has made the machine panic $3 times.
/// Returns the count and whether the row is refused now.
pub(crate) const FAILED: &str = "
UPDATE inbox SET failures = failures + 1, failure = $2,
       applied_seq = CASE WHEN failures + 1 >= $3 THEN -1 END,
       refusal = CASE WHEN failures + 1 >= $3 THEN 'panicked' END
WHERE id = $1 AND applied_seq IS NULL
RETURNING failures, applied_seq IS NOT NULL";

/// The row a failed step took from agent $1's inbox, as the step's write
/// would have marked it: among the rows sent to the agent (ids up to $2)
/// and not applied, the oldest holding the step's event $3, else the
/// oldest.
pub(crate) const FAILED_ROW: &str = "
SELECT id FROM inbox WHERE agent = $1 AND applied_seq IS NULL AND id <= $2 ORDER BY event = $3 DESC, id LIMIT 1";

/// Counts a failure of agent $1's machine on its own work (no inbox row),
/// or of its start (the worker's function giving its effects panicked),
/// at step $4 (NULL: the agent's next step), with message $5, if worker $2
/// holds it at epoch $3: a failure at the step of the last one adds to its
/// count, one at another step (the agent got on meanwhile) starts it again.
/// At $6 failures in a row the agent is halted: its lease is let go and no
/// worker claims it. Returns the count and whether the agent is halted now.
pub(crate) const AGENT_FAILED: &str = "
WITH counted AS (
    SELECT agent, COALESCE($4::bigint, (SELECT a.next_seq FROM agents a WHERE a.agent = $1)) AS seq
    FROM leases WHERE agent = $1 AND worker = $2 AND epoch = $3 AND NOT done
    FOR UPDATE
), seen AS (
    SELECT c.agent, c.seq, CASE WHEN l.failed_seq = c.seq THEN l.failures + 1 ELSE 1 END AS failures
    FROM counted c JOIN leases l ON l.agent = c.agent
)
UPDATE leases l SET failures = s.failures, failed_seq = s.seq, failure = $5, halted = s.failures >= $6,
       worker = CASE WHEN s.failures >= $6 THEN NULL ELSE l.worker END,
       expires_at = CASE WHEN s.failures >= $6 THEN NULL ELSE l.expires_at END,
       assigned = CASE WHEN s.failures >= $6 THEN NULL ELSE l.assigned END
FROM seen s WHERE l.agent = s.agent
RETURNING l.failures, l.halted";

/// Halts agent $1 at once, if worker $2 holds it at epoch $3: its stored
/// rows do not read, or a step of it does not encode ($4 the `halt` kind,
/// $5 the error), which no retry mends. Its lease is let go and no worker
/// claims it until it is revived. Returns a row if it was halted.
pub(crate) const HALT: &str = "
UPDATE leases SET halted = true, halt = $4, failure = $5, worker = NULL, expires_at = NULL, assigned = NULL
WHERE agent = $1 AND worker = $2 AND epoch = $3 AND NOT done
RETURNING agent";

/// The ids, as bytes, of the leases not done nor halted: in a database of
/// encoding `SQL_ASCII`, where the conversion changes nothing, those that
/// are not UTF-8 are found by the bytes the server cannot send as text.
pub(crate) const LEASE_IDS: &str = "SELECT convert_to(agent, 'SQL_ASCII') FROM leases WHERE NOT done AND NOT halted";

/// Halts the agent whose id is the bytes $1 (see [`LEASE_IDS`]) as
/// unreadable, with message $2, whoever holds it (no worker can: its
/// claim would have failed).
pub(crate) const HALT_ID: &str = "
UPDATE leases SET halted = true, halt = 'unreadable', failure = $2, worker = NULL, expires_at = NULL, assigned = NULL
WHERE convert_to(agent, 'SQL_ASCII') = $1 AND NOT done AND NOT halted";

/// Lets agent $1, halted, be claimed again, its failures forgotten; wakes
/// the workers ($2 the channel, $3 [`CLAIM`]). Returns a row if it was
/// halted.
pub(crate) const REVIVE: &str = "
WITH revived AS (
    UPDATE leases SET halted = false, halt = NULL, failures = 0, failed_seq = NULL
    WHERE agent = $1 AND halted RETURNING agent
)
SELECT revived.agent FROM revived, pg_notify($2, $3)";

/// Agent $1's refused inbox rows after id $2, in id order, $3 at most.
pub(crate) const REFUSED: &str = "
SELECT id, event, refusal, failures, failure FROM inbox WHERE agent = $1 AND applied_seq = -1 AND id > $2
ORDER BY id LIMIT $3";

/// [`REFUSED`] with each event as its bytes, for a database of encoding
/// `SQL_ASCII` holding one that is not UTF-8 (the conversion to its own
/// encoding changes nothing), which the server cannot send as text.
pub(crate) const REFUSED_BYTES: &str = "
SELECT id, convert_to(event, 'SQL_ASCII'), refusal, failures, failure
FROM inbox WHERE agent = $1 AND applied_seq = -1 AND id > $2 ORDER BY id LIMIT $3";

/// Rewrites unapplied inbox row $1's event as text $2: the event as the
/// machine serializes it.
pub(crate) const REWRITE: &str = "UPDATE inbox SET event = $2 WHERE id = $1 AND applied_seq IS NULL";

/// Sends on the fleet's channel. $1 channel, $2 payload.
pub(crate) const NOTIFY: &str = "SELECT pg_notify($1, $2)";

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Target;

    fn channel(schema: &str) -> String {
        Target::new("postgres://localhost/db", schema, Duration::ZERO).expect("parses").channel()
    }

    #[test]
    fn a_channel_fits_an_identifier_and_follows_its_schema() {
        assert_eq!(channel("agent_fsm"), "agent_fsm.fleet");
        let (long, longer) = ("s".repeat(60), "s".repeat(61));
        assert!(channel(&long).len() <= 63 && channel(&longer).len() <= 63);
        assert_ne!(channel(&long), channel(&longer));
        assert_eq!(channel(&long), channel(&"s".repeat(60)));
    }

    /// Every connection of a fleet, its own and its store's, asks the
    /// server to end it when it sits idle in a transaction for the
    /// configured time (the store's test shows what that does); zero
    /// leaves the server's setting.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_fleet_s_connections_carry_the_idle_in_transaction_timeout() {
        let Ok(url) = std::env::var("AGENT_FSM_PG_URL") else {
            eprintln!("skipped: AGENT_FSM_PG_URL is not set");
            return;
        };
        let schema = format!("t_fleet_idle_tx_{}", std::process::id());
        let setting = |target: Target| async move {
            let client = target.connect(None).await.expect("connects");
            let row = client.query_one("SHOW idle_in_transaction_session_timeout", &[]).await.expect("shows");
            row.get::<_, String>(0)
        };
        let server_default = setting(Target::new(&url, &schema, Duration::ZERO).expect("parses")).await;
        assert_eq!(setting(Target::new(&url, &schema, Duration::from_millis(250)).expect("parses")).await, "250ms");
        assert_ne!(server_default, "250ms");

        let config = crate::fleet::FleetConfig::new(url.clone())
            .schema(schema.clone())
            .pool_size(1)
            .idle_in_transaction_timeout(Duration::from_millis(250));
        let fleet = crate::fleet::Fleet::connect(config).await.expect("connects");
        assert_eq!(fleet.store().config().idle_in_transaction_timeout, Duration::from_millis(250));
        assert_eq!(setting(fleet.target().clone()).await, "250ms");
        drop(fleet);
        let client =
            Target::new(&url, "public", Duration::ZERO).expect("parses").connect(None).await.expect("connects");
        let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")).await;
    }
}
