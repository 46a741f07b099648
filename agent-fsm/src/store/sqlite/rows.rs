//! The SQLite store's plumbing: times as it keeps them, its errors, a
//! retry while the file is busy, and columns read as what they should
//! hold (a damaged or hand-edited value is told apart from a failed read).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, Transaction};

use crate::store::StoreError;

/// Milliseconds since the Unix epoch, as stores keep times (0 before it,
/// the largest `i64` past it).
pub(super) fn to_millis(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The time `millis` after the Unix epoch (the epoch for a negative value).
pub(super) fn from_millis(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

/// How long a connection waits for another one's lock.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// `f`, again while SQLite answers that the file is busy, for up to
/// [`BUSY_TIMEOUT`]: while connections open a new file at once (one
/// switching it to WAL, one creating the WAL index) SQLite answers busy
/// at once, without waiting as its busy timeout would.
pub(super) fn when_free<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
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
/// full, [`StoreError::Write`] otherwise (saying so when the store or its
/// file is read-only).
pub(super) fn write_err(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => StoreError::Full(e.to_string()),
        Some(ErrorCode::ReadOnly) => StoreError::Write(format!("the store is open for reading only ({e})").into()),
        _ => StoreError::Write(Box::new(e)),
    }
}

/// A read transaction on `conn`: the reads of one method see one state of
/// the file, not steps another connection appended between two of them
/// (a step's snapshot without its event reads as a log that lost steps).
/// Dropped, it ends (it wrote nothing to roll back).
pub(super) fn read_tx(conn: &mut Connection) -> Result<Transaction<'_>, StoreError> {
    conn.transaction().map_err(read_err)
}

pub(super) fn read_err(e: rusqlite::Error) -> StoreError {
    StoreError::Read(Box::new(e))
}

pub(super) fn seq_to_sql(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// Column `i` of `row` as text, or why it is not.
pub(super) fn text(row: &Row<'_>, i: usize) -> Result<Result<String, String>, rusqlite::Error> {
    Ok(match row.get_ref(i)? {
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            String::from_utf8(bytes.to_vec()).map_err(|_| format!("column {i} is not UTF-8"))
        }
        other => Err(format!("column {i} holds {:?}, not text", other.data_type())),
    })
}

/// Column `i` of `row` as a sequence number or step, or why it is not.
pub(super) fn seq_col(row: &Row<'_>, i: usize) -> Result<Result<u64, String>, rusqlite::Error> {
    Ok(match row.get_ref(i)? {
        ValueRef::Integer(n) => u64::try_from(n).map_err(|_| format!("column {i} is negative")),
        other => Err(format!("column {i} holds {:?}, not an integer", other.data_type())),
    })
}

/// Column `i` of `row` as an integer (a time), or why it is not.
pub(super) fn int_col(row: &Row<'_>, i: usize) -> Result<Result<i64, String>, rusqlite::Error> {
    Ok(match row.get_ref(i)? {
        ValueRef::Integer(n) => Ok(n),
        other => Err(format!("column {i} holds {:?}, not an integer", other.data_type())),
    })
}

/// The step that `sql` (a `MAX` over the agent's rows, `?1` the agent)
/// finds, `None` if it has no rows. A step that is not a sequence number
/// (text a hand edited in, a negative number) is a corrupt `what`.
pub(super) fn max_step(
    conn: &Connection,
    sql: &str,
    agent: &str,
    what: &'static str,
) -> Result<Option<u64>, StoreError> {
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
pub(super) fn next_seq(conn: &Connection, agent: &str) -> Result<Option<u64>, StoreError> {
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

pub(super) fn known_next(conn: &Connection, agent: &str) -> Result<u64, StoreError> {
    next_seq(conn, agent)?.ok_or_else(|| StoreError::UnknownAgent(agent.to_owned()))
}
