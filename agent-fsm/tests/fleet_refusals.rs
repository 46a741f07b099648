//! Events a fleet's agent will never apply, on a real Postgres server
//! (`AGENT_FSM_PG_URL`, each test in a schema of its own): a send that
//! commits after the agent's terminal step is refused with
//! `FleetError::Finished`, even while the worker has not yet got round to
//! the agent's end; events still waiting when the agent finished are
//! refused, visibly, not left unapplied for ever; an inbox an earlier
//! release created gains the column a refusal is kept in.

mod fleet_support;

use std::time::Duration;

use agent_fsm::fleet::{FleetError, Refusal, Worker};
use fleet_support::{Db, Event, Job, Proc, taken, until, within};

const LEASE: Duration = Duration::from_millis(900);

/// A send that commits after the agent's terminal step was written is
/// refused, though the worker's loop has not yet marked the agent done: it
/// is never accepted and left unapplied. (A trigger holds the loop's own
/// marking on a lock the test holds, which widens the window between the
/// two to as long as the test needs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_after_the_terminal_step_is_refused_before_the_worker_sees_the_end() {
    let Some(db) = Db::new("send_after_terminal") else { return };
    // Long enough for the loop to wait on the test's lock without giving up.
    let fleet = db.fleet(Duration::from_secs(5)).await;
    let key = i64::from(std::process::id()) << 8;
    let holder = db.client().await;
    holder
        .batch_execute(&format!(
            "CREATE FUNCTION hold_release() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                 IF NEW.done AND NEW.worker IS NULL AND OLD.worker IS NOT NULL THEN
                     PERFORM pg_advisory_xact_lock({key});
                 END IF;
                 RETURN NEW;
             END $$;
             CREATE TRIGGER hold_release BEFORE UPDATE ON leases FOR EACH ROW EXECUTE FUNCTION hold_release();
             SELECT pg_advisory_lock({key});"
        ))
        .await
        .expect("holds");
    let a = Proc::start(Worker::new(&fleet, "a").capacity(2).poll(Duration::from_millis(100)));
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    within(fleet.send("job", &Event::Add(1))).await.expect("sent");
    within(fleet.send("job", &Event::Finish)).await.expect("sent");
    until("the worker's loop waits to release the finished agent", || async {
        let row = holder
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%SET done = true%'",
                &[],
            )
            .await
            .expect("reads");
        row.get::<_, i64>(0) > 0
    })
    .await;
    let late = within(fleet.send("job", &Event::Add(2))).await;
    assert!(matches!(late, Err(FleetError::Finished(_))), "{late:?}");
    let status = within(fleet.status("job")).await.expect("reads");
    assert!(status.done && status.worker.is_none(), "{status:?}");
    assert_eq!((status.unapplied, status.refused), (0, 0), "{status:?}");

    holder.batch_execute(&format!("SELECT pg_advisory_unlock({key})")).await.expect("unlocks");
    let report = a.stop().await;
    assert_eq!((report.finished, report.lost, report.failed), (1, 0, 0), "{report:?}");
    assert_eq!(taken(&fleet, "job").await, [1]);
    db.drop_schema().await;
}

/// Events sent before the agent finished, queued behind the event that
/// finished it, are refused as `Finished` by the terminal step: counted
/// as refused, not as unapplied for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_waiting_behind_the_terminal_event_are_refused_as_finished() {
    let Some(db) = Db::new("waiting_behind_terminal") else { return };
    let fleet = db.fleet(LEASE).await;
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    within(fleet.send("job", &Event::Add(1))).await.expect("sent");
    within(fleet.send("job", &Event::Finish)).await.expect("sent");
    let behind = within(fleet.send("job", &Event::Add(2))).await.expect("sent");
    let a = Proc::start(Worker::new(&fleet, "a").capacity(2).poll(Duration::from_millis(100)));
    until("the agent is done", || async { within(fleet.status("job")).await.expect("reads").done }).await;

    let status = within(fleet.status("job")).await.expect("reads");
    assert_eq!((status.unapplied, status.refused), (0, 1), "{status:?}");
    let refused = within(fleet.refused("job")).await.expect("reads");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!((refused[0].id, &refused[0].reason), (behind, &Refusal::Finished));
    assert_eq!(taken(&fleet, "job").await, [1]);
    let report = a.stop().await;
    assert_eq!((report.finished, report.failed), (1, 0), "{report:?}");
    db.drop_schema().await;
}

/// A schema an earlier release created, whose inbox lacks the column a
/// refusal is kept in, gains it at the next connect: its agents' events
/// are refused and listed as on a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbox_an_earlier_release_created_gains_the_refusal_column() {
    let Some(db) = Db::new("inbox_columns") else { return };
    drop(db.fleet(LEASE).await);
    let client = db.client().await;
    client.batch_execute("ALTER TABLE inbox DROP COLUMN refusal").await.expect("drops the column");
    let fleet = db.fleet(LEASE).await;
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    within(fleet.send("job", &Event::Finish)).await.expect("sent");
    within(fleet.send("job", &Event::Add(1))).await.expect("sent");
    let a = Proc::start(Worker::new(&fleet, "a").capacity(2).poll(Duration::from_millis(100)));
    until("the agent is done", || async { within(fleet.status("job")).await.expect("reads").done }).await;
    let refused = within(fleet.refused("job")).await.expect("reads");
    assert_eq!(refused.iter().map(|r| &r.reason).collect::<Vec<_>>(), [&Refusal::Finished]);
    a.stop().await;
    db.drop_schema().await;
}
