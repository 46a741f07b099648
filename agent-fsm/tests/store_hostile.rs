//! A SQLite store whose rows someone edited by hand: a sequence number,
//! a time or an agent's creation time that is text rather than an
//! integer. Reading the agent, restoring it and listing its checkpoints
//! give `StoreError::Corrupt` (a store not to resume from), never
//! `StoreError::Read`, which reads as the file failing to be read.

use std::path::Path;

use agent_fsm::store::{CheckpointStore, SqliteStore, StoreError, restore};

#[path = "stores/chat.rs"]
mod chat_agent;

use chat_agent::{Agent, Machine};

/// A store at `path` holding agent `a` after two turns.
fn written(path: &Path) -> SqliteStore {
    let store = SqliteStore::open(path).expect("opens");
    let mut agent = Agent::new(&store, "a");
    agent.turn(&store, "one");
    agent.turn(&store, "two");
    store
}

/// Edits the file at `path` with `sql`, as a hostile party would.
fn edit(path: &Path, sql: &str) {
    let raw = rusqlite::Connection::open(path).expect("raw");
    assert!(raw.execute(sql, []).expect("edits") > 0, "{sql} changed nothing");
}

fn assert_corrupt<T: std::fmt::Debug>(what: &str, result: Result<T, StoreError>) {
    match result {
        Err(StoreError::Corrupt { .. }) => {}
        other => panic!("{what}: {other:?}, not a corrupt row"),
    }
}

#[test]
fn a_sequence_number_that_is_text_is_a_corrupt_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let store = written(&path);
    edit(&path, "UPDATE events SET seq = 'last' WHERE agent = 'a' AND seq = 2");
    assert_corrupt("agent", store.agent("a"));
    assert_corrupt("restore", restore::<Machine, _>(&store, "a").map(|r| r.next_seq));
    assert_corrupt("checkpoints", store.checkpoints("a"));
}

#[test]
fn a_snapshot_or_effect_step_that_is_text_is_corrupt() {
    for sql in [
        "UPDATE snapshots SET seq = 'newest' WHERE agent = 'a' AND seq = 0",
        "UPDATE effects SET started = 'soon ' || started WHERE agent = 'a'",
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("agents.db");
        let store = written(&path);
        edit(&path, sql);
        assert_corrupt(sql, store.agent("a"));
    }
}

#[test]
fn times_that_are_text_are_corrupt_checkpoints() {
    for sql in
        ["UPDATE events SET at = 'noon' WHERE agent = 'a' AND seq = 1", "UPDATE agents SET created = 'yesterday'"]
    {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("agents.db");
        let store = written(&path);
        edit(&path, sql);
        assert_corrupt(sql, store.checkpoints("a"));
    }
}
