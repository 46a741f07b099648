//! The checkpoint stores, each test body run against the in-memory store,
//! a real SQLite file in a temp dir and, when `AGENT_FSM_PG_URL` is set, a
//! real Postgres server in a fresh schema: a restored machine equals the live
//! one, the log has no gap and no duplicate, a stale writer gets a typed
//! conflict, forks are independent, effect rows are started and cleared,
//! and a corrupt row, an unknown format, another machine's store and a full
//! disk are each a typed error that leaves the last good checkpoint
//! readable.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use agent_fsm::StateMachine;
use agent_fsm::store::{
    CheckpointStore, Effect, EffectKind, FORMAT_VERSION, Journal, MemoryStore, Snapshot, SnapshotPolicy, SqliteConfig,
    SqliteStore, StepRecord, StoreError, Synchronous, restore, restore_at,
};

#[path = "stores/chat.rs"]
mod chat_agent;
mod stores;

use chat_agent::{Agent, Event, Machine, assert_same, counter};
use stores::each_store;

#[test]
fn a_restored_agent_equals_the_live_one_at_every_step_under_every_policy() {
    each_store(|store| {
        let policies = [
            ("proportional", SnapshotPolicy::Proportional),
            ("every-3", SnapshotPolicy::Every(NonZeroU64::new(3).expect("3"))),
            ("never", SnapshotPolicy::Never),
        ];
        for (id, policy) in policies {
            let mut agent = Agent::new(store, id).policy(policy);
            for i in 0..12 {
                agent.step(store, Event::Prompt(format!("question {i} {}", "x".repeat(i * 7)))).expect("prompt");
                let restored = restore::<Machine, _>(store, id).expect("restore");
                assert_same(&restored.machine, &agent.machine);
                assert_eq!(restored.next_seq, agent.journal.next_seq());
                let call = agent.machine.context().calls;
                agent.step(store, Event::Reply(call, format!("answer {i}"))).expect("reply");
                let restored = restore::<Machine, _>(store, id).expect("restore");
                assert_same(&restored.machine, &agent.machine);
            }
            // A restored journal continues the log where the live one was.
            let restored = restore::<Machine, _>(store, id).expect("restore");
            let mut resumed = Agent { machine: restored.machine, journal: restored.journal };
            resumed.turn(store, "after restart");
            // The live machine, fed the same events, moves the same way.
            agent.machine.handle_event(Event::Prompt("user: after restart".into()));
            agent.machine.handle_event(Event::Reply(13, "model: after restart".into()));
            assert_same(&agent.machine, &resumed.machine);
            let again = restore::<Machine, _>(store, id).expect("restore");
            assert_same(&again.machine, &resumed.machine);
            assert_eq!(again.machine.context().messages.len(), 26);
            // Rebuilding at any earlier step replays to the state logged there.
            for checkpoint in store.checkpoints(id).expect("checkpoints") {
                let machine = restore_at::<Machine, _>(store, id, checkpoint.seq).expect("restore_at");
                assert_eq!(machine.status().to_string(), checkpoint.state);
            }
        }
    });
}

#[test]
fn snapshots_follow_the_policy_and_replay_stays_bounded() {
    each_store(|store| {
        let mut agent = Agent::new(store, "every").policy(SnapshotPolicy::Every(NonZeroU64::new(4).expect("4")));
        for i in 0..6 {
            agent.turn(store, &format!("t{i}"));
        }
        let with: Vec<u64> =
            store.checkpoints("every").expect("list").iter().filter(|c| c.snapshot).map(|c| c.seq).collect();
        assert_eq!(with, [0, 4, 8, 12]);
        let mut never = Agent::new(store, "never").policy(SnapshotPolicy::Never);
        never.turn(store, "a");
        let with = store.checkpoints("never").expect("list").iter().filter(|c| c.snapshot).count();
        assert_eq!(with, 1);
        // Proportional: a snapshot once the events since the last outweigh it.
        let mut prop = Agent::new(store, "prop");
        for i in 0..40 {
            prop.turn(store, &format!("turn {i}"));
        }
        let snaps: Vec<u64> =
            store.checkpoints("prop").expect("list").iter().filter(|c| c.snapshot).map(|c| c.seq).collect();
        assert!(snaps.len() > 3 && snaps.len() < 40, "snapshots at {snaps:?}");
        let gaps: Vec<u64> = snaps.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.windows(2).all(|w| w[1] >= w[0]), "gaps grow with the snapshot: {gaps:?}");
    });
}

#[test]
fn a_restart_does_not_move_where_snapshots_fall() {
    each_store(|store| {
        let policies =
            [("p", SnapshotPolicy::Proportional), ("e", SnapshotPolicy::Every(NonZeroU64::new(5).expect("5")))];
        for (name, policy) in policies {
            let straight = format!("{name}-straight");
            let mut agent = Agent::new(store, &straight).policy(policy);
            for i in 0..30 {
                agent.turn(store, &format!("turn {i}"));
            }
            let restarted = format!("{name}-restarted");
            let mut agent = Agent::new(store, &restarted).policy(policy);
            for i in 0..30 {
                if i % 7 == 3 {
                    let restored = restore::<Machine, _>(store, &restarted).expect("restore");
                    assert_eq!(restored.journal.agent(), restarted);
                    agent = Agent { machine: restored.machine, journal: restored.journal.with_policy(policy) };
                }
                agent.turn(store, &format!("turn {i}"));
            }
            let snapshots = |id: &str| -> Vec<u64> {
                store.checkpoints(id).expect("list").iter().filter(|c| c.snapshot).map(|c| c.seq).collect()
            };
            assert_eq!(snapshots(&restarted), snapshots(&straight), "{name}");
        }
        let agent = Agent::new(store, "names");
        assert_eq!(agent.journal.agent(), "names");
        assert_eq!(agent.journal.begin(&Event::Stop).expect("encode").event(), "{\"event\":\"stop\"}");
    });
}

#[test]
fn a_step_that_is_not_the_next_is_a_conflict_and_changes_nothing() {
    each_store(|store| {
        let mut agent = Agent::new(store, "a");
        agent.turn(store, "one");
        let stale = restore::<Machine, _>(store, "a").expect("restore");
        agent.turn(store, "two");
        let mut stale = Agent { machine: stale.machine, journal: stale.journal };
        let err = stale.step(store, Event::Stop).expect_err("stale writer");
        assert!(matches!(err, StoreError::Conflict { expected: 5, found: 3, .. }), "{err}");
        let record = StepRecord {
            seq: 9,
            at: SystemTime::now(),
            state: "Idle".into(),
            event: "\"Stop\"".into(),
            origin: None,
            finished: vec![],
            started: vec![],
            snapshot: None,
        };
        assert!(matches!(store.append("a", &record), Err(StoreError::Conflict { expected: 5, found: 9, .. })));
        assert!(matches!(store.append("nobody", &record), Err(StoreError::UnknownAgent(_))));
        assert_eq!(store.agent("a").expect("agent").expect("known").next_seq, 5);
        assert_same(&restore::<Machine, _>(store, "a").expect("restore").machine, &agent.machine);
        let err = Journal::create(store, "a", &agent.machine).expect_err("exists");
        assert!(matches!(err, StoreError::AgentExists(id) if id == "a"));
    });
}

#[test]
fn many_appends_leave_a_log_without_gap_or_duplicate() {
    each_store(|store| {
        let mut agent = Agent::new(store, "long");
        for i in 0..150 {
            agent.turn(store, &i.to_string());
        }
        let events = store.events("long", 0, u64::MAX).expect("events");
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=300).collect::<Vec<u64>>());
        let checkpoints: Vec<u64> = store.checkpoints("long").expect("list").iter().map(|c| c.seq).collect();
        assert_eq!(checkpoints, (0..=300).collect::<Vec<u64>>());
        assert_eq!(store.events("long", 10, 12).expect("slice").iter().map(|e| e.seq).collect::<Vec<_>>(), [11, 12]);
        assert_eq!(store.agent("long").expect("agent").expect("known").next_seq, 301);
    });
}

#[test]
fn effect_rows_are_recorded_when_started_and_cleared_by_their_result() {
    each_store(|store| {
        let mut agent = Agent::new(store, "fx");
        agent.step(store, Event::Prompt("hi".into())).expect("prompt");
        let restored = restore::<Machine, _>(store, "fx").expect("restore");
        let mut keys: Vec<(EffectKind, String)> =
            restored.in_flight.iter().map(|f| (f.effect.kind, f.effect.key.clone())).collect();
        keys.sort();
        assert_eq!(keys, [(EffectKind::Task, "call-1".to_owned()), (EffectKind::Timer, "deadline".to_owned())]);
        let timer = restored.in_flight.iter().find(|f| f.effect.kind == EffectKind::Timer).expect("timer");
        assert_eq!(timer.effect.deadline, Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_001)));
        assert_eq!(timer.effect.event.as_deref(), Some("{\"event\":\"timeout\"}"));
        assert_eq!(timer.started, 1);
        agent.step(store, Event::Reply(1, "hello".into())).expect("reply");
        assert!(restore::<Machine, _>(store, "fx").expect("restore").in_flight.is_empty());
        // Still visible at the step where it was in flight.
        assert_eq!(store.in_flight("fx", 1).expect("at 1").len(), 2);
        assert!(store.in_flight("fx", 0).expect("at 0").is_empty());
        // Starting a key in flight replaces its row.
        agent.step(store, Event::Prompt("again".into())).expect("prompt");
        agent.step(store, Event::Timeout).expect("timeout");
        agent.step(store, Event::Prompt("third".into())).expect("prompt");
        let now = store.in_flight("fx", 5).expect("at 5");
        assert_eq!(now.len(), 2, "{now:?}");
        assert!(now.iter().all(|f| f.started == 5));
    });
}

#[test]
fn a_fork_keeps_the_log_to_its_step_and_both_continue_independently() {
    each_store(|store| {
        let mut source = Agent::new(store, "source");
        source.turn(store, "one");
        source.step(store, Event::Prompt("two".into())).expect("prompt"); // step 3, a call in flight
        source.step(store, Event::Reply(2, "two done".into())).expect("reply");
        store.fork("source", 3, "fork").expect("fork");
        let info = store.agent("fork").expect("agent").expect("known");
        assert_eq!(info.forked_from, Some(("source".to_owned(), 3)));
        assert_eq!(info.next_seq, 4);
        let restored = restore::<Machine, _>(store, "fork").expect("restore fork");
        assert_same(&restored.machine, &restore_at::<Machine, _>(store, "source", 3).expect("at 3"));
        assert_eq!(restored.in_flight.len(), 2, "the call in flight at step 3 is in flight in the fork");
        let mut fork = Agent { machine: restored.machine, journal: restored.journal };
        // The source finished that call at step 4; the fork's step 4 does
        // not, so it is still in flight there.
        fork.step(store, Event::Stop).expect("refused in Calling, logged all the same");
        assert_eq!(restore::<Machine, _>(store, "fork").expect("fork").in_flight.len(), 2);
        fork.step(store, Event::Timeout).expect("timeout");
        fork.step(store, Event::Stop).expect("stop");
        source.turn(store, "three");
        let s = restore::<Machine, _>(store, "source").expect("source");
        let f = restore::<Machine, _>(store, "fork").expect("fork");
        assert_same(&s.machine, &source.machine);
        assert_same(&f.machine, &fork.machine);
        assert!(f.machine.is_terminal() && !s.machine.is_terminal());
        assert_eq!(s.machine.context().messages.len(), 6);
        assert_eq!(f.machine.context().messages.len(), 3);
        let source_log = store.events("source", 0, 3).expect("source log");
        assert_eq!(store.events("fork", 0, 3).expect("fork log"), source_log);
        assert_ne!(store.events("fork", 3, 4).expect("fork"), store.events("source", 3, 4).expect("source"));
        assert_eq!(store.agent("source").expect("agent").expect("known").next_seq, 7);
        assert!(matches!(store.fork("source", 7, "late"), Err(StoreError::NoCheckpoint { seq: 7, last: 6, .. })));
        assert!(matches!(store.fork("source", 1, "fork"), Err(StoreError::AgentExists(_))));
        assert!(matches!(store.fork("nobody", 0, "x"), Err(StoreError::UnknownAgent(_))));
        assert_eq!(store.agents().expect("agents"), ["fork", "source"]);
    });
}

#[test]
fn a_corrupt_event_is_typed_and_the_step_before_it_stays_readable() {
    each_store(|store| {
        let mut agent = Agent::new(store, "c");
        agent.turn(store, "ok");
        let record = StepRecord {
            seq: 3,
            at: SystemTime::now(),
            state: "Idle".into(),
            event: "{not json".into(),
            origin: None,
            finished: vec![],
            started: vec![],
            snapshot: None,
        };
        store.append("c", &record).expect("the store takes text as it is");
        let err = restore::<Machine, _>(store, "c").expect_err("corrupt");
        assert!(matches!(err, StoreError::Corrupt { what: "event", seq: 3, .. }), "{err}");
        assert_same(&restore_at::<Machine, _>(store, "c", 2).expect("last good"), &agent.machine);
        // An event that decodes but does not lead where the log says.
        let mut other = Agent::new(store, "d");
        other.turn(store, "ok");
        let record = StepRecord { seq: 3, state: "Calling".into(), event: "{\"event\":\"stop\"}".into(), ..record };
        store.append("d", &record).expect("append");
        let err = restore::<Machine, _>(store, "d").expect_err("diverges");
        assert!(matches!(err, StoreError::Corrupt { what: "event", seq: 3, .. }), "{err}");
        assert!(err.to_string().contains("replay reached state `Done`"), "{err}");
    });
}

#[test]
fn an_unknown_format_version_is_refused_and_older_steps_stay_readable() {
    each_store(|store| {
        let initial = Snapshot { format: 99, state: "Idle".into(), data: "{}".into() };
        store.create("future", "Chat", SystemTime::now(), &initial).expect("create");
        let err = restore::<Machine, _>(store, "future").expect_err("unknown format");
        assert!(matches!(err, StoreError::UnknownFormat { found: 99, supported: FORMAT_VERSION, .. }), "{err}");
        // A newer snapshot later in the log: the steps before it still load.
        let mut agent = Agent::new(store, "later");
        agent.turn(store, "ok");
        let snapshot = Snapshot { format: FORMAT_VERSION + 1, state: "Done".into(), data: "{}".into() };
        let record = StepRecord {
            seq: 3,
            at: SystemTime::now(),
            state: "Done".into(),
            event: "{\"event\":\"stop\"}".into(),
            origin: None,
            finished: vec![],
            started: vec![],
            snapshot: Some(snapshot),
        };
        store.append("later", &record).expect("append");
        let err = restore::<Machine, _>(store, "later").expect_err("unknown format");
        assert!(matches!(err, StoreError::UnknownFormat { found: 2, .. }), "{err}");
        assert_same(&restore_at::<Machine, _>(store, "later", 2).expect("before it"), &agent.machine);
    });
}

#[test]
fn a_store_written_by_another_machine_is_refused() {
    each_store(|store| {
        let mut agent = Agent::new(store, "chat");
        agent.turn(store, "hi");
        let err = restore::<counter::Counter, _>(store, "chat").expect_err("wrong machine");
        assert!(
            matches!(&err, StoreError::WrongMachine { expected: "Counter", found, .. } if found == "Chat"),
            "{err}"
        );
        assert!(matches!(restore_at::<counter::Counter, _>(store, "chat", 0), Err(StoreError::WrongMachine { .. })));
        assert!(matches!(restore::<Machine, _>(store, "nobody"), Err(StoreError::UnknownAgent(_))));
        assert!(matches!(
            restore_at::<Machine, _>(store, "chat", 3),
            Err(StoreError::NoCheckpoint { seq: 3, last: 2, .. })
        ));
    });
}

/// Steps with big prompts until the store refuses one.
fn fill(store: &dyn CheckpointStore) {
    let mut agent = Agent::new(store, "full").policy(SnapshotPolicy::Never);
    let mut last_good = None;
    for i in 0..1000 {
        match agent.step(store, Event::Prompt(format!("{i} {}", "y".repeat(2000)))) {
            Ok(_) => {}
            Err(StoreError::Full(_)) => {
                last_good = Some(agent.journal.next_seq() - 1);
                break;
            }
            Err(e) => panic!("expected a full store, got {e}"),
        }
        let call = agent.machine.context().calls;
        agent.step(store, Event::Timeout).unwrap_or_else(|e| panic!("{e}"));
        let _ = call;
    }
    let last_good = last_good.expect("the store filled up");
    assert!(last_good > 2, "some steps fit first");
    let restored = restore::<Machine, _>(store, "full").expect("the last good checkpoint");
    assert_eq!(restored.next_seq, last_good + 1);
    assert_eq!(restored.machine.context().messages.len() as u64, last_good / 2);
    assert_eq!(store.events("full", 0, u64::MAX).expect("log").len() as u64, last_good);
}

#[test]
fn a_full_store_is_a_typed_error_and_the_last_good_checkpoint_stays_readable() {
    fill(&MemoryStore::with_quota(40_000));
    let dir = tempfile::tempdir().expect("tempdir");
    let config = SqliteConfig::default().max_pages(16);
    fill(&SqliteStore::open_with(dir.path().join("full.db"), config).expect("open"));
}

#[test]
fn sqlite_a_damaged_row_a_newer_file_and_a_non_database_are_typed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let store = SqliteStore::open_with(&path, SqliteConfig::default().synchronous(Synchronous::Normal)).expect("open");
    let mut agent = Agent::new(&store, "a");
    agent.turn(&store, "one");
    agent.turn(&store, "two");
    {
        let raw = rusqlite::Connection::open(&path).expect("raw");
        raw.execute("UPDATE events SET event = X'FF00FF', sum = NULL WHERE agent = 'a' AND seq = 4", [])
            .expect("damage");
        raw.execute("UPDATE snapshots SET data = 'garbage', sum = NULL WHERE agent = 'a' AND seq = 0", [])
            .expect("damage");
    }
    let err = restore::<Machine, _>(&store, "a").expect_err("damaged");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    let mut newer = Agent::new(&store, "newer");
    newer.turn(&store, "one");
    {
        let raw = rusqlite::Connection::open(&path).expect("raw");
        raw.execute("UPDATE agents SET format = 5 WHERE agent = 'newer'", []).expect("newer");
    }
    let err = restore::<Machine, _>(&store, "newer").expect_err("newer agent");
    assert!(matches!(err, StoreError::UnknownFormat { found: 5, .. }), "{err}");
    drop(store);
    // Reopened, the file is still read, and the damage still reported.
    let store = SqliteStore::open(&path).expect("reopen");
    assert!(matches!(
        restore_at::<Machine, _>(&store, "a", 0),
        Err(StoreError::Corrupt { what: "snapshot", seq: 0, .. })
    ));
    drop(store);
    {
        let raw = rusqlite::Connection::open(&path).expect("raw");
        raw.pragma_update(None, "user_version", 7).expect("version");
    }
    let err = SqliteStore::open(&path).expect_err("newer file");
    assert!(matches!(err, StoreError::UnknownFormat { found: 7, supported: 1, .. }), "{err}");
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 8192]).expect("junk");
    assert!(matches!(SqliteStore::open(&junk), Err(StoreError::Read(_))));
}

/// A file whose log lost its last steps (a damaged page that still reads,
/// without its last rows) while their snapshots and effect rows remain is
/// corrupt, not an agent that is behind: restoring it is refused.
#[test]
fn sqlite_a_log_missing_its_last_steps_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let store = SqliteStore::open(&path).expect("open");
    let mut agent = Agent::new(&store, "a").policy(SnapshotPolicy::Every(NonZeroU64::MIN));
    agent.turn(&store, "one");
    agent.turn(&store, "two");
    let last = store.agent("a").expect("reads").expect("there").next_seq - 1;
    for lost in [last, last - 1] {
        let raw = rusqlite::Connection::open(&path).expect("raw");
        let lost = i64::try_from(lost).expect("a few steps");
        raw.execute("DELETE FROM events WHERE agent = 'a' AND seq >= ?1", [lost]).expect("damage");
        let err = restore::<Machine, _>(&store, "a").expect_err("the log lost steps");
        assert!(matches!(err, StoreError::Corrupt { what: "log", .. }), "{err}");
        assert!(matches!(store.agent("a"), Err(StoreError::Corrupt { .. })));
    }
}

/// Processes starting at once on a file not yet created (workers of one
/// deployment, say) each open it: one creates the tables, the others find
/// them, rather than failing to create them again.
#[test]
fn sqlite_a_new_file_opened_by_several_at_once_opens_for_each() {
    let dir = tempfile::tempdir().expect("tempdir");
    for round in 0..40 {
        let path = dir.path().join(format!("new-{round}.db"));
        let start = std::sync::Barrier::new(6);
        std::thread::scope(|scope| {
            let opens: Vec<_> = (0..6)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        SqliteStore::open(&path).map(drop)
                    })
                })
                .collect();
            for open in opens {
                let opened = open.join().expect("no panic");
                assert!(opened.is_ok(), "round {round}: {opened:?}");
            }
        });
        let store = SqliteStore::open(&path).expect("open");
        let mut agent = Agent::new(&store, "a");
        agent.turn(&store, "one");
        assert!(restore::<Machine, _>(&store, "a").is_ok());
    }
}

/// A reader on another connection (another process: an inspector, a
/// second worker) while a writer appends: each read of the agent sees one
/// state of the store, never a step's snapshot and effect rows without
/// its event, which would read as a log that lost its last steps.
#[test]
fn sqlite_an_agent_read_while_another_connection_appends_is_never_corrupt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let config = SqliteConfig::default().synchronous(Synchronous::Normal);
    let writer = SqliteStore::open_with(&path, config).expect("open");
    let reader = SqliteStore::open_with(&path, config).expect("open");
    let mut agent = Agent::new(&writer, "a").policy(SnapshotPolicy::Every(NonZeroU64::MIN));
    let done = AtomicBool::new(false);
    let reads = std::thread::scope(|scope| {
        let reads = scope.spawn(|| {
            let mut reads = 0_u32;
            while !done.load(Ordering::SeqCst) {
                let info = reader.agent("a");
                assert!(matches!(info, Ok(Some(_))), "read {reads}: {info:?}");
                reads += 1;
            }
            reads
        });
        for i in 0..300 {
            agent.turn(&writer, &i.to_string());
        }
        done.store(true, Ordering::SeqCst);
        reads.join().expect("no read saw a corrupt store")
    });
    assert!(reads > 0);
}

#[test]
fn sqlite_steps_survive_reopening_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let live = {
        let store = SqliteStore::open(&path).expect("open");
        let mut agent = Agent::new(&store, "a");
        agent.turn(&store, "one");
        agent.step(&store, Event::Prompt("two".into())).expect("prompt");
        agent.machine
    };
    let store = SqliteStore::open(&path).expect("reopen");
    let restored = restore::<Machine, _>(&store, "a").expect("restore");
    assert_same(&restored.machine, &live);
    assert_eq!(restored.in_flight.len(), 2);
}

#[test]
fn effect_kinds_round_trip_through_their_codes() {
    for kind in [EffectKind::Task, EffectKind::Stream, EffectKind::Timer, EffectKind::Pause, EffectKind::Send] {
        assert_eq!(EffectKind::from_code(kind.code()), Some(kind));
    }
    assert_eq!(EffectKind::from_code(0), None);
    assert_eq!(EffectKind::from_code(6), None);
}

#[test]
fn the_memory_quota_counts_every_byte_of_text_and_allows_exactly_the_quota() {
    let snapshot = Snapshot { format: FORMAT_VERSION, state: "Idle".into(), data: "0123456789".into() };
    let created = "a".len() + "Chat".len() + "Idle".len() + 10;
    let step = StepRecord {
        seq: 1,
        at: SystemTime::now(),
        state: "Calling".into(),
        event: "{\"event\":\"x\"}".into(),
        origin: None,
        finished: vec![],
        started: vec![Effect::task("call-1"), Effect::timer("t", SystemTime::now(), "ev".into())],
        snapshot: Some(snapshot.clone()),
    };
    let appended = 7 + 13 + 6 + (1 + 2) + (4 + 10);
    let store = MemoryStore::with_quota(created + appended);
    store.create("a", "Chat", SystemTime::now(), &snapshot).expect("create");
    assert_eq!(store.bytes(), created);
    store.append("a", &step).expect("exactly the quota");
    assert_eq!(store.bytes(), created + appended);
    let next = StepRecord { seq: 2, snapshot: None, started: vec![], ..step };
    assert!(matches!(store.append("a", &next), Err(StoreError::Full(_))));
    assert_eq!(store.bytes(), created + appended);
}

#[test]
fn sqlite_appends_several_steps_in_one_transaction_or_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path().join("agents.db")).expect("open");
    let mut agent = Agent::new(&store, "a");
    agent.turn(&store, "one");
    let next = store.agent("a").expect("agent").expect("known").next_seq;
    let step = |seq| StepRecord {
        seq,
        at: SystemTime::now(),
        state: "Idle".into(),
        event: "\"Stop\"".into(),
        origin: None,
        finished: vec![],
        started: vec![],
        snapshot: None,
    };
    let err = store.append_all("a", &[step(next), step(next + 1), step(next + 5)]).expect_err("a gap");
    assert!(matches!(err, StoreError::Conflict { found, .. } if found == next + 5), "{err}");
    assert_eq!(store.agent("a").expect("agent").expect("known").next_seq, next, "nothing of the batch written");
    store.append_all("a", &[step(next), step(next + 1)]).expect("written");
    assert_eq!(store.agent("a").expect("agent").expect("known").next_seq, next + 2);
    let memory = MemoryStore::new();
    let mut agent = Agent::new(&memory, "a");
    agent.turn(&memory, "one");
    memory.append_all("a", &[step(next), step(next + 1)]).expect("the default appends in order");
    assert_eq!(memory.agent("a").expect("agent").expect("known").next_seq, next + 2);
}
