//! The fleet reading rows written outside it (by hand, or by a bug of an
//! older release) that break what its tables promise: each gives a typed
//! error, never a panic of the caller, and costs the other agents nothing.

mod fleet_support;

use std::time::Duration;

use agent_fsm::fleet::{FleetError, Worker};
use agent_fsm::store::StoreError;
use fleet_support::{Db, Event, Job, Proc, taken, until, within};
use tokio::time::Instant;

const LEASE: Duration = Duration::from_millis(900);

/// An agent's row whose step counter is below the store's first (0, or
/// the smallest `bigint`) is read by `status` as corrupt: not as a step
/// count that wrapped, nor a subtraction that overflows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_counter_below_the_first_reads_as_corrupt() {
    let Some(db) = Db::new("rows_next_seq") else { return };
    let fleet = db.fleet(LEASE).await;
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    let client = db.client().await;
    for next in [0, i64::MIN] {
        client.execute("UPDATE agents SET next_seq = $1 WHERE agent = 'job'", &[&next]).await.expect("updates");
        let status = within(fleet.status("job")).await;
        assert!(
            matches!(&status, Err(FleetError::Store(StoreError::Corrupt { agent, what: "agent", .. })) if agent == "job"),
            "next_seq {next}: {status:?}"
        );
    }
    client.execute("UPDATE agents SET next_seq = 1 WHERE agent = 'job'", &[]).await.expect("updates");
    assert_eq!(within(fleet.status("job")).await.expect("reads").steps, 0);
    db.drop_schema().await;
}

/// A lease whose epoch was written out of range costs the other agents
/// nothing: one at the largest `bigint` (which a claim cannot raise) is
/// never claimed, rather than failing every claim that picks it, and one
/// below zero is claimed from epoch 1 on and kept, not lost at each
/// renewal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_with_an_epoch_out_of_range_costs_the_others_nothing() {
    let Some(db) = Db::new("rows_epoch") else { return };
    let fleet = db.fleet(LEASE).await;
    // "a-max" sorts first: every claim picks it while it is claimable.
    for agent in ["a-max", "b-negative", "job"] {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
    }
    let client = db.client().await;
    client.execute("UPDATE leases SET epoch = $1 WHERE agent = 'a-max'", &[&i64::MAX]).await.expect("updates");
    client.execute("UPDATE leases SET epoch = -5 WHERE agent = 'b-negative'", &[]).await.expect("updates");
    for agent in ["b-negative", "job"] {
        within(fleet.send(agent, &Event::Add(1))).await.expect("sent");
    }
    let a = Proc::start(Worker::new(&fleet, "a").capacity(10).poll(Duration::from_millis(200)));
    for agent in ["b-negative", "job"] {
        until("the event is applied", || async { taken(&fleet, agent).await == [1] }).await;
    }
    // Kept across renewals: a second event, sent after a few of them, is
    // taken under the same claim.
    let renewals = Instant::now() + LEASE * 2;
    until("two leases passed", || async { Instant::now() >= renewals }).await;
    within(fleet.send("b-negative", &Event::Add(2))).await.expect("sent");
    until("the second event is applied", || async { taken(&fleet, "b-negative").await == [1, 2] }).await;
    let status = within(fleet.status("b-negative")).await.expect("reads");
    assert_eq!((status.worker.as_deref(), status.epoch), (Some("a"), 1), "{status:?}");
    let status = within(fleet.status("a-max")).await.expect("reads");
    assert_eq!(status.worker, None, "{status:?}");
    let report = a.stop().await;
    assert_eq!((report.claimed, report.lost, report.failed), (2, 0, 0), "{report:?}");
    db.drop_schema().await;
}
