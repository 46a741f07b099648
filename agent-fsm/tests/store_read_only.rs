//! `SqliteStore::open_read_only`: a store file read without a write to
//! it, beside a live writer (whose later steps it sees), in a directory
//! where nothing may be created (a file closed cleanly reads; one whose
//! log still holds steps is a typed error), an earlier release's file
//! (read as it is, not migrated), a file another connection holds
//! locked (busy, not read around the lock), and every file that is no
//! store.

use std::path::{Path, PathBuf};
use std::process::Command;

use agent_fsm::store::{CheckpointStore, SqliteStore, StoreError, restore};

#[path = "stores/chat.rs"]
mod chat_agent;

use chat_agent::{Agent, Event, Machine, assert_same, in_flight};

/// A store at `path` holding agent `a` after two turns and a prompt whose
/// call and deadline timer are in flight.
fn written(path: &Path) -> (SqliteStore, Agent) {
    let store = SqliteStore::open(path).expect("opens");
    let agent = in_flight(&store, "a");
    (store, agent)
}

/// A directory in which nothing can be created or removed, not even by
/// root (the immutable attribute), as a read-only mount would be; made
/// writable again when dropped, so that the temporary directory can go.
struct Frozen(PathBuf);

impl Frozen {
    fn new(dir: &Path) -> Self {
        let status = Command::new("chattr").arg("+i").arg(dir).status().expect("runs chattr");
        assert!(status.success(), "chattr +i {} failed: the test needs a file system with attributes", dir.display());
        let frozen = Self(dir.to_owned());
        assert!(std::fs::write(dir.join("probe"), b"x").is_err(), "the directory still takes new files");
        frozen
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// Asserts that `result` is a write refused because the store reads only.
fn assert_refused<T: std::fmt::Debug>(what: &str, result: Result<T, StoreError>) {
    match result {
        Err(StoreError::Write(e)) if e.to_string().contains("reading only") => {}
        other => panic!("{what}: {other:?}, not a write refused as read-only"),
    }
}

#[test]
fn a_reader_beside_a_writer_reads_its_steps_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (writer, mut agent) = written(&path);
    let reader = SqliteStore::open_read_only(&path).expect("opens for reading");
    assert_eq!(reader.agents().expect("lists"), ["a"]);
    assert_eq!(reader.checkpoints("a").expect("checkpoints"), writer.checkpoints("a").expect("checkpoints"));
    let restored = restore::<Machine, _>(&reader, "a").expect("restores");
    assert_same(&restored.machine, &agent.machine);
    assert_eq!(restored.in_flight.len(), 2);
    let open = &restored.in_flight[0].effect;
    assert_refused("finish", reader.finish("a", &[(open.kind, open.key.clone())]));
    assert_eq!(restore::<Machine, _>(&writer, "a").expect("restores").in_flight.len(), 2, "nothing was finished");

    // A step the writer appends later is read by the next read.
    agent.step(&writer, Event::Reply(3, "model: three".to_owned())).expect("reply");
    let restored = restore::<Machine, _>(&reader, "a").expect("restores again");
    assert_same(&restored.machine, &agent.machine);
    assert_eq!(restored.next_seq, writer.agent("a").expect("reads").expect("the agent").next_seq);

    let steps = reader.checkpoints("a").expect("checkpoints").len();
    assert_refused("fork", reader.fork("a", 3, "b"));
    let mut other = Agent::new(&writer, "c");
    assert_refused("append", other.step(&reader, Event::Prompt("user: x".to_owned())));
    assert_eq!(reader.agents().expect("lists"), ["a", "c"]);
    assert_eq!(writer.checkpoints("a").expect("checkpoints").len(), steps, "the writer's agent is as it was");
    assert!(writer.agent("b").expect("reads").is_none(), "no fork was written");
}

#[test]
fn a_file_closed_cleanly_reads_where_nothing_can_be_created() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (store, agent) = written(&path);
    drop(store);
    let before = std::fs::read(&path).expect("reads the file");
    // An empty log beside it (SQLite truncates rather than deletes it in
    // some modes) holds no steps.
    std::fs::write(dir.path().join("agents.db-wal"), b"").expect("an empty log");
    let frozen = Frozen::new(dir.path());
    assert!(SqliteStore::open(&path).is_err(), "opening for writing needs the directory");

    let reader = SqliteStore::open_read_only(&path).expect("opens for reading");
    let restored = restore::<Machine, _>(&reader, "a").expect("restores");
    assert_same(&restored.machine, &agent.machine);
    assert_eq!(restored.in_flight.len(), 2);
    assert_refused("fork", reader.fork("a", 3, "b"));
    drop(reader);
    drop(frozen);
    assert_eq!(std::fs::read(&path).expect("reads the file"), before, "the file is unchanged");
}

#[test]
fn a_log_holding_steps_without_its_index_is_an_error_not_an_older_agent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (_store, _) = written(&path);
    // What a killed writer leaves: the file, and its log holding the steps
    // the file does not hold yet, copied while the writer is live; the
    // index is not copied (and cannot be created beside them).
    let copy = tempfile::tempdir().expect("tempdir");
    for name in ["agents.db", "agents.db-wal"] {
        std::fs::copy(dir.path().join(name), copy.path().join(name)).expect("copies");
    }
    let path = copy.path().join("agents.db");
    assert!(std::fs::metadata(copy.path().join("agents.db-wal")).expect("the log").len() > 0);
    let _frozen = Frozen::new(copy.path());
    match SqliteStore::open_read_only(&path) {
        Err(StoreError::Read(e)) if e.to_string().contains("write-ahead log holds steps") => {}
        other => panic!("{other:?}, not an error naming the log"),
    }
}

#[test]
fn an_earlier_releases_file_is_read_as_it_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (store, agent) = written(&path);
    drop(store);
    let raw = rusqlite::Connection::open(&path).expect("raw");
    raw.execute_batch(
        "ALTER TABLE events DROP COLUMN sum; ALTER TABLE snapshots DROP COLUMN sum; ALTER TABLE effects DROP COLUMN sum;",
    )
    .expect("drops the columns");
    let reader = SqliteStore::open_read_only(&path).expect("opens for reading");
    let restored = restore::<Machine, _>(&reader, "a").expect("the old rows read");
    assert_same(&restored.machine, &agent.machine);
    assert_eq!(restored.in_flight.len(), 2);
    let sums: i64 = raw
        .query_row(
            "SELECT (SELECT count(*) FROM pragma_table_info('events') WHERE name = 'sum')
                  + (SELECT count(*) FROM pragma_table_info('snapshots') WHERE name = 'sum')
                  + (SELECT count(*) FROM pragma_table_info('effects') WHERE name = 'sum')",
            [],
            |row| row.get(0),
        )
        .expect("counts");
    assert_eq!(sums, 0, "the file gained no column");
}

/// A file the release before this one wrote: checksums on its rows, none
/// on its finished marks. Read as it is, gaining no column; in a current
/// file, a damaged mark is found by a reader too.
#[test]
fn the_release_befores_file_is_read_and_a_current_files_marks_are_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (store, agent) = written(&path);
    drop(store);
    let copy = dir.path().join("copy.db");
    std::fs::copy(&path, &copy).expect("a copy of the current file");
    let raw = rusqlite::Connection::open(&path).expect("raw");
    raw.execute_batch("ALTER TABLE effects DROP COLUMN fsum;").expect("drops the column");
    let reader = SqliteStore::open_read_only(&path).expect("opens for reading");
    let restored = restore::<Machine, _>(&reader, "a").expect("the rows read");
    assert_same(&restored.machine, &agent.machine);
    assert_eq!(restored.in_flight.len(), 2);
    let fsums: i64 = raw
        .query_row("SELECT count(*) FROM pragma_table_info('effects') WHERE name = 'fsum'", [], |row| row.get(0))
        .expect("counts");
    assert_eq!(fsums, 0, "the file gained no column");

    let raw = rusqlite::Connection::open(&copy).expect("raw");
    raw.execute("UPDATE effects SET finished = finished + 16 WHERE agent = 'a' AND finished IS NOT NULL", [])
        .expect("damages the marks");
    let reader = SqliteStore::open_read_only(&copy).expect("opens for reading");
    let read = reader.in_flight("a", 5);
    assert!(matches!(&read, Err(StoreError::Corrupt { what: "effect", .. })), "{read:?}");
}

#[test]
fn what_is_not_a_store_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.db");
    assert!(matches!(SqliteStore::open_read_only(&missing), Err(StoreError::Read(_))));
    assert!(!missing.exists(), "nothing was created");

    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other).expect("raw").execute_batch("CREATE TABLE t (x)").expect("a table");
    match SqliteStore::open_read_only(&other) {
        Err(StoreError::Read(e)) if e.to_string().contains("no agent-fsm store tables") => {}
        other => panic!("{other:?}"),
    }

    let text = dir.path().join("text.db");
    std::fs::write(&text, "not a database, but long enough to be read as a header by SQLite ..........")
        .expect("writes");
    assert!(matches!(SqliteStore::open_read_only(&text), Err(StoreError::Read(_))));

    let newer = dir.path().join("newer.db");
    drop(SqliteStore::open(&newer).expect("opens"));
    rusqlite::Connection::open(&newer).expect("raw").pragma_update(None, "user_version", 9).expect("newer");
    match SqliteStore::open_read_only(&newer) {
        Err(StoreError::UnknownFormat { found: 9, supported: 1, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_name_with_uri_characters_reads_where_nothing_can_be_created() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents ?x=1#%41.db");
    let (store, agent) = written(&path);
    drop(store);
    let _frozen = Frozen::new(dir.path());
    let reader = SqliteStore::open_read_only(&path).expect("opens for reading");
    assert_same(&restore::<Machine, _>(&reader, "a").expect("restores").machine, &agent.machine);
}

/// A file another connection holds locked (SQLite's exclusive locking
/// mode) is not read around the lock, as a file nobody writes would be:
/// the reader waits its while, then reports the file busy.
#[test]
fn a_file_held_locked_is_an_error_not_read_around_the_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    drop(written(&path).0);
    let holder = rusqlite::Connection::open(&path).expect("raw");
    holder.pragma_update(None, "locking_mode", "EXCLUSIVE").expect("exclusive");
    holder.execute_batch("BEGIN EXCLUSIVE; DELETE FROM events; ").expect("holds the lock mid-write");
    match SqliteStore::open_read_only(&path) {
        Err(StoreError::Read(e)) if e.to_string().contains("locked") => {}
        other => panic!("{other:?}, not the file reported busy"),
    }
}
