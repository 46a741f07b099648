//! The fleet reading rows written outside it (by hand, or by a bug of an
//! older release) that break what its tables promise: each gives a typed
//! error, never a panic of the caller.

mod fleet_support;

use std::time::Duration;

use agent_fsm::fleet::FleetError;
use agent_fsm::store::StoreError;
use fleet_support::{Db, Job, within};

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
