//! [`SqliteStore`]: the embedded checkpoint store, one SQLite file in WAL
//! mode (readers do not block the writer, and a step is one short
//! transaction appended to the log file).
//!
//! Tables: `agents` (id, machine, format, creation time, fork origin),
//! `events` (agent, seq, time, state name, event JSON), `snapshots`
//! (agent, seq, format, state name, snapshot JSON) and `effects` (agent,
//! kind, key, started and finished step, a timer's deadline and event),
//! each row of the last three with its checksum (`sums.rs`). The file's
//! schema version is SQLite's `user_version`. A file can also be opened
//! for reading only (`read_only.rs`).

mod read_only;
mod rows;
mod schema;
mod sums;

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use self::rows::{
    BUSY_TIMEOUT, from_millis, int_col, known_next, max_step, next_seq, read_err, read_tx, seq_col, seq_to_sql, text,
    to_millis, when_free, write_err,
};
use super::{
    AgentInfo, Checkpoint, CheckpointStore, Effect, EffectKind, EventRecord, FORMAT_VERSION, InFlight, Snapshot,
    StepRecord, StoreError,
};

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
/// SQLite keeps no checksum of its pages, so the store keeps one of each
/// row it reads an agent back from (its log, snapshots and effects): a
/// damaged file is refused with [`StoreError::Corrupt`] where a row no
/// longer matches its checksum (a byte flipped inside an event's text),
/// where what it holds no longer decodes or replays, or where snapshots or
/// effect rows remain of steps its log no longer holds (a page that lost
/// its last rows). An effect's finished mark, written by a later step,
/// has a checksum of its own. Rows an earlier release wrote have no checksum, and
/// read as before; the listing of [`checkpoints`](CheckpointStore::checkpoints)
/// reads no checksum, as it does not read what a step holds.
///
/// What the checksums do not see: a row's agent id (a fork copies its
/// source's rows with their checksums), so a damaged id moves the row to
/// another agent, work in flight included; damage to SQLite's own
/// structure, its tree pages (which `PRAGMA integrity_check` finds, and
/// the store does not run, as it reads the whole file) and its
/// write-ahead log (`-wal`): a damaged, cut or deleted log, or an older
/// one put beside the file, reads as the agent at an earlier step, or
/// without it. Keep the log with its file, and copy a live store with
/// SQLite's backup (`VACUUM INTO`), not by copying its files.
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
        schema::migrate(&mut conn)?;
        if let Some(pages) = config.max_pages {
            conn.pragma_update(None, "max_page_count", pages).map_err(read_err)?;
        }
        Ok(Self { conn: Mutex::new(conn) })
    }

    /// Opens the store at `path` for reading only: a copy to look into, a
    /// file on a read-only mount or in a directory the process may not
    /// write. Nothing is written to the file (an earlier release's file is
    /// read as it is, not given the checksum columns), and every write
    /// through the store fails with [`StoreError::Write`]. Reads see the
    /// file as it is at each read, steps another process appends included.
    ///
    /// A file in WAL mode is read through an index SQLite keeps beside it
    /// (`<file>-shm`). Where that cannot be created, a file closed cleanly
    /// is read without it, as a file nobody writes; one whose write-ahead
    /// log (`<file>-wal`) still holds steps cannot be, and is an error.
    ///
    /// # Errors
    /// [`StoreError::Read`] if the file does not exist, cannot be read, is
    /// not a database or holds no store, or if its log cannot be read;
    /// [`StoreError::UnknownFormat`] for a newer schema.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Ok(Self { conn: Mutex::new(read_only::open(path.as_ref())?) })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A transaction interrupted by a panic is rolled back when it is
        // dropped: the connection is sound after one.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Writes `step` in `tx`, checking that it is the agent's next one.
fn append_in(tx: &Connection, agent: &str, step: &StepRecord) -> Result<(), StoreError> {
    let expected = known_next(tx, agent)?;
    if step.seq != expected {
        return Err(StoreError::Conflict { agent: agent.to_owned(), expected, found: step.seq });
    }
    let (seq, at) = (seq_to_sql(step.seq), to_millis(step.at));
    let sum = sums::event(seq, at, &step.state, &step.event, step.origin.as_deref());
    tx.prepare_cached(
        "INSERT INTO events (agent, seq, at, state, event, origin, sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )
    .and_then(|mut s| s.execute(params![agent, seq, at, step.state, step.event, step.origin, sum]))
    .map_err(write_err)?;
    let finishing = step.finished.iter().map(|(kind, key)| (*kind, key.as_str()));
    let replaced = step.started.iter().map(|e| (e.kind, e.key.as_str()));
    for (kind, key) in finishing.chain(replaced) {
        mark_finished(tx, agent, kind, key, seq)?;
    }
    for effect in &step.started {
        let (kind, deadline) = (i64::from(effect.kind.code()), effect.deadline.map(to_millis));
        let sum = sums::effect(kind, &effect.key, seq, deadline, effect.event.as_deref());
        tx.prepare_cached(
            "INSERT INTO effects (agent, kind, key, started, deadline, event, sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .and_then(|mut s| s.execute(params![agent, kind, effect.key, seq, deadline, effect.event, sum]))
        .map_err(write_err)?;
    }
    if let Some(snapshot) = &step.snapshot {
        insert_snapshot(tx, agent, seq, snapshot)?;
    }
    Ok(())
}

/// Marks `agent`'s work in flight of `kind` and `key` finished at step
/// `seq`, with the mark's checksum.
fn mark_finished(tx: &Connection, agent: &str, kind: EffectKind, key: &str, seq: i64) -> Result<(), StoreError> {
    let fsum = sums::finished(i64::from(kind.code()), key, seq);
    tx.prepare_cached(
        "UPDATE effects SET finished = ?1, fsum = ?5 WHERE agent = ?2 AND kind = ?3 AND key = ?4 AND finished IS NULL",
    )
    .and_then(|mut s| s.execute(params![seq, agent, kind.code(), key, fsum]))
    .map_err(write_err)?;
    Ok(())
}

/// Writes `snapshot` as `agent`'s at step `seq`, with its checksum.
fn insert_snapshot(tx: &Connection, agent: &str, seq: i64, snapshot: &Snapshot) -> Result<(), StoreError> {
    let sum = sums::snapshot(seq, i64::from(snapshot.format), &snapshot.state, &snapshot.data);
    tx.prepare_cached("INSERT INTO snapshots (agent, seq, format, state, data, sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
        .and_then(|mut s| s.execute(params![agent, seq, snapshot.format, snapshot.state, snapshot.data, sum]))
        .map_err(write_err)?;
    Ok(())
}

impl CheckpointStore for SqliteStore {
    fn create(&self, agent: &str, machine: &str, at: SystemTime, initial: &Snapshot) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(write_err)?;
        if next_seq(&tx, agent)?.is_some() {
            return Err(StoreError::AgentExists(agent.to_owned()));
        }
        // Steps of this id with no row in `agents`: that row was lost (a
        // damaged page), and the agent is not new.
        let orphaned: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM snapshots WHERE agent = ?1) OR EXISTS (SELECT 1 FROM events WHERE agent = ?1)",
                [agent],
                |row| row.get(0),
            )
            .map_err(read_err)?;
        if orphaned {
            let reason = "its steps are in the file but its row of `agents` is gone: the file was damaged";
            return Err(StoreError::corrupt(agent, "agent", 0, reason));
        }
        tx.execute(
            "INSERT INTO agents (agent, machine, format, created) VALUES (?1, ?2, ?3, ?4)",
            params![agent, machine, FORMAT_VERSION, to_millis(at)],
        )
        .map_err(write_err)?;
        insert_snapshot(&tx, agent, 0, initial)?;
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
            mark_finished(&tx, agent, *kind, key, last)?;
        }
        tx.commit().map_err(write_err)
    }

    fn snapshot_at_or_before(&self, agent: &str, seq: u64) -> Result<Option<(u64, Snapshot)>, StoreError> {
        let mut conn = self.lock();
        let conn = read_tx(&mut conn)?;
        known_next(&conn, agent)?;
        let row = conn
            .prepare_cached(
                "SELECT seq, format, state, data, sum FROM snapshots
                 WHERE agent = ?1 AND seq <= ?2 ORDER BY seq DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![agent, seq_to_sql(seq)], |row| {
                    Ok((seq_col(row, 0)?, row.get::<_, i64>(1), text(row, 2)?, text(row, 3)?, row.get(4)))
                })
                .optional()
            })
            .map_err(read_err)?;
        let Some((at, format, state, data, sum)) = row else { return Ok(None) };
        let at = at.map_err(|reason| StoreError::corrupt(agent, "snapshot", seq, reason))?;
        let bad = |reason: String| StoreError::corrupt(agent, "snapshot", at, reason);
        let format = format.map_err(|e| bad(e.to_string()))?;
        let (state, data) = (state.map_err(bad)?, data.map_err(bad)?);
        sums::check(sum, sums::snapshot(seq_to_sql(at), format, &state, &data)).map_err(bad)?;
        // A version no release writes (a negative one, edited in) is a
        // damaged row, not a newer format to upgrade for.
        let format = u32::try_from(format).map_err(|_| bad(format!("format version {format} is not a version")))?;
        Ok(Some((at, Snapshot { format, state, data })))
    }

    fn events(&self, agent: &str, after: u64, through: u64) -> Result<Vec<EventRecord>, StoreError> {
        let mut conn = self.lock();
        let conn = read_tx(&mut conn)?;
        known_next(&conn, agent)?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, at, state, event, origin, sum FROM events
                 WHERE agent = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq",
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
                    row.get::<_, Option<i64>>(5),
                ))
            })
            .map_err(read_err)?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, at, state, event, origin, sum) = row.map_err(read_err)?;
            let seq = seq.map_err(|reason| StoreError::corrupt(agent, "event", after + 1, reason))?;
            let bad = |reason: String| StoreError::corrupt(agent, "event", seq, reason);
            let at = at.map_err(|e| bad(e.to_string()))?;
            let (state, event) = (state.map_err(bad)?, event.map_err(bad)?);
            let origin = origin.map_err(|e| bad(e.to_string()))?;
            sums::check(sum, sums::event(seq_to_sql(seq), at, &state, &event, origin.as_deref())).map_err(bad)?;
            out.push(EventRecord { seq, at: from_millis(at), state, event, origin });
        }
        Ok(out)
    }

    fn in_flight(&self, agent: &str, seq: u64) -> Result<Vec<InFlight>, StoreError> {
        let mut conn = self.lock();
        let conn = read_tx(&mut conn)?;
        known_next(&conn, agent)?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT kind, key, started, deadline, event, sum, finished, fsum FROM effects
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
                    row.get::<_, Option<i64>>(5),
                    row.get::<_, Option<i64>>(6),
                    row.get::<_, Option<i64>>(7),
                ))
            })
            .map_err(read_err)?;
        let mut out = Vec::new();
        for row in rows {
            let (kind, key, started, deadline, event, sum, finished, fsum) = row.map_err(read_err)?;
            let bad = |reason: String| StoreError::corrupt(agent, "effect", seq, reason);
            let code = kind.map_err(|e| bad(e.to_string()))?;
            let (key, started) = (key.map_err(bad)?, started.map_err(bad)?);
            let deadline = deadline.map_err(|e| bad(e.to_string()))?;
            let event = event.map_err(|e| bad(e.to_string()))?;
            sums::check(sum, sums::effect(code, &key, seq_to_sql(started), deadline, event.as_deref())).map_err(bad)?;
            let finished = finished.map_err(|e| bad(e.to_string()))?;
            sums::check_finished(fsum, code, &key, finished).map_err(bad)?;
            let kind = u8::try_from(code)
                .ok()
                .and_then(EffectKind::from_code)
                .ok_or_else(|| bad(format!("unknown effect kind {code}")))?;
            let effect = Effect { kind, key, deadline: deadline.map(from_millis), event };
            out.push(InFlight { effect, started });
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
            "INSERT INTO events (agent, seq, at, state, event, origin, sum)
             SELECT ?1, seq, at, state, event, origin, sum FROM events WHERE agent = ?2 AND seq <= ?3",
            "INSERT INTO snapshots (agent, seq, format, state, data, sum)
             SELECT ?1, seq, format, state, data, sum FROM snapshots WHERE agent = ?2 AND seq <= ?3",
            "INSERT INTO effects (agent, kind, key, started, finished, deadline, event, sum, fsum)
             SELECT ?1, kind, key, started, CASE WHEN finished <= ?3 THEN finished END, deadline, event, sum,
                 CASE WHEN finished <= ?3 THEN fsum END
             FROM effects WHERE agent = ?2 AND started <= ?3",
        ];
        for sql in copies {
            tx.execute(sql, params![new, source, at]).map_err(write_err)?;
        }
        tx.commit().map_err(write_err)
    }
}
