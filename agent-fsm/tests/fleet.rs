//! The fleet on a real Postgres server (`AGENT_FSM_PG_URL`, each test in a
//! schema of its own): two workers share agents with none on both; a worker
//! frozen past its leases loses its agents to another, which resumes them
//! from their checkpoints under the next epoch while the frozen one can
//! no longer write; inbox events sent before and while an agent runs, and
//! across a hand-over, are applied once each, in order; placement picks
//! the worker with the most room, and an agent placed on a full worker goes
//! to another a lease later, and a create wakes the workers once it placed
//! its agent; a clean shutdown hands agents back at once; a
//! claim skips a lease a write in flight holds, and a write stuck on a lock
//! costs the worker no other lease; a live worker keeps its
//! agents for many leases; an agent whose id does not fit a notification
//! is sent its events; an event sent written otherwise than the machine
//! writes it is rewritten before it is delivered; an agent of another
//! machine is not adopted; a worker cut off from the database stops its
//! agents.

mod fleet_support;

use std::sync::PoisonError;
use std::time::{Duration, SystemTime};

use agent_fsm::fleet::{Fleet, FleetConfig, FleetError, Worker};
use agent_fsm::store::{CheckpointStore, INPUT_ORIGIN, StepRecord, StoreError};
use fleet_support::{Db, Event, Job, Proc, Relay, taken, until, within};

const LEASE: Duration = Duration::from_millis(900);

/// An event row: its seq, the worker and epoch that wrote it, its origin.
type Written = (i64, Option<String>, Option<i64>, Option<String>);

/// Sends `Finish` to every agent and waits until all are done.
async fn finish_all(fleet: &agent_fsm::fleet::Fleet, agents: &[String]) {
    for agent in agents {
        within(fleet.send(agent, &Event::Finish)).await.expect("sent");
    }
    until("every agent is done", || async { within(fleet.unfinished()).await.expect("reads").is_empty() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_share_the_agents_and_none_runs_on_both() {
    let Some(db) = Db::new("two_workers_share") else { return };
    let fleet = db.fleet(LEASE).await;
    let a = Proc::start(Worker::new(&fleet, "a").capacity(5).poll(Duration::from_millis(200)));
    let b = Proc::start(Worker::new(&fleet, "b").capacity(5).poll(Duration::from_millis(200)));
    let agents: Vec<String> = (0..8).map(|i| format!("job-{i}")).collect();
    for agent in &agents {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
    }
    until("every agent runs", || async {
        let mut held = 0;
        for agent in &agents {
            held += usize::from(within(fleet.status(agent)).await.expect("reads").worker.is_some());
        }
        held == agents.len()
    })
    .await;
    for (i, agent) in agents.iter().enumerate() {
        within(fleet.send(agent, &Event::Add(u32::try_from(i).expect("small")))).await.expect("sent");
    }
    finish_all(&fleet, &agents).await;

    let (on_a, on_b) = (a.spawned(), b.spawned());
    assert!(on_a.len() <= 5 && on_b.len() <= 5, "{on_a:?} {on_b:?}");
    assert_eq!(on_a.len() + on_b.len(), agents.len(), "{on_a:?} {on_b:?}");
    assert!(on_a.iter().all(|agent| !on_b.contains(agent)), "{on_a:?} {on_b:?}");
    for (i, agent) in agents.iter().enumerate() {
        assert_eq!(taken(&fleet, agent).await, [u32::try_from(i).expect("small")]);
        let status = within(fleet.status(agent)).await.expect("reads");
        assert!(status.done && status.worker.is_none() && status.epoch == 1, "{status:?}");
        assert_eq!(status.state, "Done");
    }
    let (ra, rb) = (a.stop().await, b.stop().await);
    assert_eq!(ra.finished + rb.finished, 8, "{ra:?} {rb:?}");
    assert_eq!((ra.lost, rb.lost, ra.failed, rb.failed), (0, 0, 0, 0));
    assert!(matches!(within(fleet.send("job-0", &Event::Add(1))).await, Err(FleetError::Finished(_))));
    assert!(matches!(within(fleet.send("nobody", &Event::Add(1))).await, Err(FleetError::UnknownAgent(_))));
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_worker_loses_its_agents_which_resume_elsewhere_under_the_next_epoch() {
    let Some(db) = Db::new("frozen_worker") else { return };
    let fleet = db.fleet(LEASE).await;
    let a = Proc::start(Worker::new(&fleet, "a").capacity(10).poll(Duration::from_millis(200)));
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    for n in [1, 2] {
        within(fleet.send("job", &Event::Add(n))).await.expect("sent");
    }
    // A tool that waits: in flight when the worker freezes.
    within(fleet.send("job", &Event::Work(3))).await.expect("sent");
    until("the tool runs on a", || async { !a.tools.calls.lock().expect("lock").is_empty() }).await;
    assert_eq!(taken(&fleet, "job").await, [1, 2]);
    let before = within(fleet.status("job")).await.expect("reads");
    assert_eq!((before.worker.as_deref(), before.epoch, before.state.as_str()), (Some("a"), 1, "Working"));

    let thaw = a.freeze();
    // Sent while its owner is frozen: waits in the inbox, past the tool.
    for n in [4, 5] {
        within(fleet.send("job", &Event::Add(n))).await.expect("sent");
    }
    let b = Proc::start(Worker::new(&fleet, "b").capacity(10).poll(Duration::from_millis(200)));
    until("b claims the agent", || async {
        within(fleet.status("job")).await.expect("reads").worker.as_deref() == Some("b")
    })
    .await;
    let after = within(fleet.status("job")).await.expect("reads");
    assert_eq!(after.epoch, 2, "{after:?}");
    // b resumed it from its checkpoint: the tool in flight runs again there.
    until("the tool runs on b", || async { !b.tools.calls.lock().expect("lock").is_empty() }).await;
    b.tools.permits.add_permits(1);
    until("b applied the inbox", || async { taken(&fleet, "job").await.len() == 5 }).await;
    assert_eq!(taken(&fleet, "job").await, [1, 2, 3, 4, 5]);

    // The frozen worker wakes with its tool done: whatever it tries to
    // write for the agent now is refused, and it drops the agent.
    a.tools.permits.add_permits(1);
    drop(thaw);
    within(fleet.send("job", &Event::Add(6))).await.expect("sent");
    until("b applied the last event", || async { taken(&fleet, "job").await.len() == 6 }).await;
    let stale = fleet.store().fenced("a", 1);
    let next = stale.agent("job").expect("reads").expect("there").next_seq;
    let step = StepRecord {
        seq: next,
        at: SystemTime::now(),
        state: "Idle".into(),
        event: "\"Finish\"".into(),
        origin: None,
        finished: Vec::new(),
        started: Vec::new(),
        snapshot: None,
    };
    let refused = tokio::task::spawn_blocking(move || stale.append("job", &step)).await.expect("joins");
    assert!(matches!(refused, Err(StoreError::Fenced { .. })), "{refused:?}");
    finish_all(&fleet, &["job".to_owned()]).await;

    // Every step a's epoch wrote came before every step of b's.
    let client = db.client().await;
    let rows = client
        .query("SELECT seq, worker, epoch, origin FROM events WHERE agent = 'job' ORDER BY seq", &[])
        .await
        .expect("reads");
    let log: Vec<Written> = rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))).collect();
    let seqs: Vec<i64> = log.iter().map(|r| r.0).collect();
    assert_eq!(seqs, (1..=i64::try_from(log.len()).expect("small")).collect::<Vec<_>>());
    let owners: Vec<(Option<&str>, Option<i64>)> = log.iter().map(|r| (r.1.as_deref(), r.2)).collect();
    let first_b = owners.iter().position(|o| *o == (Some("b"), Some(2))).expect("b wrote");
    assert!(owners[..first_b].iter().all(|o| *o == (Some("a"), Some(1))), "{owners:?}");
    assert!(owners[first_b..].iter().all(|o| *o == (Some("b"), Some(2))), "{owners:?}");
    // Six events from the inbox (and `Finish`), each applied by one step.
    let inputs = log.iter().filter(|r| r.3.as_deref() == Some(INPUT_ORIGIN)).count();
    assert_eq!(inputs, 7, "{log:?}");
    let applied =
        client.query("SELECT applied_seq FROM inbox WHERE agent = 'job' ORDER BY id", &[]).await.expect("reads");
    let applied: Vec<Option<i64>> = applied.iter().map(|r| r.get(0)).collect();
    assert!(applied.iter().all(Option::is_some), "{applied:?}");
    assert!(applied.windows(2).all(|w| w[0] < w[1]), "{applied:?}");

    let (ra, rb) = (a.stop().await, b.stop().await);
    assert_eq!(ra.lost, 1, "{ra:?}");
    assert_eq!((rb.claimed, rb.finished), (1, 1), "{rb:?}");
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_events_sent_before_and_while_an_agent_runs_are_applied_once_in_order() {
    let Some(db) = Db::new("inbox_in_order") else { return };
    let fleet = db.fleet(LEASE).await;
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    // No worker yet: the events wait in the inbox.
    for n in 1..=5 {
        within(fleet.send("job", &Event::Add(n))).await.expect("sent");
    }
    assert_eq!(within(fleet.status("job")).await.expect("reads").unapplied, 5);
    // A slow poll: the notifications wake the worker.
    let a = Proc::start(Worker::new(&fleet, "a").poll(Duration::from_secs(60)));
    for n in 6..=40 {
        within(fleet.send("job", &Event::Add(n))).await.expect("sent");
    }
    until("every event is applied", || async { within(fleet.status("job")).await.expect("reads").unapplied == 0 })
        .await;
    assert_eq!(taken(&fleet, "job").await, (1..=40).collect::<Vec<_>>());
    let status = within(fleet.status("job")).await.expect("reads");
    assert_eq!((status.steps, status.state.as_str()), (40, "Idle"));
    let report = a.stop().await;
    assert_eq!(report.handed_back, 1, "{report:?}");
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn placement_picks_the_live_worker_with_the_most_room() {
    let Some(db) = Db::new("placement") else { return };
    // A lease long enough that no renewal is late on a loaded machine: a
    // lease that expired would let the other worker take an agent over,
    // which this test is not about.
    let fleet = db.fleet(Duration::from_secs(5)).await;
    let small = Proc::start(Worker::new(&fleet, "small").capacity(2));
    let big = Proc::start(Worker::new(&fleet, "big").capacity(4));
    let client = db.client().await;
    until("both workers registered", || async {
        let row = client.query_one("SELECT count(*) FROM workers", &[]).await.expect("reads");
        row.get::<_, i64>(0) == 2
    })
    .await;
    // Room: big 4, small 2; then 3 and 2; then 2 and 2 (a tie goes to the
    // first name); then 1 and 2.
    let mut placed = Vec::new();
    for i in 0..4 {
        let agent = format!("job-{i}");
        let worker = within(fleet.create(&agent, &Job::new(Vec::new()))).await.expect("created").expect("placed");
        until("the agent runs", || async { within(fleet.status(&agent)).await.expect("reads").worker.is_some() }).await;
        // Claimed by the worker it was placed on.
        assert_eq!(within(fleet.status(&agent)).await.expect("reads").worker.as_deref(), Some(worker.as_str()));
        placed.push(worker);
    }
    assert_eq!(placed, ["big", "big", "big", "small"]);
    assert_eq!((small.spawned().len(), big.spawned().len()), (1, 3));
    let (rs, rb) = (small.stop().await, big.stop().await);
    // What small handed back, big may have claimed before it stopped.
    assert_eq!(rs.handed_back, 1, "{rs:?}");
    assert_eq!(rb.handed_back, rb.claimed, "{rb:?}");
    // No live worker: placed on none, for the first to claim.
    assert_eq!(within(fleet.create("later", &Job::new(Vec::new()))).await.expect("created"), None);
    db.drop_schema().await;
}

/// A create wakes the workers: the claim notification comes on the
/// fleet's channel once the agent is placed, from the placing statement
/// itself, and no later create of the same agent sends another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_wakes_the_workers_once_it_placed_the_agent() {
    use futures::StreamExt as _;
    let Some(db) = Db::new("create_wakes") else { return };
    let fleet = db.fleet(LEASE).await;
    let (client, mut connection) = tokio_postgres::connect(&db.url, tokio_postgres::NoTls).await.expect("connects");
    let (tell, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
    tokio::spawn(async move {
        while let Some(Ok(message)) = messages.next().await {
            if let tokio_postgres::AsyncMessage::Notification(note) = message {
                let _ = tell.send((note.channel().to_owned(), note.payload().to_owned()));
            }
        }
    });
    let channel = format!("{}.fleet", db.schema);
    client.batch_execute(&format!("LISTEN \"{channel}\"")).await.expect("listens");
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    let note = within(async { heard.recv().await }).await.expect("a notification");
    assert_eq!(note, (channel, "claim".to_owned()));
    // A second create is refused, and wakes nobody.
    let again = within(fleet.create("job", &Job::new(Vec::new()))).await;
    assert!(matches!(again, Err(FleetError::AgentExists(_))), "{again:?}");
    client.batch_execute("SELECT 1").await.expect("a round trip after the create");
    assert!(heard.try_recv().is_err(), "no wake-up for an agent not placed");
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_shutdown_hands_the_agents_back_before_their_leases_expire() {
    let Some(db) = Db::new("clean_shutdown") else { return };
    // Leases far longer than the test may wait.
    let fleet = db.fleet(Duration::from_secs(600)).await;
    let a = Proc::start(Worker::new(&fleet, "a"));
    let agents: Vec<String> = (0..3).map(|i| format!("job-{i}")).collect();
    for agent in &agents {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
        within(fleet.send(agent, &Event::Add(1))).await.expect("sent");
    }
    until("a applied every event", || async {
        let mut left = 0;
        for agent in &agents {
            left += within(fleet.status(agent)).await.expect("reads").unapplied;
        }
        left == 0
    })
    .await;
    // One agent is mid-tool when a stops: the tool runs again on b.
    within(fleet.send("job-0", &Event::Work(7))).await.expect("sent");
    until("the tool runs on a", || async { !a.tools.calls.lock().expect("lock").is_empty() }).await;
    let b = Proc::start(Worker::new(&fleet, "b"));
    let report = a.stop().await;
    assert_eq!(report.handed_back, 3, "{report:?}");
    until("b holds every agent", || async {
        let mut on_b = 0;
        for agent in &agents {
            let status = within(fleet.status(agent)).await.expect("reads");
            on_b += usize::from(status.worker.as_deref() == Some("b") && status.epoch == 2);
        }
        on_b == agents.len()
    })
    .await;
    b.tools.permits.add_permits(1);
    until("the tool's result is taken", || async { taken(&fleet, "job-0").await == [1, 7] }).await;
    finish_all(&fleet, &agents).await;
    assert_eq!(within(fleet.status("job-1")).await.expect("reads").state, "Done");
    let report = b.stop().await;
    assert_eq!(report.finished, 3, "{report:?}");
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_skips_a_lease_locked_by_a_write_in_flight() {
    let Some(db) = Db::new("claim_skips_locked") else { return };
    let fleet = db.fleet(LEASE).await;
    for agent in ["a0", "a1"] {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
    }
    // A fenced write of a0 in flight holds its lease row, shared.
    let mut client = db.client().await;
    let write = client.transaction().await.expect("begins");
    write.execute("SELECT 1 FROM leases WHERE agent = 'a0' FOR SHARE", &[]).await.expect("locks");
    let w = Proc::start(Worker::new(&fleet, "w"));
    until("a1 is claimed while a0 is locked", || async {
        within(fleet.status("a1")).await.expect("reads").worker.as_deref() == Some("w")
    })
    .await;
    assert_eq!(within(fleet.status("a0")).await.expect("reads").worker, None);
    write.rollback().await.expect("ends");
    until("a0 is claimed once free", || async {
        within(fleet.status("a0")).await.expect("reads").worker.as_deref() == Some("w")
    })
    .await;
    let report = w.stop().await;
    assert_eq!(report.claimed, 2, "{report:?}");
    db.drop_schema().await;
}

/// A step write stuck on a lock (here its inbox row's, as a sender
/// stopped mid-transaction would hold it) blocks its runtime thread, which
/// here runs the worker's loop too: it fails after a third of a lease, and
/// only its agent stops, to be resumed once the lock is gone. The worker's
/// other lease is renewed throughout, and the event is taken once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_stuck_on_a_lock_costs_the_worker_no_other_lease() {
    let Some(db) = Db::new("stuck_write_renewals") else { return };
    let fleet = db.fleet(LEASE).await;
    for agent in ["a0", "a1"] {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
    }
    within(fleet.send("a0", &Event::Add(1))).await.expect("sent");
    let mut client = db.client().await;
    let lock = client.transaction().await.expect("begins");
    lock.execute("SELECT 1 FROM inbox WHERE agent = 'a0' FOR UPDATE", &[]).await.expect("locks");
    let w = Proc::start(Worker::new(&fleet, "w"));
    until("a1 runs on w", || async { within(fleet.status("a1")).await.expect("reads").worker.as_deref() == Some("w") })
        .await;
    // Several leases go by with a0's writes stuck: a1's lease is renewed,
    // and has not lapsed.
    tokio::time::sleep(LEASE * 4).await;
    let status = within(fleet.status("a1")).await.expect("reads");
    assert_eq!((status.worker.as_deref(), status.epoch), (Some("w"), 1), "{status:?}");
    let live = "SELECT expires_at > now() FROM leases WHERE agent = 'a1'";
    let reader = db.client().await;
    assert!(reader.query_one(live, &[]).await.expect("reads").get::<_, bool>(0), "a1's lease is current");
    lock.rollback().await.expect("ends");
    until("a0 took its event", || async { within(fleet.status("a0")).await.expect("reads").unapplied == 0 }).await;
    assert_eq!(taken(&fleet, "a0").await, [1]);
    let report = w.stop().await;
    assert_eq!(report.lost, 0, "{report:?}");
    assert!(report.failed >= 1, "a0's stuck write failed: {report:?}");
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_placed_on_a_full_worker_is_taken_by_another_a_lease_later() {
    let Some(db) = Db::new("placed_on_full") else { return };
    let fleet = db.fleet(LEASE).await;
    let full = Proc::start(Worker::new(&fleet, "full").capacity(1));
    within(fleet.create("x", &Job::new(Vec::new()))).await.expect("created");
    until("x runs", || async { within(fleet.status("x")).await.expect("reads").worker.is_some() }).await;
    // The only live worker, though it has no room.
    assert_eq!(within(fleet.create("y", &Job::new(Vec::new()))).await.expect("created").as_deref(), Some("full"));
    let free = Proc::start(Worker::new(&fleet, "free"));
    until("y runs on the free worker", || async {
        within(fleet.status("y")).await.expect("reads").worker.as_deref() == Some("free")
    })
    .await;
    let (rf, rr) = (full.stop().await, free.stop().await);
    assert_eq!((rf.claimed, rf.handed_back), (1, 1), "{rf:?}");
    assert!(rr.claimed >= 1, "{rr:?}");
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_worker_keeps_its_agents_for_many_leases() {
    let Some(db) = Db::new("keeps_its_agents") else { return };
    let fleet = db.fleet(LEASE).await;
    let a = Proc::start(Worker::new(&fleet, "a"));
    let agents: Vec<String> = (0..3).map(|i| format!("job-{i}")).collect();
    for agent in &agents {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
    }
    until("a runs every agent", || async {
        let mut on_a = 0;
        for agent in &agents {
            on_a += usize::from(within(fleet.status(agent)).await.expect("reads").worker.as_deref() == Some("a"));
        }
        on_a == agents.len()
    })
    .await;
    // Another worker with room, waiting for a lease that expires.
    let b = Proc::start(Worker::new(&fleet, "b"));
    tokio::time::sleep(LEASE * 4).await;
    for agent in &agents {
        let status = within(fleet.status(agent)).await.expect("reads");
        assert_eq!((status.worker.as_deref(), status.epoch), (Some("a"), 1), "{status:?}");
    }
    assert!(b.spawned().is_empty(), "{:?}", b.spawned());
    let (ra, rb) = (a.stop().await, b.stop().await);
    assert_eq!((ra.lost, ra.handed_back), (0, 3), "{ra:?}");
    assert_eq!(rb.lost, 0, "{rb:?}");
    db.drop_schema().await;
}

/// An agent whose id is as long as the fleet takes (`MAX_ID_BYTES`, none
/// of it compressible: a key Postgres indexes as it is) is created and
/// sent events, and its worker is woken for them without waiting for its
/// poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_with_the_longest_id_is_sent_its_events() {
    let Some(db) = Db::new("long_id") else { return };
    let fleet = db.fleet(LEASE).await;
    let agent = fleet_support::noise(agent_fsm::fleet::MAX_ID_BYTES);
    within(fleet.create(&agent, &Job::new(Vec::new()))).await.expect("created");
    // A poll too slow to matter: only a notification wakes the feeder.
    let a = Proc::start(Worker::new(&fleet, "a").poll(Duration::from_secs(3600)));
    until("the agent runs", || async { within(fleet.status(&agent)).await.expect("reads").worker.is_some() }).await;
    // Once its feeder has read the inbox, each event needs a wake.
    for n in [1, 7] {
        within(fleet.send(&agent, &Event::Add(n))).await.expect("sent");
        until("the event is applied", || async { within(fleet.status(&agent)).await.expect("reads").unapplied == 0 })
            .await;
    }
    assert_eq!(taken(&fleet, &agent).await, [1, 7]);
    a.stop().await;
    db.drop_schema().await;
}

/// An event sent written otherwise than the machine writes it (here by
/// `json!`, which sorts its keys, and with a `null` for a unit variant's
/// data) is rewritten in the inbox as the machine writes it before it is
/// delivered: the step that takes it finds its row by that text, even
/// when it takes it out of turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_written_otherwise_is_rewritten_as_the_machine_writes_it() {
    let Some(db) = Db::new("rewritten") else { return };
    let fleet = db.fleet(LEASE).await;
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    within(fleet.send("job", &serde_json::json!({"event": "add", "data": 3}))).await.expect("sent");
    within(fleet.send("job", &serde_json::json!({"event": "finish", "data": null}))).await.expect("sent");
    let a = Proc::start(Worker::new(&fleet, "a"));
    until("the agent is done", || async { within(fleet.unfinished()).await.expect("reads").is_empty() }).await;
    let client = db.client().await;
    let rows =
        client.query("SELECT event, applied_seq FROM inbox WHERE agent = 'job' ORDER BY id", &[]).await.expect("reads");
    let rows: Vec<(String, Option<i64>)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let own = |event: &Event| serde_json::to_string(event).expect("serializes");
    assert_eq!(rows, [(own(&Event::Add(3)), Some(1)), (own(&Event::Finish), Some(2))]);
    assert_eq!(taken(&fleet, "job").await, [3]);
    a.stop().await;
    db.drop_schema().await;
}

/// Writes agent `agent` of machine `machine`, in state `state`, to the
/// fleet's store only, as a create cut off before its lease does.
async fn store_only(fleet: &Fleet, agent: &str, machine: &str, state: &str) {
    let snapshot = agent_fsm::store::Snapshot { format: 1, state: state.into(), data: String::new() };
    let (store, agent, machine) = (fleet.store().clone(), agent.to_owned(), machine.to_owned());
    tokio::task::spawn_blocking(move || store.create(&agent, &machine, SystemTime::now(), &snapshot))
        .await
        .expect("joins")
        .expect("created in the store");
}

/// Creating an agent again completes a create cut off before its lease,
/// but an agent the store holds as another machine is not adopted: no
/// worker could resume it as this one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_of_another_machine_is_not_adopted() {
    let Some(db) = Db::new("other_machine") else { return };
    let fleet = db.fleet(LEASE).await;
    store_only(&fleet, "other", "Other", "Elsewhere").await;
    let adopted = within(fleet.create("other", &Job::new(Vec::new()))).await;
    assert!(matches!(&adopted, Err(FleetError::AgentExists(id)) if id == "other"), "{adopted:?}");
    assert!(within(fleet.unfinished()).await.expect("reads").is_empty(), "no lease was placed");

    // The same machine's agent, in the store without a lease yet (a create
    // cut off between its two writes), is completed.
    store_only(&fleet, "job", "Job", "Idle").await;
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("completed");
    assert_eq!(within(fleet.unfinished()).await.expect("reads"), ["job"]);
    db.drop_schema().await;
}

/// A worker cut off from the database by the network (its connections
/// open, its queries never answered: they hang rather than fail) stops its
/// agents once their leases have gone unrenewed for a lease, as another
/// worker may have them by then, and stops when told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_cut_off_from_the_database_stops_its_agents() {
    let Some(db) = Db::new("cut_off") else { return };
    let fleet = db.fleet(LEASE).await;
    let relay = Relay::start(&db.url).await;
    let config = FleetConfig::new(relay.url.clone()).schema(db.schema.clone()).lease(LEASE);
    let cut_off = within(Fleet::connect(config)).await.expect("connects through the relay");
    let a = Proc::start(Worker::new(&cut_off, "a"));
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    within(fleet.send("job", &Event::Work(1))).await.expect("sent");
    let (calls, dropped) = (a.tools.calls.clone(), a.tools.dropped.clone());
    until("the tool call runs", || async { !calls.lock().unwrap_or_else(PoisonError::into_inner).is_empty() }).await;
    relay.cut(true);
    until("the agent is stopped", || async { !dropped.lock().unwrap_or_else(PoisonError::into_inner).is_empty() })
        .await;
    relay.cut(false);
    let report = a.stop().await;
    assert_eq!(report.lost, 1, "{report:?}");
    db.drop_schema().await;
}
