//! A worker whose runtime its own agents keep busy: a burst of steps,
//! each written and then performed with a synchronous call that blocks
//! the runtime's thread, holds it for longer than a lease. The agents are
//! making progress all along, so the worker keeps their leases: another
//! worker with room takes none of them, and none is stopped and resumed.
//! A worker whose runtime stopped for longer than a lease (a pause) and
//! that no other worker replaced meanwhile keeps its agents too.

mod fleet_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use agent_fsm::fleet::Worker;
use fleet_support::{Db, Event, Job, Proc, taken, until, within};
use tokio::time::Instant;

const LEASE: Duration = Duration::from_millis(900);
/// Steps in the burst, each blocking the thread for `STALL_MS`: together
/// more than two leases, each well under one.
const STEPS: u32 = 10;
const STALL_MS: u64 = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_slow_steps_costs_the_worker_no_lease() {
    let Some(db) = Db::new("busy_burst") else { return };
    let fleet = db.fleet(LEASE).await;
    for agent in ["slow", "calm"] {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
    }
    // Sent before any worker runs: the feeder hands them to the agent at
    // once, and it takes them in one burst, the thread never let go.
    for n in 1..=STEPS {
        within(fleet.send("slow", &Event::Add(n))).await.expect("sent");
    }
    let a = Proc::start(Worker::new(&fleet, "a").capacity(10).poll(Duration::from_millis(200)));
    a.tools.stall_ms.store(STALL_MS, Ordering::Relaxed);
    until("a claims both agents", || async {
        let mut both = true;
        for agent in ["slow", "calm"] {
            both &= within(fleet.status(agent)).await.expect("reads").worker.as_deref() == Some("a");
        }
        both
    })
    .await;
    // Room for both, and looking for agents whose leases lapsed.
    let b = Proc::start(Worker::new(&fleet, "b").capacity(10).poll(Duration::from_millis(200)));
    until("every event is applied", || async { within(fleet.status("slow")).await.expect("reads").unapplied == 0 })
        .await;
    assert_eq!(taken(&fleet, "slow").await, (1..=STEPS).collect::<Vec<_>>());
    a.tools.stall_ms.store(0, Ordering::Relaxed);
    for agent in ["slow", "calm"] {
        let status = within(fleet.status(agent)).await.expect("reads");
        assert_eq!((status.worker.as_deref(), status.epoch), (Some("a"), 1), "{agent}: {status:?}");
    }
    assert!(b.spawned().is_empty(), "b took {:?}", b.spawned());
    // b first: a hands its agents back when it stops, for b to take.
    let rb = b.stop().await;
    let ra = a.stop().await;
    assert_eq!((ra.claimed, ra.lost, ra.failed), (2, 0, 0), "{ra:?}");
    assert_eq!(rb.claimed, 0, "{rb:?}");
    db.drop_schema().await;
}

/// Stopped past its leases (here its runtime frozen whole, as `SIGSTOP`
/// freezes a process) with no other worker to take its agents, a worker
/// that wakes finds its leases still its own and keeps its agents: none
/// is stopped and claimed again (which would perform its work in flight
/// again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_woken_after_its_leases_lapsed_keeps_the_agents_nobody_took() {
    let Some(db) = Db::new("busy_woken") else { return };
    let fleet = db.fleet(LEASE).await;
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    let a = Proc::start(Worker::new(&fleet, "a").capacity(10).poll(Duration::from_millis(200)));
    within(fleet.send("job", &Event::Add(1))).await.expect("sent");
    until("the event is applied", || async { taken(&fleet, "job").await == [1] }).await;

    let thaw = a.freeze();
    let client = db.client().await;
    until("the lease lapsed", || async {
        let row = client.query_one("SELECT expires_at < now() FROM leases WHERE agent = 'job'", &[]).await;
        row.expect("reads").get::<_, Option<bool>>(0) == Some(true)
    })
    .await;
    // Past a whole lease more: the worker's last renewal is long gone.
    let frozen = Instant::now() + LEASE;
    until("another lease passed", || async { Instant::now() >= frozen }).await;
    drop(thaw);

    within(fleet.send("job", &Event::Add(2))).await.expect("sent");
    until("the second event is applied", || async { taken(&fleet, "job").await == [1, 2] }).await;
    let status = within(fleet.status("job")).await.expect("reads");
    assert_eq!((status.worker.as_deref(), status.epoch), (Some("a"), 1), "{status:?}");
    let report = a.stop().await;
    assert_eq!((report.claimed, report.lost, report.failed), (1, 0, 0), "{report:?}");
    db.drop_schema().await;
}
