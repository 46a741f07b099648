//! Two processes under one worker id, on a real Postgres server
//! (`AGENT_FSM_PG_URL`, each test in a schema of its own): the one that
//! registered last takes the agents over at once, and the one before it
//! stops its agents and ends with `FleetError::Replaced`, taking nothing
//! back and handing nothing of the other's back, whether it was running
//! all along, frozen while the other started, or told to stop before it
//! was told it had been replaced.

mod fleet_support;

use std::time::Duration;

use agent_fsm::fleet::{Fleet, FleetError, Worker, WorkerReport};
use fleet_support::{Db, Event, Job, Proc, taken, until, within};

const AGENTS: [&str; 4] = ["job-0", "job-1", "job-2", "job-3"];

/// Creates the agents, starts `first` under id `w` and waits until it
/// has applied one `Add(1)` to each; returns each agent's epoch then.
async fn first_runs_them(db: &Db, fleet: &Fleet, first: &Proc) -> Vec<u64> {
    for agent in AGENTS {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
        within(fleet.send(agent, &Event::Add(1))).await.expect("sent");
    }
    let mut epochs = Vec::new();
    for agent in AGENTS {
        until("the first process applies the event", || async {
            within(fleet.status(agent)).await.expect("reads").steps == 1
        })
        .await;
        let status = within(fleet.status(agent)).await.expect("reads");
        assert_eq!(status.worker.as_deref(), Some("w"), "{status:?}");
        epochs.push(status.epoch);
    }
    assert_eq!(workers(db).await, 1);
    assert_eq!(first.spawned().len(), AGENTS.len());
    epochs
}

/// Waits until every agent is held under the epoch after the first's.
async fn second_holds_them(fleet: &Fleet, epochs: &[u64]) {
    until("the second process holds every agent", || async {
        for (agent, epoch) in AGENTS.iter().zip(epochs) {
            if within(fleet.status(agent)).await.expect("reads").epoch != epoch + 1 {
                return false;
            }
        }
        true
    })
    .await;
}

/// How many rows the id `w` has in `workers`.
async fn workers(db: &Db) -> i64 {
    let client = db.client().await;
    client.query_one("SELECT count(*) FROM workers WHERE worker = 'w'", &[]).await.expect("reads").get(0)
}

/// The second process holds every agent under the epoch after the first's,
/// for several leases (nobody takes them back, nobody hands them back),
/// runs them to the end, then the agents of `later` (created after it
/// started, which only it runs), and stops cleanly.
async fn second_keeps_and_finishes_them(
    db: &Db,
    fleet: &Fleet,
    second: Proc,
    epochs: &[u64],
    lease: Duration,
    later: &[&str],
) {
    second_holds_them(fleet, epochs).await;
    tokio::time::sleep(lease * 4).await;
    for (agent, epoch) in AGENTS.iter().zip(epochs) {
        let status = within(fleet.status(agent)).await.expect("reads");
        assert_eq!((status.worker.as_deref(), status.epoch), (Some("w"), epoch + 1), "{agent}: {status:?}");
    }
    assert_eq!(workers(db).await, 1, "the row of the process that runs is kept");
    for agent in AGENTS {
        within(fleet.send(agent, &Event::Add(2))).await.expect("sent");
        within(fleet.send(agent, &Event::Finish)).await.expect("sent");
    }
    for agent in AGENTS {
        until("the agent finishes", || async { within(fleet.status(agent)).await.expect("reads").done }).await;
        assert_eq!(taken(fleet, agent).await, [1, 2], "{agent}");
    }
    for agent in later {
        within(fleet.send(agent, &Event::Finish)).await.expect("sent");
        until("the later agent finishes", || async { within(fleet.status(agent)).await.expect("reads").done }).await;
    }
    let mut spawned = second.spawned();
    spawned.sort();
    assert_eq!(spawned, [&AGENTS[..], later].concat());
    let report = second.stop().await;
    let all = (AGENTS.len() + later.len()) as u64;
    assert_eq!((report.claimed, report.finished, report.lost, report.failed), (all, all, 0, 0), "{report:?}");
    assert_eq!(workers(db).await, 0, "the last process removes the row");
}

/// The first process, replaced, ended with `Replaced`, its four agents
/// counted as lost, none handed back.
fn first_ends_replaced(ended: Result<WorkerReport, FleetError>) {
    match ended {
        Err(FleetError::Replaced { worker, report }) => {
            assert_eq!(worker, "w");
            assert_eq!((report.claimed, report.lost, report.handed_back), (4, 4, 0), "{report:?}");
        }
        other => panic!("the replaced process ended with {other:?}"),
    }
}

/// A second process started under the id of a live first one: the first
/// ends with `Replaced` at its next beat, and the second keeps every agent
/// under the next epoch for several leases, which it would not if the
/// first took agents back or handed them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_under_a_live_workers_id_replaces_it() {
    let Some(db) = Db::new("lives") else { return };
    let lease = Duration::from_millis(300);
    let fleet = db.fleet(lease).await;
    let worker = || Worker::new(&fleet, "w").capacity(10).poll(Duration::from_millis(50));
    let first = Proc::start(worker());
    let epochs = first_runs_them(&db, &fleet, &first).await;
    let second = Proc::start(worker());
    first_ends_replaced(first.ended().await);
    second_keeps_and_finishes_them(&db, &fleet, second, &epochs, lease, &[]).await;
    db.drop_schema().await;
}

/// A process restarted under the id of one that froze (a paused process)
/// takes its agents at once, long before their leases would lapse; the
/// frozen one, thawed, ends with `Replaced` and undoes nothing. An agent
/// created meanwhile, placed on the id while the new process is full and
/// announced to both, is not claimed by the thawed one, though it has room
/// and may not have been told yet that it was replaced: its claims name
/// its own life, which the row no longer does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_restarted_under_a_frozen_workers_id_takes_its_agents_at_once() {
    let Some(db) = Db::new("lives_frozen") else { return };
    // Long: the agents change hands well before any lease could lapse.
    let lease = Duration::from_secs(9);
    let fleet = db.fleet(lease).await;
    let worker = |capacity| Worker::new(&fleet, "w").capacity(capacity).lease(lease).poll(Duration::from_millis(50));
    let first = Proc::start(worker(10));
    let epochs = first_runs_them(&db, &fleet, &first).await;
    let thaw = first.freeze();
    let started = std::time::Instant::now();
    let second = Proc::start(worker(4));
    second_holds_them(&fleet, &epochs).await;
    assert!(started.elapsed() < lease, "taken only once the leases lapsed: {:?}", started.elapsed());
    let placed = within(fleet.create("job-4", &Job::new(Vec::new()))).await.expect("created");
    assert_eq!(placed.as_deref(), Some("w"));
    drop(thaw);
    first_ends_replaced(first.ended().await);
    let later = ["job-4"];
    second_keeps_and_finishes_them(&db, &fleet, second, &epochs, Duration::from_millis(300), &later).await;
    db.drop_schema().await;
}

/// The life the row of the id `w` names.
async fn life(db: &Db) -> Option<String> {
    let client = db.client().await;
    client.query_one("SELECT life FROM workers WHERE worker = 'w'", &[]).await.expect("reads").get(0)
}

/// A process told to stop just after another registered under its id,
/// before a beat could tell it so, finds out as it stops: it ends with
/// `Replaced`, and leaves the other's row as it is (neither stopping nor
/// removed) and its leases held (not handed back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_stopped_after_another_took_its_id_hands_nothing_back() {
    let Some(db) = Db::new("lives_stopped") else { return };
    // Long: no beat of the first comes between the second's start and the
    // first's stop.
    let lease = Duration::from_secs(9);
    let fleet = db.fleet(lease).await;
    let worker = || Worker::new(&fleet, "w").capacity(10).lease(lease).poll(Duration::from_millis(50));
    let first = Proc::start(worker());
    let epochs = first_runs_them(&db, &fleet, &first).await;
    let before = life(&db).await;
    assert!(before.is_some());
    let second = Proc::start(worker());
    until("the second process registers", || async { life(&db).await != before }).await;
    let after = life(&db).await;
    first_ends_replaced(first.stopped().await);
    let client = db.client().await;
    let row = client.query_one("SELECT stopping, life FROM workers WHERE worker = 'w'", &[]).await.expect("reads");
    assert_eq!((row.get::<_, bool>(0), row.get::<_, Option<String>>(1)), (false, after));
    second_keeps_and_finishes_them(&db, &fleet, second, &epochs, Duration::from_millis(300), &[]).await;
    db.drop_schema().await;
}
