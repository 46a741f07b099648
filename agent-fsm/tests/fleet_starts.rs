//! A fleet's agents whose start fails on the worker's side, on a real
//! Postgres server (`AGENT_FSM_PG_URL`, each test in a schema of its own):
//! the function a worker is given to build an agent's effects and
//! configuration panicking for one agent fails that agent only (the worker
//! and its other agents run on) and halts it after the configured
//! attempts, rather than try it again on every lease for ever; a step the
//! agent takes between such failures starts their count again.

mod fleet_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agent_fsm::fleet::{Fleet, FleetConfig, FleetError, Halt, Worker, WorkerReport};
use agent_fsm::runtime::ExecutorConfig;
use fleet_support::{Db, Event, Job, Tools, taken, until, within};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const LEASE: Duration = Duration::from_millis(300);

async fn fleet(db: &Db, attempts: u32) -> Fleet {
    let config = FleetConfig::new(db.url.clone()).schema(db.schema.clone()).lease(LEASE).event_attempts(attempts);
    within(Fleet::connect(config)).await.expect("connects")
}

/// Runs worker `id` of `fleet`, whose function panics for agent `flaky`
/// on the calls `panics` says yes to (counted in `calls`, from 1), until
/// the sender is sent to.
fn worker(
    fleet: &Fleet,
    id: &str,
    calls: &Arc<AtomicU32>,
    panics: fn(u32) -> bool,
) -> (oneshot::Sender<()>, JoinHandle<Result<WorkerReport, FleetError>>) {
    let (stop, stopped) = oneshot::channel::<()>();
    let calls = Arc::clone(calls);
    let agents = move |agent: &str| {
        if agent == "flaky" {
            let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
            assert!(!panics(call), "no effects for flaky on call {call}");
        }
        (Tools { agent: agent.to_owned(), ..Tools::default() }, ExecutorConfig::<Job>::new())
    };
    let worker = Worker::new(fleet, id).poll(Duration::from_millis(50));
    (
        stop,
        tokio::spawn(worker.run(agents, async {
            let _ = stopped.await;
        })),
    )
}

/// The worker's function panicking for one agent every time fails that
/// agent's start, not the worker: the agent beside it runs to its end,
/// and after the configured attempts the failing one is halted, with the
/// panic's message, and claimed no more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_of_the_worker_s_function_halts_that_agent_only() {
    let Some(db) = Db::new("start_panics") else { return };
    let fleet = fleet(&db, 2).await;
    for agent in ["flaky", "good"] {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
    }
    let calls = Arc::new(AtomicU32::new(0));
    let (stop, running) = worker(&fleet, "a", &calls, |_| true);
    for event in [Event::Add(1), Event::Finish] {
        within(fleet.send("good", &event)).await.expect("sent");
    }
    until("the other agent finishes", || async { within(fleet.status("good")).await.expect("reads").done }).await;
    assert_eq!(taken(&fleet, "good").await, [1]);
    until("the agent is halted", || async { within(fleet.status("flaky")).await.expect("reads").halted.is_some() })
        .await;
    let status = within(fleet.status("flaky")).await.expect("reads");
    let Some(Halt::Failed { attempts, message }) = &status.halted else { panic!("{status:?}") };
    assert_eq!(*attempts, 2, "{status:?}");
    assert!(message.contains("no effects for flaky on call 2"), "{message}");
    assert_eq!((status.worker.as_deref(), status.steps), (None, 0), "{status:?}");
    tokio::time::sleep(LEASE * 3).await;
    assert_eq!(calls.load(Ordering::SeqCst), 2, "a halted agent was claimed again");
    let _ = stop.send(());
    let report = within(running).await.expect("the worker did not panic").expect("runs");
    assert_eq!((report.failed, report.finished), (2, 1), "{report:?}");
    db.drop_schema().await;
}

/// Failed starts are counted in a row at one step: an agent whose
/// function panics twice, then builds it, takes a step, and on its next
/// claim panics twice again, is not halted at three attempts; it runs to
/// its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_taken_starts_the_count_of_failed_starts_again() {
    let Some(db) = Db::new("start_recovers") else { return };
    let fleet = fleet(&db, 3).await;
    within(fleet.create("flaky", &Job::new(Vec::new()))).await.expect("created");
    let calls = Arc::new(AtomicU32::new(0));
    let panics = |call| call % 3 != 0;
    let (stop, running) = worker(&fleet, "a", &calls, panics);
    within(fleet.send("flaky", &Event::Add(1))).await.expect("sent");
    until("the step is taken", || async { within(fleet.status("flaky")).await.expect("reads").steps == 1 }).await;
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let _ = stop.send(());
    let report = within(running).await.expect("the worker did not panic").expect("runs");
    assert_eq!((report.failed, report.handed_back), (2, 1), "{report:?}");

    let (stop, running) = worker(&fleet, "b", &calls, panics);
    within(fleet.send("flaky", &Event::Finish)).await.expect("sent");
    until("the agent finishes or is halted", || async {
        let status = within(fleet.status("flaky")).await.expect("reads");
        status.done || status.halted.is_some()
    })
    .await;
    let status = within(fleet.status("flaky")).await.expect("reads");
    assert!(status.done && status.halted.is_none(), "{status:?}");
    assert_eq!((status.steps, calls.load(Ordering::SeqCst)), (2, 6), "{status:?}");
    let _ = stop.send(());
    let report = within(running).await.expect("the worker did not panic").expect("runs");
    assert_eq!((report.failed, report.finished), (2, 1), "{report:?}");
    db.drop_schema().await;
}
