//! The SQLite store's row checksums: a byte changed inside a row that
//! still decodes (a word of an event, a digit of a snapshot, a time, a
//! timer's deadline) is `StoreError::Corrupt`, not another step; rows
//! without a checksum (as an earlier release wrote them) read as before;
//! a file an earlier release created gains the columns when it is opened
//! and checks the rows written from then on; a fork's rows keep theirs.

use std::path::Path;

use agent_fsm::store::{CheckpointStore, SqliteStore, StoreError, restore, restore_at};

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

/// Runs `sql` on the file at `path`, as damage would, and checks that it
/// changed a row.
fn edit(path: &Path, sql: &str) {
    let raw = rusqlite::Connection::open(path).expect("raw");
    assert!(raw.execute(sql, []).expect("edits") > 0, "{sql} changed nothing");
}

/// Asserts `result` is a corrupt `what` row found by its checksum.
fn assert_damaged<T: std::fmt::Debug>(sql: &str, what: &str, result: Result<T, StoreError>) {
    match result {
        Err(StoreError::Corrupt { what: found, reason, .. }) if found == what && reason.contains("checksum") => {}
        other => panic!("{sql}: {other:?}, not a {what} row failing its checksum"),
    }
}

#[test]
fn a_change_inside_a_row_that_still_decodes_is_corrupt() {
    for (sql, what) in [
        ("UPDATE events SET event = replace(event, 'one', 'two') WHERE agent = 'a' AND seq = 1", "event"),
        ("UPDATE events SET at = at + 1 WHERE agent = 'a' AND seq = 3", "event"),
        ("UPDATE events SET state = 'Calling' WHERE agent = 'a' AND seq = 2", "event"),
        (
            "UPDATE snapshots SET data = replace(data, '\"calls\":0', '\"calls\":7') WHERE agent = 'a' AND seq = 0",
            "snapshot",
        ),
        ("UPDATE effects SET deadline = deadline + 1000 WHERE agent = 'a' AND finished IS NULL AND kind = 3", "effect"),
        ("UPDATE effects SET key = 'call-9' WHERE agent = 'a' AND finished IS NULL AND key = 'call-3'", "effect"),
        // The checksum itself damaged into text.
        ("UPDATE events SET sum = 'x' || sum WHERE agent = 'a' AND seq = 2", "event"),
        // Finished work's mark moved past the step read, or lost: either
        // would bring it back into flight, to be performed again.
        ("UPDATE effects SET finished = finished + 16 WHERE agent = 'a' AND finished IS NOT NULL", "effect"),
        ("UPDATE effects SET finished = NULL WHERE agent = 'a' AND finished IS NOT NULL", "effect"),
        ("UPDATE effects SET fsum = 'x' WHERE agent = 'a' AND finished IS NULL", "effect"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("agents.db");
        let (store, _) = written(&path);
        let read = |store: &SqliteStore| match what {
            "event" => store.events("a", 0, 5).map(|rows| rows.len()),
            "snapshot" => store.snapshot_at_or_before("a", 0).map(|found| usize::from(found.is_some())),
            _ => store.in_flight("a", 5).map(|rows| rows.len()),
        };
        read(&store).expect("reads before the damage");
        edit(&path, sql);
        assert_damaged(sql, what, read(&store));
    }
    // What a restore reads is checked: the last step, and the work in flight.
    for sql in [
        "UPDATE events SET event = replace(event, 'three', 'four') WHERE agent = 'a' AND seq = 5",
        "UPDATE effects SET deadline = deadline + 1000 WHERE agent = 'a' AND finished IS NULL AND kind = 3",
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("agents.db");
        let (store, _) = written(&path);
        edit(&path, sql);
        let restored = restore::<Machine, _>(&store, "a").map(|r| r.next_seq);
        assert!(
            matches!(&restored, Err(StoreError::Corrupt { reason, .. }) if reason.contains("checksum")),
            "{sql}: {restored:?}"
        );
    }
}

/// An event's origin changed is found by `restore_at`, which reads the
/// steps up to the one asked for; the row mended, the step reads again.
#[test]
fn an_origin_changed_is_found_by_restore_at_and_reads_again_mended() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (store, _) = written(&path);
    let step_two = restore_at::<Machine, _>(&store, "a", 2).expect("reads");
    edit(&path, "UPDATE events SET origin = 'elsewhere' WHERE agent = 'a' AND seq = 2");
    assert_damaged("origin", "event", restore_at::<Machine, _>(&store, "a", 2).map(|_| ()));
    edit(&path, "UPDATE events SET origin = NULL WHERE agent = 'a' AND seq = 2");
    assert_same(&restore_at::<Machine, _>(&store, "a", 2).expect("mended"), &step_two);
}

#[test]
fn rows_without_a_checksum_read_as_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (store, agent) = written(&path);
    for table in ["events", "snapshots", "effects"] {
        edit(&path, &format!("UPDATE {table} SET sum = NULL"));
    }
    edit(&path, "UPDATE effects SET fsum = NULL WHERE finished IS NOT NULL");
    let restored = restore::<Machine, _>(&store, "a").expect("reads");
    assert_same(&restored.machine, &agent.machine);
    assert_eq!(restored.in_flight.len(), 2);
    // Unchecked, a change that still decodes reads as written.
    edit(&path, "UPDATE events SET at = at + 1 WHERE agent = 'a' AND seq = 3");
    restore::<Machine, _>(&store, "a").expect("reads");
    edit(&path, "UPDATE effects SET finished = finished + 16 WHERE agent = 'a' AND finished IS NOT NULL");
    assert!(restore::<Machine, _>(&store, "a").expect("reads").in_flight.len() > 2, "read as written");
}

#[test]
fn a_file_an_earlier_release_created_gains_the_checksums() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (store, mut agent) = written(&path);
    drop(store);
    {
        let raw = rusqlite::Connection::open(&path).expect("raw");
        raw.execute_batch(
            "ALTER TABLE events DROP COLUMN sum; ALTER TABLE snapshots DROP COLUMN sum;
             ALTER TABLE effects DROP COLUMN sum; ALTER TABLE effects DROP COLUMN fsum;",
        )
        .expect("drops the columns");
    }
    let store = SqliteStore::open(&path).expect("reopens");
    let restored = restore::<Machine, _>(&store, "a").expect("the old rows read");
    assert_same(&restored.machine, &agent.machine);
    agent.step(&store, Event::Reply(3, "model: three".to_owned())).expect("reply");
    let raw = rusqlite::Connection::open(&path).expect("raw");
    let summed: i64 =
        raw.query_row("SELECT count(*) FROM events WHERE sum IS NOT NULL", [], |row| row.get(0)).expect("counts");
    assert_eq!(summed, 1, "the step written since");
    edit(&path, "UPDATE events SET at = at + 1 WHERE agent = 'a' AND seq = 6");
    assert_damaged("at", "event", restore::<Machine, _>(&store, "a").map(|r| r.next_seq));
    // Opened again, the file is left as it is.
    drop(store);
    SqliteStore::open(&path).expect("reopens");
}

/// A file the release before this one created: its rows have their
/// checksums, its effects' finished marks none. It gains the column; its
/// marks read as they are, the marks written since are checked.
#[test]
fn a_file_without_the_finished_marks_checksums_gains_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (store, mut agent) = written(&path);
    drop(store);
    edit(&path, "UPDATE effects SET fsum = NULL WHERE finished IS NOT NULL");
    rusqlite::Connection::open(&path)
        .and_then(|raw| raw.execute_batch("ALTER TABLE effects DROP COLUMN fsum;"))
        .expect("drops the column");
    let store = SqliteStore::open(&path).expect("reopens");
    assert_eq!(restore::<Machine, _>(&store, "a").expect("the old marks read").in_flight.len(), 2);
    // The reply finishes the call in flight: its mark has a checksum.
    agent.step(&store, Event::Reply(3, "model: three".to_owned())).expect("reply");
    let raw = rusqlite::Connection::open(&path).expect("raw");
    let marked: i64 = raw
        .query_row("SELECT count(*) FROM effects WHERE finished = 6 AND fsum IS NOT NULL", [], |row| row.get(0))
        .expect("counts");
    assert!(marked >= 1, "the mark written since has its checksum");
    edit(&path, "UPDATE effects SET finished = 9 WHERE agent = 'a' AND finished = 6");
    assert_damaged("finished", "effect", store.in_flight("a", 6).map(|rows| rows.len()));
}

#[test]
fn a_fork_keeps_its_rows_checksums() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (store, agent) = written(&path);
    store.fork("a", 5, "b").expect("forks");
    let forked = restore::<Machine, _>(&store, "b").expect("the fork reads");
    assert_same(&forked.machine, &agent.machine);
    edit(&path, "UPDATE events SET at = at + 1 WHERE agent = 'b' AND seq = 4");
    assert_damaged("at", "event", restore::<Machine, _>(&store, "b").map(|r| r.next_seq));
    restore::<Machine, _>(&store, "a").expect("the source still reads");
    // Its finished marks keep their checksums too.
    edit(&path, "UPDATE events SET at = at - 1 WHERE agent = 'b' AND seq = 4");
    restore::<Machine, _>(&store, "b").expect("mended");
    edit(&path, "UPDATE effects SET finished = finished + 16 WHERE agent = 'b' AND finished IS NOT NULL");
    assert_damaged("finished", "effect", restore::<Machine, _>(&store, "b").map(|r| r.next_seq));
}

/// An agent whose row of `agents` was lost while its steps remain (a
/// damaged page): it is unknown to a restore, and creating it again, as
/// a spawn then would, is refused as a damaged file, not as a failed
/// write or a new agent.
#[test]
fn steps_left_without_their_agent_are_a_damaged_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (store, _) = written(&path);
    let (_, initial) = store.snapshot_at_or_before("a", 0).expect("reads").expect("the first snapshot");
    let machine = store.agent("a").expect("reads").expect("the agent").machine;
    edit(&path, "DELETE FROM agents WHERE agent = 'a'");
    assert!(matches!(restore::<Machine, _>(&store, "a").map(|r| r.next_seq), Err(StoreError::UnknownAgent(_))));
    let created = store.create("a", &machine, std::time::SystemTime::now(), &initial);
    assert!(matches!(&created, Err(StoreError::Corrupt { what: "agent", .. })), "{created:?}");
    // An id with nothing left of it is created as before.
    store.create("b", &machine, std::time::SystemTime::now(), &initial).expect("a new agent");
}

/// Work read as in flight at an earlier step, finished since: its mark,
/// past the step read, matches its checksum and reads as written.
#[test]
fn work_finished_after_the_step_read_reads_with_its_mark() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (store, _) = written(&path);
    let raw = rusqlite::Connection::open(&path).expect("raw");
    let (started, finished): (i64, i64) = raw
        .query_row(
            "SELECT started, finished FROM effects WHERE agent = 'a' AND finished IS NOT NULL AND fsum IS NOT NULL
             ORDER BY started LIMIT 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .expect("a finished mark");
    assert!(finished > started);
    for seq in started..finished {
        let read = store.in_flight("a", u64::try_from(seq).expect("a step")).expect("reads");
        assert!(!read.is_empty(), "in flight at step {seq}");
    }
}

/// Opening a file that has every column this build writes takes no write
/// lock: a store opens beside another connection in the middle of a
/// write, without waiting for it to end.
#[test]
fn opening_a_current_file_does_not_wait_for_a_writer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let (store, _) = written(&path);
    drop(store);
    let raw = rusqlite::Connection::open(&path).expect("raw");
    raw.execute_batch("BEGIN IMMEDIATE; INSERT INTO agents (agent, machine, format, created) VALUES ('x', 'm', 1, 0);")
        .expect("a write under way");
    let started = std::time::Instant::now();
    let opened = SqliteStore::open(&path);
    assert!(opened.is_ok(), "{opened:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "waited {:?} for the writer", started.elapsed());
    raw.execute_batch("ROLLBACK").expect("rolled back");
}
