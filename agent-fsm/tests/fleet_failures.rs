//! A fleet's agent whose machine fails on its own work, on a real Postgres
//! server (`AGENT_FSM_PG_URL`, each test in a schema of its own): a panic
//! on a tool's result (or a timer's event) is retried a bounded number of
//! times, then the agent is halted, visibly, while the other agents run
//! on, and runs again once revived; such a failure is never counted
//! against an inbox row that waits in the agent's mailbox with an event of
//! the same kind; an inbox event whose action makes the effects panic is
//! refused after the configured attempts, not taken as performed.

mod fleet_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agent_fsm::fleet::{Fleet, FleetConfig, FleetError, Halt, Refusal, Worker};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig};
use fleet_support::{Db, until, within};
use tokio::sync::Semaphore;

/// Mends the machine's fault on 13 (the other tests' numbers stay broken).
static FIXED: AtomicBool = AtomicBool::new(false);

/// The tool's call with 14 waits for a permit of this.
static GATE: Semaphore = Semaphore::const_new(0);

fn fixed() -> bool {
    FIXED.load(Ordering::SeqCst)
}

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Flaky)]
mod flaky {
    #[context]
    pub type Context = Vec<u32>;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Working,
        #[terminal]
        Done,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        /// Runs the tool, which answers `Worked(n)` at once.
        Work(u32),
        /// Sets a timer that delivers `Worked(n)` soon.
        Nap(u32),
        /// Written down; the tool's 13 (until mended) and 14 make the
        /// machine panic.
        Worked(u32),
        Finish,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
        Tool(u32),
        Timer(u32),
    }

    transitions! {
        Idle + Work(n) => Working / Tool(n),
        Idle + Nap(n) => Working / Timer(n),
        Working + Worked(n) => {
            assert!(n != 13 || super::fixed(), "the tool's 13 breaks the machine");
            assert!(n != 14, "the tool's 14 breaks the machine");
            assert!(n != 15, "the timer's 15 breaks the machine");
            ctx.push(n);
        } Idle / Nothing,
        Idle + Worked(n) => { ctx.push(n); } Idle / Nothing,
        Idle + Finish => Done / Nothing,
    }
}

use flaky::{Event, Flaky};

/// The tool: answers at once with its argument (14 once [`GATE`] lets it);
/// asked for 99, it panics as it starts. A timer delivers its event after
/// 20 ms.
struct Tool;

impl Effects<Flaky> for Tool {
    type Output = ();

    fn perform(&mut self, action: flaky::Action, cx: &mut EffectContext<'_, Flaky, ()>) {
        if let flaky::Action::Tool(n) = action {
            assert!(n != 99, "the tool cannot start 99");
            let call = async move {
                if n == 14 {
                    let _ = GATE.acquire().await.map(tokio::sync::SemaphorePermit::forget);
                }
                Event::Worked(n)
            };
            cx.spawn_task(format!("tool-{n}"), call, |_, _| Event::Worked(0));
        }
        if let flaky::Action::Timer(n) = action {
            cx.timer(Duration::from_millis(20), Event::Worked(n));
        }
    }
}

/// A fleet on `db` with short leases (each failure costs the agent one)
/// and two attempts.
async fn fleet(db: &Db) -> Fleet {
    let config =
        FleetConfig::new(db.url.clone()).schema(db.schema.clone()).lease(Duration::from_millis(300)).event_attempts(2);
    within(Fleet::connect(config)).await.expect("connects")
}

/// Runs a worker of `fleet` until the sender is sent to.
fn worker(
    fleet: &Fleet,
) -> (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<Result<agent_fsm::fleet::WorkerReport, FleetError>>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = Worker::new(fleet, "a").poll(Duration::from_millis(50));
    let running = tokio::spawn(worker.run(|_: &str| (Tool, ExecutorConfig::<Flaky>::new()), async {
        let _ = stopped.await;
    }));
    (stop, running)
}

async fn applied(fleet: &Fleet, agent: &str) -> Vec<u32> {
    let (store, agent) = (fleet.store().clone(), agent.to_owned());
    tokio::task::spawn_blocking(move || agent_fsm::store::restore::<Flaky, _>(&store, &agent))
        .await
        .expect("joins")
        .expect("restores")
        .machine
        .context()
        .clone()
}

/// An agent whose machine panics on its tool's result, every time it is
/// resumed and the tool performed again, is halted after the configured
/// attempts, with the failure, and no worker takes it; another agent on
/// the same worker runs to its end meanwhile. Revived once the fault is
/// mended, it goes on from its checkpoint and finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_failing_on_its_own_work_is_halted_after_the_configured_attempts() {
    let Some(db) = Db::new("own_work_halted") else { return };
    let fleet = fleet(&db).await;
    for agent in ["bad", "good"] {
        within(fleet.create(agent, &Flaky::new(Vec::new()))).await.expect("created");
    }
    within(fleet.send("bad", &Event::Work(13))).await.expect("sent");
    let (stop, running) = worker(&fleet);
    for event in [Event::Work(1), Event::Finish] {
        within(fleet.send("good", &event)).await.expect("sent");
    }
    until("the failing agent is halted", || async {
        within(fleet.status("bad")).await.expect("reads").halted.is_some()
    })
    .await;
    let status = within(fleet.status("bad")).await.expect("reads");
    let Some(Halt::Failed { attempts, message }) = &status.halted else { panic!("{status:?}") };
    assert_eq!(*attempts, 2, "{status:?}");
    assert!(message.contains("the tool's 13 breaks the machine") && message.contains("Worked"), "{message}");
    assert_eq!((status.worker, status.done, status.steps, status.unapplied, status.refused), (None, false, 1, 0, 0));
    assert!(within(fleet.refused("bad")).await.expect("reads").is_empty());
    until("the other agent finishes", || async { within(fleet.status("good")).await.expect("reads").done }).await;
    assert_eq!(applied(&fleet, "good").await, [1]);

    // Halted, it stays so: no worker claims it, however long.
    let epoch = status.epoch;
    tokio::time::sleep(Duration::from_millis(900)).await;
    let status = within(fleet.status("bad")).await.expect("reads");
    assert!(status.halted.is_some() && status.epoch == epoch && status.worker.is_none(), "{status:?}");

    FIXED.store(true, Ordering::SeqCst);
    assert!(within(fleet.revive("bad")).await.expect("revives"));
    assert!(!within(fleet.revive("good")).await.expect("reads"), "an agent not halted is left as it is");
    assert!(matches!(within(fleet.revive("nobody")).await, Err(FleetError::UnknownAgent(_))));
    until("the revived agent takes its tool's result", || async { applied(&fleet, "bad").await == [13] }).await;
    within(fleet.send("bad", &Event::Finish)).await.expect("sent");
    until("the revived agent finishes", || async { within(fleet.status("bad")).await.expect("reads").done }).await;
    assert_eq!(within(fleet.status("bad")).await.expect("reads").halted, None);
    let _ = stop.send(());
    let report = within(running).await.expect("joins").expect("runs");
    assert_eq!((report.failed, report.finished), (2, 2), "{report:?}");
    db.drop_schema().await;
}

/// A failure on the agent's own work (its tool's `Worked(14)`) is counted
/// against the agent, not against the inbox row of the same kind
/// (`Worked(5)`) that waits in its mailbox for the work to end: that row
/// never counts a panic it did not cause, and is still there to be
/// applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_on_own_work_is_not_counted_against_a_waiting_row_of_its_kind() {
    let Some(db) = Db::new("own_work_not_row") else { return };
    let fleet = fleet(&db).await;
    within(fleet.create("agent", &Flaky::new(Vec::new()))).await.expect("created");
    within(fleet.send("agent", &Event::Work(14))).await.expect("sent");
    // Written otherwise than the machine writes it: the worker rewrites
    // it just before it hands it to the agent, which tells the test when
    // it is in the agent's mailbox.
    let spaced =
        serde_json::value::RawValue::from_string(r#"{ "event": "worked", "data": 5 }"#.to_owned()).expect("json");
    let waiting = within(fleet.send("agent", &spaced)).await.expect("sent");
    let (stop, running) = worker(&fleet);
    let client = db.client().await;
    let id = i64::try_from(waiting).expect("an id");
    until("the row waits in the agent's mailbox", || async {
        let row = client.query_one("SELECT event FROM inbox WHERE id = $1", &[&id]).await.expect("reads");
        row.get::<_, String>(0) == r#"{"event":"worked","data":5}"#
    })
    .await;
    // The tool's result comes while the row waits for the work to end.
    GATE.add_permits(100);
    until("the agent is halted or a row refused", || async {
        let status = within(fleet.status("agent")).await.expect("reads");
        status.halted.is_some() || status.refused > 0
    })
    .await;
    let refused = within(fleet.refused("agent")).await.expect("reads");
    assert!(refused.is_empty(), "row {waiting} was refused for the tool's panic: {refused:?}");
    let row = client.query_one("SELECT failures FROM inbox WHERE id = $1", &[&id]).await.expect("reads");
    assert_eq!(row.get::<_, i32>(0), 0, "the tool's panic was counted against row {waiting}");
    let status = within(fleet.status("agent")).await.expect("reads");
    assert!(matches!(status.halted, Some(Halt::Failed { attempts: 2, .. })), "{status:?}");
    assert_eq!((status.steps, status.unapplied), (1, 1), "{status:?}");
    let _ = stop.send(());
    within(running).await.expect("joins").expect("runs");
    db.drop_schema().await;
}

/// An inbox event whose action makes the effects panic as they perform it
/// is not taken as applied (its action never ran whole, and would never
/// run again): sent again to the resumed agent, it is refused after the
/// configured attempts, and the agent goes on with the next event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_whose_action_makes_the_effects_panic_is_refused_after_the_configured_attempts() {
    let Some(db) = Db::new("effects_panic") else { return };
    let fleet = fleet(&db).await;
    within(fleet.create("agent", &Flaky::new(Vec::new()))).await.expect("created");
    let bad = within(fleet.send("agent", &Event::Work(99))).await.expect("sent");
    within(fleet.send("agent", &Event::Work(1))).await.expect("sent");
    let (stop, running) = worker(&fleet);
    until("the next event is applied", || async { applied(&fleet, "agent").await == [1] }).await;
    let refused = within(fleet.refused("agent")).await.expect("reads");
    assert_eq!(refused.len(), 1, "{refused:?}");
    let Refusal::Panicked { attempts: 2, message } = &refused[0].reason else { panic!("{refused:?}") };
    assert_eq!(refused[0].id, bad);
    assert!(message.contains("the tool cannot start 99"), "{message}");
    let status = within(fleet.status("agent")).await.expect("reads");
    assert_eq!((status.steps, status.unapplied, status.refused), (2, 0, 1), "{status:?}");
    assert_eq!(status.halted, None);
    let _ = stop.send(());
    within(running).await.expect("joins").expect("runs");
    db.drop_schema().await;
}

/// A timer's event the machine panics on is of the agent's own work too:
/// the timer is armed again on each resume (its firing was never written),
/// and after the configured attempts the agent is halted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_failing_on_its_timer_s_event_is_halted_after_the_configured_attempts() {
    let Some(db) = Db::new("timer_halted") else { return };
    let fleet = fleet(&db).await;
    within(fleet.create("agent", &Flaky::new(Vec::new()))).await.expect("created");
    within(fleet.send("agent", &Event::Nap(15))).await.expect("sent");
    let (stop, running) = worker(&fleet);
    until("the agent is halted", || async { within(fleet.status("agent")).await.expect("reads").halted.is_some() })
        .await;
    let status = within(fleet.status("agent")).await.expect("reads");
    let Some(Halt::Failed { attempts: 2, message }) = &status.halted else { panic!("{status:?}") };
    assert!(message.contains("the timer's 15 breaks the machine"), "{message}");
    assert_eq!((status.steps, status.refused), (1, 0), "{status:?}");
    let _ = stop.send(());
    let report = within(running).await.expect("joins").expect("runs");
    assert_eq!(report.failed, 2, "{report:?}");
    db.drop_schema().await;
}
