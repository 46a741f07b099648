//! A fleet whose workers run different machines in one schema, on a real
//! Postgres server (`AGENT_FSM_PG_URL`, each test in a schema of its own):
//! an agent is placed on, and claimed by, only a worker of its own
//! machine; a worker never takes an agent it could not resume, however
//! long that agent waits for a worker of its kind.

mod fleet_support;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_fsm::fleet::Worker;
use agent_fsm::runtime::ExecutorConfig;
use fleet_support::{Db, Event, Job, Proc, taken, until, within};

const LEASE: Duration = Duration::from_millis(300);

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Tally)]
mod tally {
    #[context]
    pub type Context = u32;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Counting,
        #[terminal]
        Done,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Add(u32),
        Stop,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
    }

    transitions! {
        Counting + Add(n) => { *ctx += n; } Counting / Nothing,
        Counting + Stop => Done / Nothing,
    }
}

/// A `Tally` agent created while only a `Job` worker is live is placed on
/// no worker and claimed by none, for many leases; a `Tally` worker that
/// starts then takes it, and a `Tally` agent created next is placed on
/// that worker though the `Job` worker has more room. Each worker spawns
/// only its own machine's agents, and none fails a resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_claims_only_agents_of_its_own_machine() {
    let Some(db) = Db::new("machines") else { return };
    let fleet = db.fleet(LEASE).await;
    let jobs = Proc::start(Worker::new(&fleet, "jobs").capacity(100).poll(Duration::from_millis(50)));
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    until("the job worker claims its agent", || async {
        within(fleet.status("job")).await.expect("reads").worker.as_deref() == Some("jobs")
    })
    .await;

    let early = within(fleet.create("tally-1", &tally::Tally::new(0))).await.expect("created");
    assert_eq!(early, None, "placed on a worker of another machine");
    within(fleet.send("tally-1", &tally::Event::Add(2))).await.expect("sent");
    tokio::time::sleep(LEASE * 4).await;
    let status = within(fleet.status("tally-1")).await.expect("reads");
    assert_eq!((status.worker.as_deref(), status.epoch, status.steps), (None, 0, 0), "{status:?}");

    let spawned = Arc::new(Mutex::new(Vec::new()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let log = Arc::clone(&spawned);
    let worker = Worker::new(&fleet, "tallies").capacity(5).poll(Duration::from_millis(50));
    let tallies = tokio::spawn(worker.run(
        move |agent: &str| {
            log.lock().unwrap_or_else(PoisonError::into_inner).push(agent.to_owned());
            ((), ExecutorConfig::<tally::Tally>::new())
        },
        async {
            let _ = stopped.await;
        },
    ));
    until("the tally worker takes the waiting agent", || async {
        within(fleet.status("tally-1")).await.expect("reads").steps == 1
    })
    .await;
    let placed = within(fleet.create("tally-2", &tally::Tally::new(0))).await.expect("created");
    assert_eq!(placed.as_deref(), Some("tallies"));
    for agent in ["tally-1", "tally-2"] {
        within(fleet.send(agent, &tally::Event::Stop)).await.expect("sent");
        until("the tally agent finishes", || async { within(fleet.status(agent)).await.expect("reads").done }).await;
    }
    within(fleet.send("job", &Event::Add(5))).await.expect("sent");
    within(fleet.send("job", &Event::Finish)).await.expect("sent");
    until("the job agent finishes", || async { within(fleet.status("job")).await.expect("reads").done }).await;
    assert_eq!(taken(&fleet, "job").await, [5]);

    assert_eq!(jobs.spawned(), ["job"]);
    let mut spawned = spawned.lock().unwrap_or_else(PoisonError::into_inner).clone();
    spawned.sort();
    assert_eq!(spawned, ["tally-1", "tally-2"]);
    let report = jobs.stop().await;
    assert_eq!((report.claimed, report.failed, report.finished), (1, 0, 1), "{report:?}");
    let _ = stop.send(());
    let report = within(tallies).await.expect("joins").expect("runs");
    assert_eq!((report.claimed, report.failed, report.finished), (2, 0, 2), "{report:?}");
    db.drop_schema().await;
}
