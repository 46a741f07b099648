//! The store's connection settings against a real server
//! (`AGENT_FSM_PG_URL`; skipped, in one line, without one).

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::{PgConfig, PgStore, idle_in_transaction_setting};
use crate::store::StoreError;

#[test]
fn the_idle_in_transaction_setting_is_in_whole_milliseconds_and_zero_is_off() {
    assert_eq!(idle_in_transaction_setting(Duration::ZERO), None);
    assert_eq!(
        idle_in_transaction_setting(Duration::from_micros(1)).as_deref(),
        Some("SET idle_in_transaction_session_timeout TO 1")
    );
    assert_eq!(
        idle_in_transaction_setting(Duration::from_secs(10)).as_deref(),
        Some("SET idle_in_transaction_session_timeout TO 10000")
    );
    assert_eq!(
        idle_in_transaction_setting(Duration::from_secs(u64::MAX)).as_deref(),
        Some(format!("SET idle_in_transaction_session_timeout TO {}", i32::MAX).as_str())
    );
}

/// A schema of its own for one test, dropped at the end.
struct Schema {
    url: String,
    name: String,
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name));
        }
    }
}

/// One of the store's connections stalls in the middle of a transaction
/// that holds a row lock, as a process paused mid-write does: the server
/// ends that session after the configured time, so another writer waiting
/// on the lock goes on, and the stalled transaction never commits.
#[test]
fn a_connection_stalled_inside_a_transaction_is_ended_and_its_locks_released() {
    let Ok(url) = std::env::var("AGENT_FSM_PG_URL") else {
        eprintln!("skipped: AGENT_FSM_PG_URL is not set");
        return;
    };
    let name = format!("t_idle_tx_{}_{}", std::process::id(), line!());
    let schema = Schema { url: url.clone(), name: name.clone() };
    let config = PgConfig::new(url.clone())
        .schema(name.clone())
        .pool_size(1)
        .idle_in_transaction_timeout(Duration::from_millis(300));
    let store = PgStore::connect_with(config).expect("the server at AGENT_FSM_PG_URL connects");

    // The stalled writer: locks the schema's version row, then waits (up
    // to 20 s, long past the timeout) for the other writer to get the lock
    // before it tries to commit.
    let (locked_tx, locked) = mpsc::channel::<()>();
    let (done_tx, done) = mpsc::channel::<()>();
    let stalled = thread::spawn(move || {
        store.run(move |client, _| {
            let mut tx = client.transaction().map_err(super::pool::write_err)?;
            tx.query("SELECT value FROM meta WHERE key = 'schema_version' FOR UPDATE", &[])
                .map_err(super::pool::write_err)?;
            let _ = locked_tx.send(());
            let _ = done.recv_timeout(Duration::from_secs(20));
            tx.commit().map_err(super::pool::write_err)
        })
    });
    locked.recv_timeout(Duration::from_secs(20)).expect("the stalled writer took its lock");

    // The other writer, on a connection of its own, waits on that lock.
    let started = Instant::now();
    let mut other = postgres::Client::connect(&url, postgres::NoTls).expect("connects");
    other.batch_execute(&format!("SET search_path TO \"{name}\"; SET lock_timeout TO 15000")).expect("setup");
    let mut tx = other.transaction().expect("begins");
    let got = tx.query("SELECT value FROM meta WHERE key = 'schema_version' FOR UPDATE", &[]);
    let waited = started.elapsed();
    let _ = done_tx.send(());
    assert!(got.is_ok(), "the other writer got the lock: {got:?}");
    assert!(waited < Duration::from_secs(10), "the lock was released by the timeout, after {waited:?}");
    tx.commit().expect("commits");

    let outcome = stalled.join().expect("the stalled writer's thread");
    assert!(
        matches!(outcome, Err(StoreError::Write(_))),
        "the stalled transaction was ended by the server, not committed: {outcome:?}"
    );
    drop(schema);
}

/// With a lock timeout, a statement that waits for a row lock longer fails
/// (here a read locking the version row another session holds), where the
/// migration of a store connecting meanwhile waits its turn, however long.
#[test]
fn the_lock_timeout_bounds_a_wait_for_a_row_but_not_a_migration() {
    let Ok(url) = std::env::var("AGENT_FSM_PG_URL") else {
        eprintln!("skipped: AGENT_FSM_PG_URL is not set");
        return;
    };
    let name = format!("t_lock_timeout_{}_{}", std::process::id(), line!());
    let schema = Schema { url: url.clone(), name: name.clone() };
    let config = PgConfig::new(url.clone()).schema(name.clone()).pool_size(1).lock_timeout(Duration::from_millis(100));
    let store = PgStore::connect_with(config.clone()).expect("the server at AGENT_FSM_PG_URL connects");

    // Another session holds the version row, and the migration lock,
    // until told (20 s at most).
    let (locked_tx, locked) = mpsc::channel::<()>();
    let (release_tx, release) = mpsc::channel::<()>();
    let (holder_url, holder_schema) = (url.clone(), name.clone());
    let holder = thread::spawn(move || {
        let mut client = postgres::Client::connect(&holder_url, postgres::NoTls).expect("connects");
        client.batch_execute(&format!("SET search_path TO \"{holder_schema}\"")).expect("setup");
        let mut held = client.transaction().expect("begins");
        held.query("SELECT value FROM meta WHERE key = 'schema_version' FOR UPDATE", &[]).expect("locks the row");
        let lock = format!("agent_fsm migration {holder_schema}");
        held.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&lock]).expect("locks the migration");
        let _ = locked_tx.send(());
        let _ = release.recv_timeout(Duration::from_secs(20));
        held.commit().expect("ends");
    });
    locked.recv_timeout(Duration::from_secs(20)).expect("the other session took its locks");

    let started = Instant::now();
    let waited = store.run(|client, _| {
        let mut tx = client.transaction().map_err(super::pool::write_err)?;
        tx.query("SELECT value FROM meta WHERE key = 'schema_version' FOR UPDATE", &[])
            .map_err(super::pool::write_err)?;
        tx.commit().map_err(super::pool::write_err)
    });
    assert!(matches!(waited, Err(StoreError::Write(_))), "the wait for the row failed: {waited:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "failed at its timeout, while the row was still held");

    // A second store migrating waits for the migration lock, past the lock
    // timeout, and connects once it is free.
    let second = thread::spawn(move || PgStore::connect_with(config).map(drop));
    thread::sleep(Duration::from_millis(400));
    let _ = release_tx.send(());
    let second = second.join().expect("the second store's thread");
    assert!(second.is_ok(), "the migration waited its turn: {second:?}");
    holder.join().expect("the holder's thread");
    drop(schema);
}
