//! What the Postgres store adds to the shared conformance tests: fencing
//! (a write under a stale lease epoch is refused with a typed error and
//! changes nothing, and under a race with a claim every event is written
//! by the lease holder of its epoch), the inbox row each mailbox step
//! takes (the k-th such step the k-th row, in the step's transaction),
//! a fenced durable agent that stops once its lease moves, and the
//! connection layer: a newer schema refused, concurrent first connects,
//! two unfenced writers of one agent. Each test runs in a fresh schema of
//! the server at `AGENT_FSM_PG_URL`, and is skipped (one line) without it.

use std::num::NonZeroU64;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use agent_fsm::runtime::{ExecutorConfig, RequestError, WorkerError};
use agent_fsm::store::{
    CheckpointStore, Durable, EffectKind, PgConfig, PgStore, SnapshotPolicy, StepRecord, StoreError, restore,
};

#[path = "stores/chat.rs"]
mod chat_agent;
mod stores;

use chat_agent::{Agent, Event, Machine};
use stores::pg::Schema;

/// A bare step `seq`, from the mailbox when `origin` says so.
fn step(seq: u64, origin: Option<&str>) -> StepRecord {
    StepRecord {
        seq,
        at: SystemTime::now(),
        state: "Idle".into(),
        event: format!("{{\"event\":\"n{seq}\"}}"),
        origin: origin.map(str::to_owned),
        finished: vec![],
        started: vec![],
        snapshot: None,
    }
}

/// Gives `agent`'s lease to `worker` at `epoch` (a claim), or to nobody.
fn lease(pg: &Schema, agent: &str, worker: Option<&str>, epoch: u64) {
    let worker = worker.map_or("NULL".to_owned(), |w| format!("'{w}'"));
    pg.sql(&format!(
        "INSERT INTO leases (agent, worker, epoch) VALUES ('{agent}', {worker}, {epoch})
         ON CONFLICT (agent) DO UPDATE SET worker = EXCLUDED.worker, epoch = EXCLUDED.epoch"
    ));
}

/// The inbox rows' `applied_seq`, by id.
fn applied(pg: &Schema) -> Vec<Option<i64>> {
    pg.sql("SELECT applied_seq FROM inbox ORDER BY id").iter().map(|row| row.get(0)).collect()
}

/// `(epoch, worker)` of each event of `agent`, in order.
fn fences(pg: &Schema, agent: &str) -> Vec<(Option<i64>, Option<String>)> {
    pg.sql(&format!("SELECT epoch, worker FROM events WHERE agent = '{agent}' ORDER BY seq"))
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

fn next_seq(store: &dyn CheckpointStore, agent: &str) -> u64 {
    store.agent(agent).expect("reads").expect("the agent is there").next_seq
}

#[test]
fn a_write_under_a_stale_epoch_is_fenced_off_and_changes_nothing() {
    let Some(pg) = Schema::fresh() else { return };
    let store = &pg.store;
    let mut agent = Agent::new(store, "a");
    lease(&pg, "a", Some("w1"), 1);
    let w1 = store.fenced("w1", 1);
    assert_eq!(w1.fence(), Some(("w1", 1)));
    agent.turn(&w1, "under the lease");
    assert_eq!(fences(&pg, "a"), vec![(Some(1), Some("w1".to_owned())); 2]);

    // w2 claims the agent: w1's every write is refused, and nothing moves.
    lease(&pg, "a", Some("w2"), 2);
    let before = (next_seq(store, "a"), store.events("a", 0, u64::MAX).expect("log"), store.in_flight("a", 99));
    let err = agent.step(&w1, Event::Prompt("stale".into())).expect_err("fenced");
    let StoreError::Fenced { agent: id, worker, epoch, holder, current } = &err else { panic!("{err:?}") };
    assert_eq!((id.as_str(), worker.as_str(), *epoch), ("a", "w1", 1));
    assert_eq!((holder.as_deref(), *current), (Some("w2"), Some(2)));
    assert_eq!(
        err.to_string(),
        "agent `a`: the write of worker `w1` at epoch 1 is fenced off: its lease is held by `w2` at epoch 2"
    );
    let seq = next_seq(store, "a");
    assert!(matches!(w1.append_all("a", &[step(seq, None)]), Err(StoreError::Fenced { .. })));
    assert!(matches!(w1.finish("a", &[(EffectKind::Task, "call-2".into())]), Err(StoreError::Fenced { .. })));
    let initial = agent_fsm::store::Snapshot { format: 1, state: "Idle".into(), data: "{}".into() };
    assert!(matches!(w1.create("a", "Chat", SystemTime::now(), &initial), Err(StoreError::Fenced { .. })));
    let after = (next_seq(store, "a"), store.events("a", 0, u64::MAX).expect("log"), store.in_flight("a", 99));
    assert_eq!(format!("{before:?}"), format!("{after:?}"), "a refused write changes nothing");

    // The new holder writes; an unfenced store writes and carries no fence.
    let w2 = store.fenced("w2", 2);
    w2.append("a", &step(seq, None)).expect("the holder writes");
    store.append("a", &step(seq + 1, None)).expect("unfenced");
    let written = fences(&pg, "a");
    assert_eq!(written[2..], [(Some(2), Some("w2".to_owned())), (None, None)]);

    // A released lease and a missing one fence everybody off.
    lease(&pg, "a", None, 3);
    let err = store.fenced("w2", 3).append("a", &step(seq + 2, None)).expect_err("released");
    assert!(matches!(&err, StoreError::Fenced { holder: None, current: Some(3), .. }), "{err}");
    assert!(err.to_string().ends_with("its lease is held by no worker (epoch 3)"), "{err}");
    Agent::new(store, "b");
    let err = store.fenced("w1", 1).append("b", &step(1, None)).expect_err("no lease");
    assert!(matches!(&err, StoreError::Fenced { holder: None, current: None, .. }), "{err}");
    assert!(err.to_string().ends_with("the agent has no lease"), "{err}");
    assert_eq!(next_seq(store, "b"), 1);
}

#[test]
fn two_fences_on_one_agent_racing_a_claim_never_write_under_one_epoch() {
    let Some(pg) = Schema::fresh() else { return };
    let store = &pg.store;
    Agent::new(store, "a");
    lease(&pg, "a", Some("w1"), 1);
    // w1 appends as fast as it can until it is fenced off; meanwhile w2
    // claims the agent and continues the log from where it finds it.
    let w1 = store.fenced("w1", 1);
    let started = Arc::new(AtomicBool::new(false));
    let old = {
        let started = Arc::clone(&started);
        std::thread::spawn(move || {
            let mut seq = 1;
            loop {
                match w1.append("a", &step(seq, None)) {
                    Ok(()) => seq += 1,
                    Err(StoreError::Fenced { .. }) => return seq - 1,
                    Err(e) => panic!("w1: {e}"),
                }
                if seq == 5 {
                    started.store(true, Ordering::SeqCst);
                }
            }
        })
    };
    // (A writer that failed otherwise has finished: its join says why.)
    while !started.load(Ordering::SeqCst) && !old.is_finished() {
        std::thread::sleep(Duration::from_millis(1));
    }
    lease(&pg, "a", Some("w2"), 2);
    let w2 = store.fenced("w2", 2);
    let from = next_seq(store, "a");
    for seq in from..from + 5 {
        w2.append("a", &step(seq, None)).expect("the new holder writes");
    }
    let last_of_w1 = old.join().expect("w1's thread");
    assert_eq!(last_of_w1, from - 1, "w1 wrote nothing after the claim");
    let written = fences(&pg, "a");
    assert_eq!(written.len() as u64, from + 4);
    let split = written.iter().position(|(epoch, _)| *epoch == Some(2)).expect("w2 wrote");
    assert!(written[..split].iter().all(|f| *f == (Some(1), Some("w1".to_owned()))), "{written:?}");
    assert!(written[split..].iter().all(|f| *f == (Some(2), Some("w2".to_owned()))), "{written:?}");
    let distinct =
        pg.sql("SELECT epoch FROM events WHERE agent = 'a' GROUP BY epoch HAVING count(DISTINCT worker) > 1");
    assert!(distinct.is_empty(), "no epoch has two writers");
    let seqs: Vec<u64> = store.events("a", 0, u64::MAX).expect("log").iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=from + 4).collect::<Vec<_>>());
}

#[test]
fn each_mailbox_step_marks_the_oldest_unapplied_inbox_row_in_order() {
    let Some(pg) = Schema::fresh() else { return };
    let store = &pg.store;
    Agent::new(store, "a");
    Agent::new(store, "b");
    lease(&pg, "a", Some("w1"), 1);
    pg.sql(
        "INSERT INTO inbox (agent, event) VALUES ('a', 'e1'), ('b', 'other'), ('a', 'e2'), ('a', 'e3'), ('a', 'e4')",
    );
    let w1 = store.fenced("w1", 1);
    // A step from a stream or a timer takes no row; one from the mailbox
    // takes the oldest of its agent's.
    w1.append("a", &step(1, None)).expect("append");
    w1.append("a", &step(2, Some("input"))).expect("append");
    w1.append("a", &step(3, Some("stream:items"))).expect("append");
    assert_eq!(applied(&pg), [Some(2), None, None, None, None]);
    // Several in one transaction, in order.
    w1.append_all("a", &[step(4, Some("input")), step(5, None), step(6, Some("input"))]).expect("append");
    assert_eq!(applied(&pg), [Some(2), None, Some(4), Some(6), None]);
    // An unfenced store is not a fleet worker: it takes no row.
    store.append("a", &step(7, Some("input"))).expect("append");
    assert_eq!(applied(&pg), [Some(2), None, Some(4), Some(6), None]);
    // With no row left, a mailbox step is logged and marks nothing.
    w1.append("a", &step(8, Some("input"))).expect("append");
    w1.append("a", &step(9, Some("input"))).expect("logged all the same");
    assert_eq!(applied(&pg), [Some(2), None, Some(4), Some(6), Some(8)]);
    assert_eq!(next_seq(store, "a"), 10);
}

/// A step with its event: what a mailbox step writes for an inbox row.
fn step_of(seq: u64, event: &str) -> StepRecord {
    StepRecord { event: event.to_owned(), ..step(seq, Some("input")) }
}

#[test]
fn a_mailbox_step_taken_out_of_turn_marks_the_row_of_its_own_event() {
    let Some(pg) = Schema::fresh() else { return };
    let store = &pg.store;
    Agent::new(store, "a");
    lease(&pg, "a", Some("w1"), 1);
    pg.sql("INSERT INTO inbox (agent, event) VALUES ('a', 'held'), ('a', 'urgent'), ('a', 'later')");
    let w1 = store.fenced("w1", 1);
    // The machine takes `urgent` first (it goes through during work while
    // `held` waits): its row is marked, not the oldest.
    w1.append("a", &step_of(1, "urgent")).expect("append");
    assert_eq!(applied(&pg), [None, Some(1), None]);
    // A crash here sends `held` and `later` again, each once.
    w1.append("a", &step_of(2, "held")).expect("append");
    w1.append("a", &step_of(3, "later")).expect("append");
    assert_eq!(applied(&pg), [Some(2), Some(1), Some(3)]);
}

#[test]
fn a_refused_mailbox_step_leaves_its_inbox_row_unapplied() {
    let Some(pg) = Schema::fresh() else { return };
    let store = &pg.store;
    Agent::new(store, "a");
    lease(&pg, "a", Some("w1"), 1);
    pg.sql("INSERT INTO inbox (agent, event) VALUES ('a', 'e1'), ('a', 'e2')");
    let w1 = store.fenced("w1", 1);
    // A wrong sequence number, a batch whose second step is refused, a
    // stale epoch: none of them marks a row.
    assert!(matches!(w1.append("a", &step(2, Some("input"))), Err(StoreError::Conflict { expected: 1, .. })));
    let err = w1.append_all("a", &[step(1, Some("input")), step(3, Some("input"))]).expect_err("a gap");
    assert!(matches!(err, StoreError::Conflict { found: 3, .. }), "{err}");
    assert!(matches!(store.fenced("w1", 0).append("a", &step(1, Some("input"))), Err(StoreError::Fenced { .. })));
    assert_eq!(applied(&pg), [None, None]);
    assert_eq!(next_seq(store, "a"), 1);
    // The step taken again, right, marks the first row.
    w1.append("a", &step(1, Some("input"))).expect("append");
    assert_eq!(applied(&pg), [Some(1), None]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_agent_on_a_fenced_store_stops_once_its_lease_moves() {
    let Some(pg) = Schema::fresh() else { return };
    let store = pg.store.clone();
    // Checkpoint 0 and the lease, as a fleet creates an agent.
    Agent::new(&store, "a");
    lease(&pg, "a", Some("w1"), 1);
    let durable = Durable::new(Arc::new(store.fenced("w1", 1)), "a");
    // Spawning reads the store from this runtime's thread, and each step
    // is written from it (`BeforeAction`): the store's own threads talk to
    // the server.
    let (handle, _) = durable.spawn(|| Machine::new(Default::default()), (), ExecutorConfig::new()).expect("spawns");
    handle.send(Event::Prompt("hi".into())).await.expect("sent");
    tokio::time::timeout(Duration::from_secs(20), handle.wait_idle()).await.expect("in time").expect("runs");
    assert_eq!(next_seq(&store, "a"), 2);
    lease(&pg, "a", Some("w2"), 2);
    handle.send(Event::Timeout).await.expect("sent");
    let error = tokio::time::timeout(Duration::from_secs(20), handle.wait_finished())
        .await
        .expect("in time")
        .expect_err("fenced off");
    let RequestError::Failed(error) = error else { panic!("not a failure: {error:?}") };
    let WorkerError::Store(failure) = &*error else { panic!("not a store failure: {error:?}") };
    let fenced = failure.error().downcast_ref::<StoreError>();
    assert!(matches!(fenced, Some(StoreError::Fenced { current: Some(2), .. })), "{failure:?}");
    assert_eq!(next_seq(&store, "a"), 2, "the refused step is not in the store");
}

#[test]
fn a_schema_a_newer_release_wrote_is_refused_and_a_bad_url_or_schema_name_is_a_read_error() {
    let Some(pg) = Schema::fresh() else { return };
    pg.sql("UPDATE meta SET value = 2 WHERE key = 'schema_version'");
    let url = std::env::var(stores::PG_URL).expect("set");
    let err = PgStore::connect_with(PgConfig::new(url).schema(pg.name.clone())).expect_err("newer");
    assert!(matches!(&err, StoreError::UnknownFormat { found: 2, supported: 1, .. }), "{err}");
    assert!(err.to_string().contains(&pg.name), "{err}");
    assert!(matches!(PgStore::connect("not a url ::"), Err(StoreError::Read(_))));
    // Postgres would cut a longer name to its first 63 bytes, so that two
    // names that differ past them would name one schema.
    let long = format!("{}_{}", pg.name, "x".repeat(64 - pg.name.len()));
    let config = PgConfig::new(std::env::var(stores::PG_URL).expect("set")).schema(long.clone());
    let err = PgStore::connect_with(config).expect_err("too long a name");
    assert!(matches!(&err, StoreError::Read(_)) && err.to_string().contains(&long), "{err}");
    let whole = format!("{}_{}", pg.name, "x".repeat(62 - pg.name.len()));
    let config = PgConfig::new(std::env::var(stores::PG_URL).expect("set")).schema(whole.clone()).pool_size(1);
    drop(PgStore::connect_with(config).expect("63 bytes are kept whole"));
    pg.sql(&format!("DROP SCHEMA \"{whole}\" CASCADE"));
}

#[test]
fn processes_connecting_at_once_create_the_tables_once_and_two_writers_conflict() {
    let Some(pg) = Schema::fresh() else { return };
    let url = std::env::var(stores::PG_URL).expect("set");
    let schema = format!("{}_b", pg.name);
    let connects: Vec<_> = (0..4)
        .map(|_| {
            let config = PgConfig::new(url.clone()).schema(schema.clone()).pool_size(1);
            std::thread::spawn(move || PgStore::connect_with(config))
        })
        .collect();
    let stores: Vec<PgStore> =
        connects.into_iter().map(|c| c.join().expect("thread").expect("each connects")).collect();
    pg.sql(&format!("DROP SCHEMA \"{schema}\" CASCADE"));
    // Two writers of one agent, each appending steps 1..=20 as if alone:
    // every number is written once, and the loser of each is a conflict.
    let store = &pg.store;
    Agent::new(store, "a");
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let store = store.clone();
            std::thread::spawn(move || {
                (1..=20)
                    .filter(|seq| matches!(store.append("a", &step(*seq, None)), Err(StoreError::Conflict { .. })))
                    .count()
            })
        })
        .collect();
    let conflicts: usize = writers.into_iter().map(|w| w.join().expect("writer")).sum();
    assert_eq!(conflicts, 20);
    assert_eq!(next_seq(store, "a"), 21);
    drop(stores);
}

/// A log that lost its last steps (their event rows deleted, a table
/// restored from an older backup) while the agent's row, snapshots or
/// effect rows still name them is corrupt, as in SQLite: reading the agent
/// is refused, rather than it reading as an agent that is behind, or one
/// whose next step would leave a gap. So is an agent's row that counts
/// fewer steps than its log holds.
#[test]
fn a_log_missing_its_last_steps_is_refused() {
    let Some(pg) = Schema::fresh() else { return };
    let store = &pg.store;
    let mut agent = Agent::new(store, "a").policy(SnapshotPolicy::Every(NonZeroU64::MIN));
    agent.turn(store, "one");
    agent.turn(store, "two");
    let last = next_seq(store, "a") - 1;
    assert!(restore::<Machine, _>(store, "a").is_ok());
    for lost in [last, last - 1] {
        pg.sql(&format!("DELETE FROM events WHERE agent = 'a' AND seq >= {lost}"));
        let err = restore::<Machine, _>(store, "a").expect_err("the log lost steps");
        assert!(matches!(err, StoreError::Corrupt { what: "log", .. }), "{err}");
        assert!(matches!(store.agent("a"), Err(StoreError::Corrupt { what: "log", .. })));
    }

    // The agent's row alone still counting them (no snapshot or effect row
    // names the lost step).
    let mut agent = Agent::new(store, "b");
    agent.turn(store, "one");
    let last = next_seq(store, "b") - 1;
    pg.sql("DELETE FROM snapshots WHERE agent = 'b' AND seq > 0");
    pg.sql("DELETE FROM effects WHERE agent = 'b'");
    assert!(restore::<Machine, _>(store, "b").is_ok());
    pg.sql(&format!("DELETE FROM events WHERE agent = 'b' AND seq = {last}"));
    assert!(matches!(store.agent("b"), Err(StoreError::Corrupt { what: "log", .. })));
    pg.sql(&format!("UPDATE agents SET next_seq = {last} - 1 WHERE agent = 'b'"));
    assert!(matches!(store.agent("b"), Err(StoreError::Corrupt { what: "agent", .. })));
}

/// A process connecting to a schema that is there (a worker starting, a
/// process that sends) waits for no write in flight: a writer stopped in
/// the middle of a transaction (a paused process) holds up its own agent's
/// writers, not every connect, nor every write queued behind one.
#[test]
fn connecting_to_an_existing_schema_waits_for_no_write_in_flight() {
    let Some(pg) = Schema::fresh() else { return };
    let url = std::env::var(stores::PG_URL).expect("set");
    // Writes left open on each table with an index, as a paused process
    // leaves its transaction.
    let mut held = postgres::Client::connect(&url, postgres::NoTls).expect("connects");
    held.batch_execute(&format!(
        "SET search_path TO \"{}\"; BEGIN;
         INSERT INTO effects (agent, kind, key, started) VALUES ('x', 1, 'k', 1);
         INSERT INTO inbox (agent, event) VALUES ('x', 'e');
         UPDATE leases SET epoch = 0 WHERE agent = 'x'",
        pg.name
    ))
    .expect("writes in flight");
    let (done, connected) = std::sync::mpsc::channel();
    let config = PgConfig::new(url).schema(pg.name.clone()).pool_size(1);
    std::thread::spawn(move || {
        let _ = done.send(PgStore::connect_with(config).map(drop));
    });
    let connected = connected.recv_timeout(Duration::from_secs(30));
    // The open writes roll back: a connect still waiting ends.
    drop(held);
    assert!(matches!(connected, Ok(Ok(()))), "{connected:?}");
}

/// A format version no release writes (a negative one, edited in) is a
/// damaged row, not a newer format to upgrade for: `Corrupt`, as SQLite
/// reads it, not `UnknownFormat`.
#[test]
fn a_negative_format_version_is_a_corrupt_row() {
    let Some(pg) = Schema::fresh() else { return };
    let store = &pg.store;
    let mut agent = Agent::new(store, "a").policy(SnapshotPolicy::Every(NonZeroU64::MIN));
    agent.turn(store, "one");
    assert!(restore::<Machine, _>(store, "a").is_ok());
    pg.sql("UPDATE snapshots SET format = -1 WHERE agent = 'a'");
    let err = restore::<Machine, _>(store, "a").expect_err("the snapshot is damaged");
    assert!(matches!(err, StoreError::Corrupt { what: "snapshot", .. }), "{err}");
    pg.sql("UPDATE agents SET format = -1 WHERE agent = 'a'");
    assert!(matches!(store.agent("a"), Err(StoreError::Corrupt { what: "agent", .. })), "{:?}", store.agent("a"));
}
