//! Opening a store file for reading only: a copy to look into, a file on a
//! read-only mount, or one owned by the service that runs the agents.
//! Nothing is written to the file, its tables are not migrated, and a file
//! in a directory where SQLite cannot create its shared-memory index is
//! still read.

use std::path::Path;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::rows::{BUSY_TIMEOUT, read_err, when_free};
use super::schema;
use crate::store::StoreError;

/// The flags of a connection that never writes (the URI flag as in
/// `Connection::open`, so that both read a path the same way).
fn flags() -> OpenFlags {
    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX
}

/// A read-only connection to the store file at `path`, its schema checked.
///
/// A file in WAL mode is read through a shared-memory index beside it
/// (`<file>-shm`), which a reader creates when it is missing. Where it
/// cannot (a read-only directory), SQLite refuses the first read; then,
/// if no write-ahead log holds steps beside the file (it was closed
/// cleanly, so everything is in the file itself), the file is read as
/// immutable, without the index. A log that holds steps, without its
/// index, cannot be read without writing: that is an error saying so.
pub(super) fn open(path: &Path) -> Result<Connection, StoreError> {
    let conn = connect(path)?;
    let conn = match when_free(|| schema::version(&conn)) {
        Ok(_) => conn,
        Err(e) if e.sqlite_error_code() == Some(ErrorCode::CannotOpen) => {
            if log_holds_steps(path) {
                return Err(StoreError::Read(
                    format!(
                        "{}: its write-ahead log holds steps, and the index to read it by cannot be created \
                         beside it (a read-only directory); open it where the directory is writable ({e})",
                        path.display()
                    )
                    .into(),
                ));
            }
            connect(Path::new(&immutable_uri(path)))?
        }
        Err(e) => return Err(read_err(e)),
    };
    check(&conn, path)?;
    Ok(conn)
}

fn connect(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(path, flags()).map_err(read_err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(read_err)?;
    Ok(conn)
}

/// Whether a write-ahead log beside `path` holds anything.
fn log_holds_steps(path: &Path) -> bool {
    let mut log = path.as_os_str().to_owned();
    log.push("-wal");
    std::fs::metadata(log).is_ok_and(|m| m.len() > 0)
}

/// Checks that the file holds a store this build reads. A file an earlier
/// release created has no checksum columns, and cannot gain them without
/// a write: views of its tables with an empty checksum stand in for them,
/// in the connection's own (temporary) schema, so that its rows read as
/// such rows do in a file opened for writing.
fn check(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let version = schema::schema_version(conn)?;
    if version == 0 {
        return Err(StoreError::Read(format!("{}: no agent-fsm store tables in the file", path.display()).into()));
    }
    schema::readable(version)?;
    if !schema::has_sums(conn)? {
        conn.execute_batch(
            "CREATE TEMP VIEW events AS SELECT agent, seq, at, state, event, origin, NULL AS sum FROM main.events;
             CREATE TEMP VIEW snapshots AS SELECT agent, seq, format, state, data, NULL AS sum FROM main.snapshots;
             CREATE TEMP VIEW effects AS
                 SELECT agent, kind, key, started, finished, deadline, event, NULL AS sum, NULL AS fsum
                 FROM main.effects;",
        )
        .map_err(read_err)?;
    } else if !schema::has_finished_sums(conn)? {
        conn.execute_batch(
            "CREATE TEMP VIEW effects AS
                 SELECT agent, kind, key, started, finished, deadline, event, sum, NULL AS fsum FROM main.effects;",
        )
        .map_err(read_err)?;
    }
    Ok(())
}

/// `path` as an SQLite URI that opens it immutable: every byte but the
/// unreserved ones and `/` percent-encoded, so that a `?`, `#` or `%` in
/// a name stays part of it.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for &byte in path_bytes(path).iter() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(path.as_os_str().as_bytes())
}

/// Elsewhere, SQLite's URIs name a file with forward slashes, a drive
/// after one more.
#[cfg(not(unix))]
fn path_bytes(path: &Path) -> std::borrow::Cow<'_, [u8]> {
    let mut text = path.to_string_lossy().replace('\\', "/");
    if path.is_absolute() && !text.starts_with('/') {
        text.insert(0, '/');
    }
    std::borrow::Cow::Owned(text.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::immutable_uri;
    use std::path::Path;

    #[test]
    fn a_uri_keeps_every_byte_of_the_name() {
        assert_eq!(immutable_uri(Path::new("/srv/a b/x?y#z%.db")), "file:/srv/a%20b/x%3Fy%23z%25.db?immutable=1");
        assert_eq!(immutable_uri(Path::new("rel/agents-1_~.db")), "file:rel/agents-1_~.db?immutable=1");
    }
}
