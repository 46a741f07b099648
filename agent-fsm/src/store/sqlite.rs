//! [`SqliteStore`]: the embedded checkpoint store, one SQLite file in WAL
//! mode (readers do not block the writer, and a step is one short
//! transaction appended to the log file).
//!
//! Tables: `agents` (id, machine, format, creation time, fork origin),
//! `events` (agent, seq, time, state name, event JSON), `snapshots`
//! (agent, seq, format, state name, snapshot JSON) and `effects` (agent,
//! kind, key, started and finished step, a timer's deadline and event).
//! The file's schema version is SQLite's `user_version`.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, Transaction, TransactionBehavior, params};

use super::{
    AgentInfo, Checkpoint, CheckpointStore, Effect, EffectKind, EventRecord, FORMAT_VERSION, InFlight, Snapshot,
    StepRecord, StoreError,
};

/// Milliseconds since the Unix epoch, as stores keep times (0 before it,
/// the largest `i64` past it).
fn to_millis(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The time `millis` after the Unix epoch (the epoch for a negative value).
fn from_millis(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

/// The schema version this build writes in the file's `user_version`.
const SCHEMA_VERSION: u32 = 1;

const SCHEMA: &str = "
CREATE TABLE agents (
    agent TEXT PRIMARY KEY, machine TEXT NOT NULL, format INTEGER NOT NULL,
    created INTEGER NOT NULL, forked_from TEXT, forked_at INTEGER
) WITHOUT ROWID;
CREATE TABLE events (
    agent TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL, state TEXT NOT NULL, event TEXT NOT NULL,
    origin TEXT,
    PRIMARY KEY (agent, seq)
) WITHOUT ROWID;
CREATE TABLE snapshots (
    agent TEXT NOT NULL, seq INTEGER NOT NULL, format INTEGER NOT NULL, state TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (agent, seq)
) WITHOUT ROWID;
CREATE TABLE effects (
    agent TEXT NOT NULL, kind INTEGER NOT NULL, key TEXT NOT NULL, started INTEGER NOT NULL,
    finished INTEGER, deadline INTEGER, event TEXT,
    PRIMARY KEY (agent, kind, key, started)
) WITHOUT ROWID;
-- The work in flight, which a step finishes by kind and key: a key reused
-- every turn (a deadline timer) would otherwise be looked up among all its
-- finished rows, a cost growing with the conversation.
CREATE INDEX effects_in_flight ON effects (agent, kind, key) WHERE finished IS NULL;
";

/// When SQLite waits for the disk (its `synchronous` pragma, in WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Synchronous {
    /// Every commit is on the disk when `append` returns: a step survives
    /// a power cut. The default.
    #[default]
    Full,
    /// Commits reach the disk at WAL checkpoints: a step survives the
    /// process being killed, not a power cut (the last steps may be lost,
    /// never half of one).
    Normal,
}

/// How a [`SqliteStore`] is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SqliteConfig {
    /// When commits wait for the disk.
    pub synchronous: Synchronous,
    /// A cap on the file's size in pages (SQLite's `max_page_count`); a
    /// write past it fails with [`StoreError::Full`]. `None`: no cap.
    pub max_pages: Option<u32>,
}

impl SqliteConfig {
    /// This configuration with `synchronous`.
    #[must_use]
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// This configuration with the file capped at `pages` pages.
    #[must_use]
    pub fn max_pages(mut self, pages: u32) -> Self {
        self.max_pages = Some(pages);
        self
    }
}

/// A checkpoint store in one SQLite file.
///
/// Several processes may open one file (the first creates its tables);
/// an agent is meant to be run by one of them at a time (see `Durable`).
/// SQLite keeps no checksum of its pages: a damaged file is refused where
/// what it holds no longer decodes or replays, or where snapshots or
/// effect rows remain of steps its log no longer holds (a page that lost
/// its last rows); other damage that still decodes (a byte flipped inside
/// an event's text) reads as a store holding other steps.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (or creates) the store at `path`, syncing every commit.
    ///
    /// # Errors
    /// [`StoreError::Read`] if the file cannot be opened or is not a
    /// database, [`StoreError::Write`] if the tables of a new file cannot
    /// be written,
    /// [`StoreError::UnknownFormat`] for a newer schema.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteConfig::default())
    }

    /// Opens (or creates) the store at `path` with `config`.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_with(path: impl AsRef<Path>, config: SqliteConfig) -> Result<Self, StoreError> {
        let mut conn = Connection::open(path).map_err(read_err)?;
        // Another process may hold the write lock for a moment.
        conn.busy_timeout(BUSY_TIMEOUT).map_err(read_err)?;
        let mode: String = when_free(|| conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)))
            .map_err(read_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Read(format!("the file refused WAL mode (it is in `{mode}` mode)").into()));
        }
        let sync = match config.synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        };
        when_free(|| conn.pragma_update(None, "synchronous", sync)).map_err(read_err)?;
        let mut version = schema_version(&conn)?;
        if version == 0 {
            // Another process may be creating the file's tables at this
            // moment: read the version again under the write lock, so that
            // only the first creates them and the others find them.
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(write_err)?;
            version = schema_version(&tx)?;
            if version == 0 {
                tx.execute_batch(&format!("{SCHEMA} PRAGMA user_version = {SCHEMA_VERSION};")).map_err(write_err)?;
                version = SCHEMA_VERSION;
            }
            tx.commit().map_err(write_err)?;
        }
        if version > SCHEMA_VERSION {
            return Err(StoreError::UnknownFormat {
                what: "the store file".to_owned(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if let Some(pages) = config.max_pages {
            conn.pragma_update(None, "max_page_count", pages).map_err(read_err)?;
        }
        Ok(Self { conn: Mutex::new(conn) })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A transaction interrupted by a panic is rolled back when it is
        // dropped: the connection is sound after one.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The schema version in the file's `user_version` (0: no tables yet).
fn schema_version(conn: &Connection) -> Result<u32, StoreError> {
    when_free(|| conn.pragma_query_value(None, "user_version", |row| row.get(0))).map_err(read_err)
}

/// How long a connection waits for another one's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// `f`, again while SQLite answers that the file is busy, for up to
/// [`BUSY_TIMEOUT`]: while connections open a new file at once (one
/// switching it to WAL, one creating the WAL index) SQLite answers busy
/// at once, without waiting as its busy timeout would.
fn when_free<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let start = std::time::Instant::now();
    loop {
        match f() {
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) && start.elapsed() < BUSY_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(1));
            }
            other => return other,
        }
    }
}

/// A failed write: [`StoreError::Full`] when the disk or the page cap is
/// full, [`StoreError::Write`] otherwise.
fn write_err(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => StoreError::Full(e.to_string()),
        _ => StoreError::Write(Box::new(e)),
    }
}

/// A read transaction on `conn`: the reads of one method see one state of
/// the file, not steps another connection appended between two of them
/// (a step's snapshot without its event reads as a log that lost steps).
/// Dropped, it ends (it wrote nothing to roll back).
fn read_tx(conn: &mut Connection) -> Result<Transaction<'_>, StoreError> {
    conn.transaction().map_err(read_err)
}

fn read_err(e: rusqlite::Error) -> StoreError {
    StoreError::Read(Box::new(e))
}

fn seq_to_sql(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// Column `i` of `row` as text, or why it is not.
fn text(row: &Row<'_>, i: usize) -> Result<Result<String, String>, rusqlite::Error> {
    Ok(match row.get_ref(i)? {
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            String::from_utf8(bytes.to_vec()).map_err(|_| format!("column {i} is not UTF-8"))
        }
        other => Err(format!("column {i} holds {:?}, not text", other.data_type())),
    })
}

/// Column `i` of `row` as a sequence number or step, or why it is not.
fn seq_col(row: &Row<'_>, i: usize) -> Result<Result<u64, String>, rusqlite::Error> {
    Ok(match row.get_ref(i)? {
        ValueRef::Integer(n) => u64::try_from(n).map_err(|_| format!("column {i} is negative")),
        other => Err(format!("column {i} holds {:?}, not an integer", other.data_type())),
    })
}

/// Column `i` of `row` as an integer (a time), or why it is not.
fn int_col(row: &Row<'_>, i: usize) -> Result<Result<i64, String>, rusqlite::Error> {
    Ok(match row.get_ref(i)? {
        ValueRef::Integer(n) => Ok(n),
        other => Err(format!("column {i} holds {:?}, not an integer", other.data_type())),
    })
}

/// The step that `sql` (a `MAX` over the agent's rows, `?1` the agent)
/// finds, `None` if it has no rows. A step that is not a sequence number
/// (text a hand edited in, a negative number) is a corrupt `what`.
fn max_step(conn: &Connection, sql: &str, agent: &str, what: &'static str) -> Result<Option<u64>, StoreError> {
    let found = conn
        .prepare_cached(sql)
        .and_then(|mut s| {
            s.query_row([agent], |row| {
                Ok(match row.get_ref(0)? {
                    ValueRef::Null => Ok(None),
                    _ => seq_col(row, 0)?.map(Some),
                })
            })
        })
        .map_err(read_err)?;
    found.map_err(|reason| StoreError::corrupt(agent, what, 0, reason))
}

/// The next sequence number of `agent`, or `None` if it is not in the store.
fn next_seq(conn: &Connection, agent: &str) -> Result<Option<u64>, StoreError> {
    let known = conn
        .prepare_cached("SELECT 1 FROM agents WHERE agent = ?1")
        .and_then(|mut s| s.query_row([agent], |_| Ok(())).optional())
        .map_err(read_err)?;
    if known.is_none() {
        return Ok(None);
    }
    let last = max_step(conn, "SELECT MAX(seq) FROM events WHERE agent = ?1", agent, "log")?;
    Ok(Some(last.map_or(1, |n| n.saturating_add(1))))
}

fn known_next(conn: &Connection, agent: &str) -> Result<u64, StoreError> {
    next_seq(conn, agent)?.ok_or_else(|| StoreError::UnknownAgent(agent.to_owned()))
}

/// Writes `step` in `tx`, checking that it is the agent's next one.
fn append_in(tx: &Connection, agent: &str, step: &StepRecord) -> Result<(), StoreError> {
    let expected = known_next(tx, agent)?;
    if step.seq != expected {
        return Err(StoreError::Conflict { agent: agent.to_owned(), expected, found: step.seq });
    }
    let seq = seq_to_sql(step.seq);
    tx.prepare_cached("INSERT INTO events (agent, seq, at, state, event, origin) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
        .and_then(|mut s| s.execute(params![agent, seq, to_millis(step.at), step.state, step.event, step.origin]))
        .map_err(write_err)?;
    let finishing = step.finished.iter().map(|(kind, key)| (*kind, key.as_str()));
    let replaced = step.started.iter().map(|e| (e.kind, e.key.as_str()));
    for (kind, key) in finishing.chain(replaced) {
        tx.prepare_cached(
            "UPDATE effects SET finished = ?1 WHERE agent = ?2 AND kind = ?3 AND key = ?4 AND finished IS NULL",
        )
        .and_then(|mut s| s.execute(params![seq, agent, kind.code(), key]))
        .map_err(write_err)?;
    }
    for effect in &step.started {
        tx.prepare_cached(
            "INSERT INTO effects (agent, kind, key, started, deadline, event) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .and_then(|mut s| {
            s.execute(params![agent, effect.kind.code(), effect.key, seq, effect.deadline.map(to_millis), effect.event])
        })
        .map_err(write_err)?;
    }
    if let Some(snapshot) = &step.snapshot {
        tx.prepare_cached("INSERT INTO snapshots (agent, seq, format, state, data) VALUES (?1, ?2, ?3, ?4, ?5)")
            .and_then(|mut s| s.execute(params![agent, seq, snapshot.format, snapshot.state, snapshot.data]))
            .map_err(write_err)?;
    }
    Ok(())
}

impl CheckpointStore for SqliteStore {
    fn create(&self, agent: &str, machine: &str, at: SystemTime, initial: &Snapshot) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(write_err)?;
        if next_seq(&tx, agent)?.is_some() {
            return Err(StoreError::AgentExists(agent.to_owned()));
        }
        tx.execute(
            "INSERT INTO agents (agent, machine, format, created) VALUES (?1, ?2, ?3, ?4)",
            params![agent, machine, FORMAT_VERSION, to_millis(at)],
        )
        .map_err(write_err)?;
        tx.execute(
            "INSERT INTO snapshots (agent, seq, format, state, data) VALUES (?1, 0, ?2, ?3, ?4)",
            params![agent, initial.format, initial.state, initial.data],
        )
        .map_err(write_err)?;
        tx.commit().map_err(write_err)
    }

    fn agent(&self, agent: &str) -> Result<Option<AgentInfo>, StoreError> {
        let mut conn = self.lock();
        let conn = read_tx(&mut conn)?;
        let Some(next_seq) = next_seq(&conn, agent)? else { return Ok(None) };
        let row = conn
            .query_row("SELECT machine, format, forked_from, forked_at FROM agents WHERE agent = ?1", [agent], |row| {
                Ok((text(row, 0)?, row.get::<_, u32>(1), row.get::<_, Option<String>>(2), row.get::<_, Option<i64>>(3)))
            })
            .map_err(read_err)?;
        let bad = |reason: String| StoreError::corrupt(agent, "agent", 0, reason);
        let machine = row.0.map_err(bad)?;
        let format = row.1.map_err(|e| bad(e.to_string()))?;
        let forked_from = row.2.map_err(|e| bad(e.to_string()))?;
        let forked_at = row.3.map_err(|e| bad(e.to_string()))?;
        let forked_from = forked_from.zip(forked_at).map(|(a, s)| (a, u64::try_from(s).unwrap_or(0)));
        // A snapshot or an effect row of a step past the log's last: the
        // log lost its last steps (a damaged page still reads, without
        // them), which would otherwise read as an agent that is behind.
        let beyond = max_step(
            &conn,
            "SELECT MAX(seq) FROM (SELECT MAX(seq) AS seq FROM snapshots WHERE agent = ?1
             UNION ALL SELECT MAX(started) FROM effects WHERE agent = ?1)",
            agent,
            "log",
        )?;
        if let Some(step) = beyond.filter(|&n| n >= next_seq) {
            return Err(StoreError::corrupt(
                agent,
                "log",
                next_seq,
                format!("step {step} has rows but the log ends before"),
            ));
        }
        Ok(Some(AgentInfo { machine, format, next_seq, forked_from }))
    }

    fn agents(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare_cached("SELECT agent FROM agents ORDER BY agent").map_err(read_err)?;
        let ids = stmt.query_map([], |row| row.get(0)).map_err(read_err)?;
        ids.collect::<Result<Vec<String>, _>>().map_err(read_err)
    }

    fn append(&self, agent: &str, step: &StepRecord) -> Result<(), StoreError> {
        self.append_all(agent, std::slice::from_ref(step))
    }

    /// One transaction for all the steps (one disk sync), rather than one
    /// per step.
    fn append_all(&self, agent: &str, steps: &[StepRecord]) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(write_err)?;
        for step in steps {
            append_in(&tx, agent, step)?;
        }
        tx.commit().map_err(write_err)
    }

    fn finish(&self, agent: &str, finished: &[(EffectKind, String)]) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(write_err)?;
        let last = seq_to_sql(known_next(&tx, agent)? - 1);
        for (kind, key) in finished {
            tx.prepare_cached(
                "UPDATE effects SET finished = ?1 WHERE agent = ?2 AND kind = ?3 AND key = ?4 AND finished IS NULL",
            )
            .and_then(|mut s| s.execute(params![last, agent, kind.code(), key]))
            .map_err(write_err)?;
        }
        tx.commit().map_err(write_err)
    }

    fn snapshot_at_or_before(&self, agent: &str, seq: u64) -> Result<Option<(u64, Snapshot)>, StoreError> {
        let mut conn = self.lock();
        let conn = read_tx(&mut conn)?;
        known_next(&conn, agent)?;
        let row = conn
            .prepare_cached(
                "SELECT seq, format, state, data FROM snapshots WHERE agent = ?1 AND seq <= ?2 ORDER BY seq DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![agent, seq_to_sql(seq)], |row| {
                    Ok((seq_col(row, 0)?, row.get::<_, i64>(1), text(row, 2)?, text(row, 3)?))
                })
                .optional()
            })
            .map_err(read_err)?;
        let Some((at, format, state, data)) = row else { return Ok(None) };
        let at = at.map_err(|reason| StoreError::corrupt(agent, "snapshot", seq, reason))?;
        let bad = |reason: String| StoreError::corrupt(agent, "snapshot", at, reason);
        let format = format.map_err(|e| bad(e.to_string()))?;
        // A version no release writes (a negative one, edited in) is a
        // damaged row, not a newer format to upgrade for.
        let format = u32::try_from(format).map_err(|_| bad(format!("format version {format} is not a version")))?;
        let snapshot = Snapshot { format, state: state.map_err(bad)?, data: data.map_err(bad)? };
        Ok(Some((at, snapshot)))
    }

    fn events(&self, agent: &str, after: u64, through: u64) -> Result<Vec<EventRecord>, StoreError> {
        let mut conn = self.lock();
        let conn = read_tx(&mut conn)?;
        known_next(&conn, agent)?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, at, state, event, origin FROM events WHERE agent = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq",
            )
            .map_err(read_err)?;
        let rows = stmt
            .query_map(params![agent, seq_to_sql(after), seq_to_sql(through)], |row| {
                Ok((
                    seq_col(row, 0)?,
                    row.get::<_, i64>(1),
                    text(row, 2)?,
                    text(row, 3)?,
                    row.get::<_, Option<String>>(4),
                ))
            })
            .map_err(read_err)?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, at, state, event, origin) = row.map_err(read_err)?;
            let seq = seq.map_err(|reason| StoreError::corrupt(agent, "event", after + 1, reason))?;
            let bad = |reason: String| StoreError::corrupt(agent, "event", seq, reason);
            out.push(EventRecord {
                seq,
                at: from_millis(at.map_err(|e| bad(e.to_string()))?),
                state: state.map_err(bad)?,
                event: event.map_err(bad)?,
                origin: origin.map_err(|e| bad(e.to_string()))?,
            });
        }
        Ok(out)
    }

    fn in_flight(&self, agent: &str, seq: u64) -> Result<Vec<InFlight>, StoreError> {
        let mut conn = self.lock();
        let conn = read_tx(&mut conn)?;
        known_next(&conn, agent)?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT kind, key, started, deadline, event FROM effects
                 WHERE agent = ?1 AND started <= ?2 AND (finished IS NULL OR finished > ?2)
                 ORDER BY started, kind, key",
            )
            .map_err(read_err)?;
        let rows = stmt
            .query_map(params![agent, seq_to_sql(seq)], |row| {
                Ok((
                    row.get::<_, i64>(0),
                    text(row, 1)?,
                    seq_col(row, 2)?,
                    row.get::<_, Option<i64>>(3),
                    row.get::<_, Option<String>>(4),
                ))
            })
            .map_err(read_err)?;
        let mut out = Vec::new();
        for row in rows {
            let (kind, key, started, deadline, event) = row.map_err(read_err)?;
            let bad = |reason: String| StoreError::corrupt(agent, "effect", seq, reason);
            let code = kind.map_err(|e| bad(e.to_string()))?;
            let kind = u8::try_from(code)
                .ok()
                .and_then(EffectKind::from_code)
                .ok_or_else(|| bad(format!("unknown effect kind {code}")))?;
            let effect = Effect {
                kind,
                key: key.map_err(bad)?,
                deadline: deadline.map_err(|e| bad(e.to_string()))?.map(from_millis),
                event: event.map_err(|e| bad(e.to_string()))?,
            };
            out.push(InFlight { effect, started: started.map_err(bad)? });
        }
        Ok(out)
    }

    fn checkpoints(&self, agent: &str) -> Result<Vec<Checkpoint>, StoreError> {
        let mut conn = self.lock();
        let conn = read_tx(&mut conn)?;
        known_next(&conn, agent)?;
        let first = conn
            .query_row(
                "SELECT a.created, s.state FROM agents a LEFT JOIN snapshots s ON s.agent = a.agent AND s.seq = 0
                 WHERE a.agent = ?1",
                [agent],
                |row| Ok((int_col(row, 0)?, row.get::<_, Option<String>>(1).ok().flatten())),
            )
            .map_err(read_err)?;
        let created = first.0.map_err(|reason| StoreError::corrupt(agent, "agent", 0, reason))?;
        let mut out =
            vec![Checkpoint { seq: 0, at: from_millis(created), state: first.1.unwrap_or_default(), snapshot: true }];
        let mut stmt = conn
            .prepare_cached(
                "SELECT e.seq, e.at, e.state, s.seq IS NOT NULL FROM events e
                 LEFT JOIN snapshots s ON s.agent = e.agent AND s.seq = e.seq
                 WHERE e.agent = ?1 ORDER BY e.seq",
            )
            .map_err(read_err)?;
        let rows = stmt
            .query_map([agent], |row| Ok((seq_col(row, 0)?, int_col(row, 1)?, text(row, 2)?, row.get(3)?)))
            .map_err(read_err)?;
        for row in rows {
            let (seq, at, state, snapshot) = row.map_err(read_err)?;
            let seq = seq.map_err(|reason| StoreError::corrupt(agent, "event", 0, reason))?;
            let bad = |reason: String| StoreError::corrupt(agent, "event", seq, reason);
            let at = at.map_err(bad)?;
            let state = state.map_err(bad)?;
            out.push(Checkpoint { seq, at: from_millis(at), state, snapshot });
        }
        Ok(out)
    }

    fn fork(&self, source: &str, seq: u64, new: &str) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(write_err)?;
        let last = known_next(&tx, source)? - 1;
        if next_seq(&tx, new)?.is_some() {
            return Err(StoreError::AgentExists(new.to_owned()));
        }
        if seq > last {
            return Err(StoreError::NoCheckpoint { agent: source.to_owned(), seq, last });
        }
        let at = seq_to_sql(seq);
        let copies = [
            "INSERT INTO agents (agent, machine, format, created, forked_from, forked_at)
             SELECT ?1, machine, format, created, ?2, ?3 FROM agents WHERE agent = ?2",
            "INSERT INTO events (agent, seq, at, state, event, origin)
             SELECT ?1, seq, at, state, event, origin FROM events WHERE agent = ?2 AND seq <= ?3",
            "INSERT INTO snapshots (agent, seq, format, state, data)
             SELECT ?1, seq, format, state, data FROM snapshots WHERE agent = ?2 AND seq <= ?3",
            "INSERT INTO effects (agent, kind, key, started, finished, deadline, event)
             SELECT ?1, kind, key, started, CASE WHEN finished <= ?3 THEN finished END, deadline, event
             FROM effects WHERE agent = ?2 AND started <= ?3",
        ];
        for sql in copies {
            tx.execute(sql, params![new, source, at]).map_err(write_err)?;
        }
        tx.commit().map_err(write_err)
    }
}
