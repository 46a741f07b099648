//! The SQLite store's tables, created in a new file, and the columns an
//! earlier release's file lacks, added when it is opened.

use rusqlite::{Connection, TransactionBehavior};

use super::rows::{read_err, when_free, write_err};
use crate::store::StoreError;

/// The schema version this build writes in the file's `user_version`.
pub(super) const SCHEMA_VERSION: u32 = 1;

const SCHEMA: &str = "
CREATE TABLE agents (
    agent TEXT PRIMARY KEY, machine TEXT NOT NULL, format INTEGER NOT NULL,
    created INTEGER NOT NULL, forked_from TEXT, forked_at INTEGER
) WITHOUT ROWID;
-- sum: the row's checksum (see sums.rs), fsum an effect's finished mark's;
-- NULL in rows an earlier release wrote.
CREATE TABLE events (
    agent TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL, state TEXT NOT NULL, event TEXT NOT NULL,
    origin TEXT, sum INTEGER,
    PRIMARY KEY (agent, seq)
) WITHOUT ROWID;
CREATE TABLE snapshots (
    agent TEXT NOT NULL, seq INTEGER NOT NULL, format INTEGER NOT NULL, state TEXT NOT NULL, data TEXT NOT NULL,
    sum INTEGER,
    PRIMARY KEY (agent, seq)
) WITHOUT ROWID;
CREATE TABLE effects (
    agent TEXT NOT NULL, kind INTEGER NOT NULL, key TEXT NOT NULL, started INTEGER NOT NULL,
    finished INTEGER, deadline INTEGER, event TEXT, sum INTEGER, fsum INTEGER,
    PRIMARY KEY (agent, kind, key, started)
) WITHOUT ROWID;
-- The work in flight, which a step finishes by kind and key: a key reused
-- every turn (a deadline timer) would otherwise be looked up among all its
-- finished rows, a cost growing with the conversation.
CREATE INDEX effects_in_flight ON effects (agent, kind, key) WHERE finished IS NULL;
";

/// The checksum columns added since the tables' first release: a file an
/// earlier release created gains them (SQLite adds a column without
/// rewriting the table), and its rows, with no checksum, are read as
/// before. An earlier release opening the file ignores them, and writes
/// rows with none.
const SUMS: &str = "
ALTER TABLE events ADD COLUMN sum INTEGER;
ALTER TABLE snapshots ADD COLUMN sum INTEGER;
ALTER TABLE effects ADD COLUMN sum INTEGER;
";

/// The checksum of an effect's finished mark, added after the others: a
/// file the release before created has `sum` and gains this one alone.
const FINISHED_SUM: &str = "ALTER TABLE effects ADD COLUMN fsum INTEGER;";

/// The schema version in the file's `user_version` (0: no tables yet).
pub(super) fn version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// [`version`], waiting while the file is busy.
pub(super) fn schema_version(conn: &Connection) -> Result<u32, StoreError> {
    when_free(|| version(conn)).map_err(read_err)
}

/// Whether the file's tables have their checksum columns.
pub(super) fn has_sums(conn: &Connection) -> Result<bool, StoreError> {
    let count: i64 = when_free(|| {
        conn.query_row(
            "SELECT count(*) FROM pragma_table_info('events') WHERE name = 'sum'
             UNION ALL SELECT count(*) FROM pragma_table_info('snapshots') WHERE name = 'sum'
             UNION ALL SELECT count(*) FROM pragma_table_info('effects') WHERE name = 'sum'
             ORDER BY 1 LIMIT 1",
            [],
            |row| row.get(0),
        )
    })
    .map_err(read_err)?;
    Ok(count == 1)
}

/// Whether the effects table has the checksum column of its finished
/// marks.
pub(super) fn has_finished_sums(conn: &Connection) -> Result<bool, StoreError> {
    let count: i64 = when_free(|| {
        conn.query_row("SELECT count(*) FROM pragma_table_info('effects') WHERE name = 'fsum'", [], |row| row.get(0))
    })
    .map_err(read_err)?;
    Ok(count == 1)
}

/// Whether the file's tables lack a checksum column this build writes.
fn lacks_sums(conn: &Connection) -> Result<bool, StoreError> {
    Ok(!has_sums(conn)? || !has_finished_sums(conn)?)
}

/// Creates the tables of a new file, adds the checksum columns to a file
/// an earlier release created, and checks the file's schema version.
///
/// # Errors
/// [`StoreError::UnknownFormat`] for a newer schema; a failed read or
/// write otherwise.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let mut version = schema_version(conn)?;
    if version == 0 || (version <= SCHEMA_VERSION && lacks_sums(conn)?) {
        // Another process may be creating the file's tables, or adding
        // the columns, at this moment: look again under the write lock,
        // so that only the first does it and the others find it done.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(write_err)?;
        version = schema_version(&tx)?;
        if version == 0 {
            tx.execute_batch(&format!("{SCHEMA} PRAGMA user_version = {SCHEMA_VERSION};")).map_err(write_err)?;
            version = SCHEMA_VERSION;
        } else if version <= SCHEMA_VERSION {
            if !has_sums(&tx)? {
                tx.execute_batch(SUMS).map_err(write_err)?;
            }
            if !has_finished_sums(&tx)? {
                tx.execute_batch(FINISHED_SUM).map_err(write_err)?;
            }
        }
        tx.commit().map_err(write_err)?;
    }
    readable(version)
}

/// An error if `version` is a newer schema than this build reads.
pub(super) fn readable(version: u32) -> Result<(), StoreError> {
    if version > SCHEMA_VERSION {
        return Err(StoreError::UnknownFormat {
            what: "the store file".to_owned(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}
