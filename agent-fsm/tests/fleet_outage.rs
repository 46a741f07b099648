//! The fleet and its store when the database goes away mid-run and comes
//! back (every connection closed at once, as a server restart does),
//! through a relay the test takes down, on a schema of the test's own: a
//! store call made once the server is back is answered on a new
//! connection, not failed on the one the server closed; a worker whose
//! database restarted between its agents' steps keeps them, and applies
//! every event sent afterwards once, in order, and one told to stop just
//! after the restart hands its agents back; connecting to a server that is
//! away or silent, the fleet's and the store's, fails with a typed error in
//! time; a resume that waits on a locked table does not hold up the
//! renewals of the agents running; an event sent while the server had
//! ended the worker's listening connection is applied once it listens
//! again, not at its next poll.

mod fleet_support;

use std::time::Duration;

use agent_fsm::fleet::{Fleet, FleetConfig, FleetError, Worker};
use agent_fsm::store::{CheckpointStore, PgConfig, PgStore, StoreError};
use fleet_support::{Db, Event, Job, Proc, Relay, taken, until, within};

/// Long enough that renewals every third of it go on across the short
/// outages below, on a loaded machine too.
const LEASE: Duration = Duration::from_secs(2);

/// Runs one of the store's (blocking) calls off the test's threads.
async fn call<R: Send + 'static>(job: impl FnOnce() -> R + Send + 'static) -> R {
    within(tokio::task::spawn_blocking(job)).await.expect("joins")
}

/// Takes the relay down (every connection closed, new ones refused) for a
/// moment, as a server restart does, and brings it back.
async fn restart(relay: &Relay) {
    relay.down(true);
    tokio::time::sleep(Duration::from_millis(150)).await;
    relay.down(false);
}

/// A store whose connection the server closed while it sat idle connects
/// again for its next call, rather than failing that call; while the
/// server is away, a call fails with a typed error at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_call_after_a_server_restart_is_answered() {
    let Some(db) = Db::new("store_restart") else { return };
    let relay = Relay::start(&db.url).await;
    let config = PgConfig::new(relay.url.clone()).schema(db.schema.clone()).pool_size(1);
    let store = call(move || PgStore::connect_with(config)).await.expect("connects through the relay");
    let s = store.clone();
    assert_eq!(call(move || s.agents()).await.expect("reads"), Vec::<String>::new());

    restart(&relay).await;
    let s = store.clone();
    assert_eq!(call(move || s.agents()).await.expect("answered on a new connection"), Vec::<String>::new());

    relay.down(true);
    let s = store.clone();
    let away = call(move || s.agents()).await;
    assert!(matches!(away, Err(StoreError::Read(_))), "{away:?}");
    relay.down(false);
    let s = store.clone();
    assert_eq!(call(move || s.agents()).await.expect("answered once back"), Vec::<String>::new());
    db.drop_schema().await;
}

/// A worker (its store on one connection, through the relay) whose
/// database restarts while its agents sit between steps keeps them: their
/// next writes go through on new connections, none fails or is taken
/// over, and every event sent before and after is applied once, in order,
/// in a log without gaps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_keeps_its_agents_across_a_server_restart() {
    let Some(db) = Db::new("worker_restart") else { return };
    let fleet = db.fleet(LEASE).await;
    let relay = Relay::start(&db.url).await;
    let config = FleetConfig::new(relay.url.clone()).schema(db.schema.clone()).lease(LEASE).pool_size(1);
    let via = within(Fleet::connect(config)).await.expect("connects through the relay");
    let a = Proc::start(Worker::new(&via, "a").poll(Duration::from_millis(100)));
    let agents = ["job-0", "job-1"];
    for agent in agents {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
        within(fleet.send(agent, &Event::Add(1))).await.expect("sent");
    }
    for agent in agents {
        until("the first event is applied", || async { taken(&fleet, agent).await == [1] }).await;
    }

    restart(&relay).await;
    for n in 2..=4 {
        for agent in agents {
            within(fleet.send(agent, &Event::Add(n))).await.expect("sent");
        }
    }
    for agent in agents {
        until("every event is applied", || async { within(fleet.status(agent)).await.expect("reads").unapplied == 0 })
            .await;
        assert_eq!(taken(&fleet, agent).await, [1, 2, 3, 4]);
        let status = within(fleet.status(agent)).await.expect("reads");
        assert_eq!((status.steps, status.epoch, status.worker.as_deref()), (4, 1, Some("a")), "{status:?}");
    }
    let client = db.client().await;
    let rows = client
        .query("SELECT agent, array_agg(seq ORDER BY seq) FROM events GROUP BY agent ORDER BY agent", &[])
        .await
        .expect("reads");
    for row in rows {
        assert_eq!(row.get::<_, Vec<i64>>(1), [1, 2, 3, 4], "the log of {}", row.get::<_, String>(0));
    }
    let report = a.stop().await;
    assert_eq!((report.claimed, report.failed, report.lost), (2, 0, 0), "{report:?}");
    db.drop_schema().await;
}

/// `call`'s outcome, failing the test if it is still waiting after 5
/// seconds.
async fn bounded<T>(call: impl std::future::Future<Output = T>) -> T {
    let limited = tokio::time::timeout(Duration::from_secs(5), call).await;
    limited.unwrap_or_else(|_| panic!("still waiting for the server after 5 seconds"))
}

/// While the server is away, connecting to the fleet fails with
/// `FleetError::Connect`, as documented; while it accepts connections and
/// never answers (hung, or behind a proxy holding the traffic), connecting
/// and a send that must connect again fail the same way once the URL's
/// `connect_timeout` has passed, rather than wait for the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connecting_to_a_server_that_is_away_or_silent_fails_in_time() {
    let Some(db) = Db::new("connect_away") else { return };
    let fleet = db.fleet(LEASE).await;
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    let relay = Relay::start(&db.url).await;
    let url = format!("{} connect_timeout=1", relay.url);
    let config = FleetConfig::new(url).schema(db.schema.clone()).lease(LEASE).pool_size(1);
    relay.down(true);
    let away = bounded(Fleet::connect(config.clone())).await;
    assert!(matches!(away, Err(FleetError::Connect(_))), "{away:?}");
    relay.down(false);
    let via = within(Fleet::connect(config.clone())).await.expect("connects once back");
    within(via.send("job", &Event::Add(1))).await.expect("sent");

    // Its connection closed, then the server silent: the send connects
    // again, and gives up.
    relay.down(true);
    tokio::time::sleep(Duration::from_millis(100)).await;
    relay.cut(true);
    relay.down(false);
    let silent = bounded(Fleet::connect(config)).await;
    assert!(matches!(silent, Err(FleetError::Connect(_))), "{silent:?}");
    let send = bounded(via.send("job", &Event::Add(2))).await;
    assert!(matches!(send, Err(FleetError::Connect(_))), "{send:?}");
    relay.cut(false);
    within(via.send("job", &Event::Add(3))).await.expect("sent once the server answers");
    assert_eq!(within(fleet.status("job")).await.expect("reads").unapplied, 2);
    db.drop_schema().await;
}

/// A worker whose resume of an agent waits on the database (the agents'
/// snapshots locked, as a long migration or `VACUUM FULL` locks them) goes
/// on renewing the leases of the agents it runs meanwhile: none lapses. The
/// agent it could not resume is resumed once the lock is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_that_waits_on_the_database_does_not_hold_up_the_renewals() {
    let Some(db) = Db::new("resume_waits") else { return };
    // Renewed every third of it, and a resume given up after half of it:
    // a third of a second to spare.
    let lease = LEASE;
    let fleet = db.fleet(lease).await;
    let client = db.client().await;
    // The second agent hidden from the workers (marked done) until the
    // lock is taken.
    for agent in ["running", "waiting"] {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
    }
    within(client.execute("UPDATE leases SET done = true WHERE agent = 'waiting'", &[])).await.expect("hides");
    let a = Proc::start(Worker::new(&fleet, "a").poll(Duration::from_millis(100)));
    within(fleet.send("running", &Event::Add(1))).await.expect("sent");
    until("the first agent runs", || async { taken(&fleet, "running").await == [1] }).await;

    let mut locker = db.client().await;
    let lock = locker.transaction().await.expect("begins");
    lock.batch_execute("LOCK TABLE snapshots IN ACCESS EXCLUSIVE MODE").await.expect("locks");
    within(client.execute("UPDATE leases SET done = false WHERE agent = 'waiting'", &[])).await.expect("shows");
    let lapsed =
        "SELECT count(*) FROM leases WHERE agent = 'running' AND (worker IS DISTINCT FROM 'a' OR expires_at < now())";
    let start = std::time::Instant::now();
    while start.elapsed() < lease * 2 {
        let row = within(client.query_one(lapsed, &[])).await.expect("reads");
        assert_eq!(row.get::<_, i64>(0), 0, "the running agent's lease lapsed after {:?}", start.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(a.spawned().contains(&"waiting".to_owned()), "a claimed the second agent while the lock was held");
    within(lock.rollback()).await.expect("unlocks");
    within(fleet.send("waiting", &Event::Add(2))).await.expect("sent");
    until("the second agent runs", || async { taken(&fleet, "waiting").await == [2] }).await;
    let status = within(fleet.status("running")).await.expect("reads");
    assert_eq!((status.epoch, status.worker.as_deref()), (1, Some("a")), "{status:?}");
    a.stop().await;
    db.drop_schema().await;
}

/// A worker told to stop just after its database restarted (before its
/// next renewal opened a new connection) still hands its agents back, on a
/// new connection: another worker need not wait a lease for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_stopped_after_a_server_restart_hands_its_agents_back() {
    let Some(db) = Db::new("stop_after_restart") else { return };
    // Long: no renewal comes between the restart and the stop.
    let lease = Duration::from_secs(6);
    let fleet = db.fleet(lease).await;
    let relay = Relay::start(&db.url).await;
    let config = FleetConfig::new(relay.url.clone()).schema(db.schema.clone()).lease(lease).pool_size(1);
    let via = within(Fleet::connect(config)).await.expect("connects through the relay");
    let a = Proc::start(Worker::new(&via, "a"));
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    within(fleet.send("job", &Event::Add(1))).await.expect("sent");
    until("the agent runs", || async { taken(&fleet, "job").await == [1] }).await;

    restart(&relay).await;
    let report = a.stop().await;
    assert_eq!(report.handed_back, 1, "{report:?}");
    let status = within(fleet.status("job")).await.expect("reads");
    assert_eq!(status.worker, None, "{status:?}");
    db.drop_schema().await;
}

/// The checkpoint store's connecting is bounded as the fleet's is: a
/// server that accepts connections and never answers fails `connect`, and
/// a call that must connect again, with `StoreError::Read` once the URL's
/// `connect_timeout` has passed, and the store answers once the server
/// does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_s_connecting_to_a_silent_server_fails_in_time() {
    let Some(db) = Db::new("store_silent") else { return };
    let relay = Relay::start(&db.url).await;
    let config = PgConfig::new(format!("{} connect_timeout=1", relay.url)).schema(db.schema.clone()).pool_size(1);
    relay.cut(true);
    let connecting = config.clone();
    let silent = bounded(call(move || PgStore::connect_with(connecting))).await;
    assert!(matches!(silent, Err(StoreError::Read(_))), "{silent:?}");
    relay.cut(false);
    let store = call(move || PgStore::connect_with(config)).await.expect("connects once the server answers");

    relay.down(true);
    tokio::time::sleep(Duration::from_millis(100)).await;
    relay.cut(true);
    relay.down(false);
    let s = store.clone();
    let silent = bounded(call(move || s.agents())).await;
    assert!(matches!(silent, Err(StoreError::Read(_))), "{silent:?}");
    relay.cut(false);
    let s = store.clone();
    assert_eq!(call(move || s.agents()).await.expect("answered once the server answers"), Vec::<String>::new());
    db.drop_schema().await;
}

/// A worker whose listening connection the server ended (here
/// `pg_terminate_backend`, as an administrator or a failover does) listens
/// again, and looks at the inbox then: an event sent while nothing
/// listened is applied without waiting for the worker's (here hour-long)
/// poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_sent_while_the_worker_did_not_listen_is_applied_once_it_listens_again() {
    let Some(db) = Db::new("outage_listen") else { return };
    let fleet = db.fleet(LEASE).await;
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    let a = Proc::start(Worker::new(&fleet, "a").poll(Duration::from_secs(3600)));
    within(fleet.send("job", &Event::Add(1))).await.expect("sent");
    until("the first event is applied", || async { taken(&fleet, "job").await == [1] }).await;

    let client = db.client().await;
    // The tests run side by side on one server: only this schema's channel.
    let listen = format!("LISTEN \"{}.fleet\"", db.schema);
    let ended = client
        .query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1", &[&listen])
        .await
        .expect("terminates");
    assert_eq!(ended.len(), 1, "the worker's one listening connection");
    within(fleet.send("job", &Event::Add(2))).await.expect("sent");
    let applied = tokio::time::timeout(Duration::from_secs(15), async {
        while taken(&fleet, "job").await != [1, 2] {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(applied.is_ok(), "the event waits for the poll: {:?}", taken(&fleet, "job").await);
    let report = a.stop().await;
    assert_eq!((report.lost, report.failed), (0, 0), "{report:?}");
    db.drop_schema().await;
}
