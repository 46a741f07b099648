//! A SQLite store whose rows someone edited by hand: a sequence number,
//! a time or an agent's creation time that is text rather than an
//! integer, a snapshot's format version that no release writes, an event
//! whose transition panics on replay. Reading the
//! agent, restoring it and listing its checkpoints give
//! `StoreError::Corrupt` (a store not to resume from), never
//! `StoreError::Read`, which reads as the file failing to be read, and
//! never a panic. Where an edit still decodes, it also clears the row's
//! checksum (as in a row an earlier release wrote), which would find it
//! first (`store_sums.rs`): what is tested is the check behind it.

use std::path::Path;

use agent_fsm::store::{CheckpointStore, Journal, SqliteStore, StoreError, restore, restore_at};

#[path = "stores/chat.rs"]
mod chat_agent;

use chat_agent::{Agent, Machine};

/// A tally whose transition panics past `u32::MAX`, as a live agent's
/// worker never logs (it fails at that step).
#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Tally)]
mod tally {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Counting { n: u32 },
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Add(u32),
    }

    #[actions]
    #[derive(Debug)]
    pub enum Action {
        Nothing,
    }

    transitions! {
        Counting { n } + Add(k) => Counting { n: n.checked_add(k).expect("the tally fits") } / Nothing,
    }
}

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

/// A negative format version is a damaged row: read as `UnknownFormat`,
/// it would tell the user to upgrade to a release that does not exist.
#[test]
fn a_snapshot_format_that_is_negative_is_corrupt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let store = written(&path);
    edit(&path, "UPDATE snapshots SET format = -1, sum = NULL WHERE agent = 'a'");
    assert_corrupt("snapshot", store.snapshot_at_or_before("a", u64::MAX));
    assert_corrupt("restore", restore::<Machine, _>(&store, "a").map(|r| r.next_seq));
    assert_corrupt("restore_at", restore_at::<Machine, _>(&store, "a", 0).map(|_| ()));
}

#[test]
fn an_event_whose_replay_panics_is_corrupt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let store = SqliteStore::open(&path).expect("opens");
    let mut machine = tally::Tally::new(0);
    let mut journal = Journal::create(&store, "t", &machine).expect("creates");
    for k in [1, 2] {
        let event = tally::Event::Add(k);
        let step = journal.begin(&event).expect("encodes");
        machine.handle_event(event);
        journal.commit(&store, step, &machine).expect("writes");
    }
    let huge = Journal::<tally::Tally>::encode(&tally::Event::Add(u32::MAX)).expect("encodes");
    edit(&path, &format!("UPDATE events SET event = '{huge}', sum = NULL WHERE agent = 't' AND seq = 2"));
    let restored = std::panic::catch_unwind(|| restore::<tally::Tally, _>(&store, "t").map(|r| r.next_seq));
    let restored = restored.expect("restoring does not panic");
    assert!(matches!(restored, Err(StoreError::Corrupt { what: "event", seq: 2, .. })), "{restored:?}");
    let earlier = std::panic::catch_unwind(|| restore_at::<tally::Tally, _>(&store, "t", 1).map(|m| m.state().clone()));
    assert_eq!(earlier.expect("no panic").expect("step 1 reads"), tally::State::Counting { n: 1 });
}
