//! A fleet given what a careless or hostile caller would give it, on a
//! real Postgres server (`AGENT_FSM_PG_URL`, each test in a schema of its
//! own): agent ids with quotes, SQL, spaces, control characters and
//! emoji are run like any other, an id Postgres cannot hold (a NUL byte)
//! or index (longer than the fleet's cap) is refused with a typed error
//! before any statement, so is an event holding a NaN, an event of many
//! megabytes is applied, and
//! a schema with such a name holds a fleet that works.

mod fleet_support;

use std::time::Duration;

use agent_fsm::fleet::{Fleet, FleetConfig, FleetError, MAX_ID_BYTES, Worker};
use agent_fsm::runtime::ExecutorConfig;
use fleet_support::{Db, Event, Job, Proc, Tools, taken, until, within};

const LEASE: Duration = Duration::from_millis(900);

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Notes)]
mod notes {
    #[context]
    pub type Context = Vec<usize>;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        /// Its length is written down.
        Note(String),
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
    }

    transitions! {
        Idle + Note(text) => { ctx.push(text.len()); } Idle / Nothing,
    }
}

/// Agents whose ids hold quotes, SQL, spaces, a notification's own
/// prefixes, control characters and emoji are created, sent their events
/// and run to their end like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_with_odd_ids_run_like_any_other() {
    let Some(db) = Db::new("odd_ids") else { return };
    let fleet = db.fleet(LEASE).await;
    let ids = [
        "it's \"quoted\"",
        "x'); DROP TABLE inbox; --",
        " spaced  out ",
        "inbox ",
        "inbox?",
        "claim",
        "tab\tnew\nline\r\u{7}",
        "back\\slash %s %n {}",
        "🦀 ünïcödé 中文",
        "",
    ];
    for id in ids {
        within(fleet.create(id, &Job::new(Vec::new()))).await.unwrap_or_else(|e| panic!("{id:?}: {e}"));
        within(fleet.send(id, &Event::Add(7))).await.unwrap_or_else(|e| panic!("{id:?}: {e}"));
    }
    let a = Proc::start(Worker::new(&fleet, "a").capacity(20).poll(Duration::from_millis(100)));
    for id in ids {
        within(fleet.send(id, &Event::Finish)).await.unwrap_or_else(|e| panic!("{id:?}: {e}"));
    }
    for id in ids {
        until("the agent is done", || async { within(fleet.status(id)).await.expect("reads").done }).await;
        assert_eq!(taken(&fleet, id).await, [7], "{id:?}");
    }
    let mut unfinished = within(fleet.unfinished()).await.expect("reads");
    unfinished.retain(|id| ids.contains(&id.as_str()));
    assert!(unfinished.is_empty(), "{unfinished:?}");

    let report = a.stop().await;
    assert_eq!((report.finished, report.failed), (ids.len() as u64, 0), "{report:?}");
    db.drop_schema().await;
}

/// An id Postgres cannot hold (a NUL byte) or index (longer than
/// `MAX_ID_BYTES`, whether it compresses or not) is refused by every call
/// that names it with `FleetError::InvalidId`, before any statement: not a
/// database error from inside a create, nor a row half written. A worker
/// with such an id does not start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_postgres_cannot_hold_or_index_are_refused_with_a_typed_error() {
    let Some(db) = Db::new("invalid_ids") else { return };
    let fleet = db.fleet(LEASE).await;
    let bad = [
        "nul\0byte".to_owned(),
        fleet_support::noise(MAX_ID_BYTES + 1),
        fleet_support::noise(4000),
        "j".repeat(9000),
        "\0".repeat(MAX_ID_BYTES + 1),
    ];
    for id in &bad {
        let short = &id[..id.len().min(20)];
        let created = within(fleet.create(id, &Job::new(Vec::new()))).await;
        assert!(matches!(created, Err(FleetError::InvalidId { .. })), "{short:?}: {created:?}");
        let sent = within(fleet.send(id, &Event::Add(1))).await;
        assert!(matches!(sent, Err(FleetError::InvalidId { .. })), "{short:?}: {sent:?}");
        let status = within(fleet.status(id)).await;
        assert!(matches!(status, Err(FleetError::InvalidId { .. })), "{short:?}: {status:?}");
        let refused = within(fleet.refused(id)).await;
        assert!(matches!(refused, Err(FleetError::InvalidId { .. })), "{short:?}: {refused:?}");
        let revived = within(fleet.revive(id)).await;
        assert!(matches!(revived, Err(FleetError::InvalidId { .. })), "{short:?}: {revived:?}");
    }
    let Err(FleetError::InvalidId { id, reason }) = within(fleet.create(&bad[0], &Job::new(Vec::new()))).await else {
        unreachable!("checked above")
    };
    assert_eq!((id.as_str(), reason.contains("NUL")), ("nul\\0byte", true), "{reason}");
    let Err(FleetError::InvalidId { id, reason }) = within(fleet.send(&bad[3], &Event::Add(1))).await else {
        unreachable!("checked above")
    };
    assert!(id.len() < 100 && reason.contains("2048"), "{id} {reason}");
    // Nothing was written for any of them.
    let client = db.client().await;
    let agents: i64 = client.query_one("SELECT count(*) FROM agents", &[]).await.expect("reads").get(0);
    assert_eq!(agents, 0);
    // The longest id it takes is an agent like any other.
    let longest = fleet_support::noise(MAX_ID_BYTES);
    within(fleet.create(&longest, &Job::new(Vec::new()))).await.expect("created");
    within(fleet.send(&longest, &Event::Add(4))).await.expect("sent");
    assert_eq!(within(fleet.status(&longest)).await.expect("reads").unapplied, 1);
    // An event JSON cannot hold (a NaN, which serde_json writes as `null`)
    // is refused before any statement, naming where it is.
    let sent = within(fleet.send(&longest, &std::collections::BTreeMap::from([("Add", f64::NAN)]))).await;
    assert!(matches!(&sent, Err(FleetError::Encode(e)) if e.to_string().contains("NaN at [\"Add\"]")), "{sent:?}");
    assert_eq!(within(fleet.status(&longest)).await.expect("reads").unapplied, 1);

    for id in ["nul\0worker".to_owned(), fleet_support::noise(MAX_ID_BYTES + 1)] {
        let worker = Worker::new(&fleet, id).run(|_: &str| (Tools::default(), ExecutorConfig::new()), async {});
        let ran = within(worker).await;
        assert!(matches!(ran, Err(FleetError::InvalidId { .. })), "{ran:?}");
    }
    db.drop_schema().await;
}

/// An event of 24 MiB is sent, delivered and applied once, with the
/// events around it, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_of_many_megabytes_is_applied() {
    let Some(db) = Db::new("huge_event") else { return };
    let fleet = db.fleet(Duration::from_secs(5)).await;
    within(fleet.create("notes", &notes::Notes::new(Vec::new()))).await.expect("created");
    let huge = "x".repeat(24 << 20);
    for text in ["a", huge.as_str(), "bc"] {
        within(fleet.send("notes", &notes::Event::Note(text.to_owned()))).await.expect("sent");
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = Worker::new(&fleet, "a").poll(Duration::from_millis(100));
    let running = tokio::spawn(worker.run(|_: &str| ((), ExecutorConfig::<notes::Notes>::new()), async {
        let _ = stopped.await;
    }));
    until("the events are applied", || async { within(fleet.status("notes")).await.expect("reads").steps == 3 }).await;
    let status = within(fleet.status("notes")).await.expect("reads");
    assert_eq!((status.unapplied, status.refused), (0, 0), "{status:?}");
    assert_eq!(lengths(&fleet).await, [1, 24 << 20, 2]);
    let _ = stop.send(());
    let report = within(running).await.expect("joins").expect("runs");
    assert_eq!(report.failed, 0, "{report:?}");
    db.drop_schema().await;
}

async fn lengths(fleet: &Fleet) -> Vec<usize> {
    let store = fleet.store().clone();
    tokio::task::spawn_blocking(move || agent_fsm::store::restore::<notes::Notes, _>(&store, "notes"))
        .await
        .expect("joins")
        .expect("restores")
        .machine
        .context()
        .clone()
}

/// A fleet in a schema whose name holds quotes, capitals, spaces and
/// emoji keeps its tables there, hears its own notifications (a send wakes
/// the worker well before its poll would) and runs its agents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_in_a_schema_with_an_odd_name_runs_its_agents() {
    let Some(db) = Db::new("odd_schema") else { return };
    let schema = format!("Odd \"Fleet\" {} 🦀", std::process::id());
    let config = FleetConfig::new(db.url.clone()).schema(schema.clone()).lease(LEASE);
    let fleet = within(Fleet::connect(config)).await.expect("connects");
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    // No poll within the test's time: only a notification wakes the feeder.
    let a = Proc::start(Worker::new(&fleet, "a").capacity(2).poll(Duration::from_secs(3600)));
    until("the agent is claimed", || async { within(fleet.status("job")).await.expect("reads").worker.is_some() })
        .await;
    for event in [Event::Add(3), Event::Finish] {
        within(fleet.send("job", &event)).await.expect("sent");
    }
    until("the agent is done", || async { within(fleet.status("job")).await.expect("reads").done }).await;
    assert_eq!(taken(&fleet, "job").await, [3]);
    a.stop().await;
    let client = db.client().await;
    let quoted = format!("\"{}\"", schema.replace('"', "\"\""));
    client.batch_execute(&format!("DROP SCHEMA {quoted} CASCADE")).await.expect("drops");
}
