//! A fleet's agent whose stored data does not read, or whose step does not
//! encode, on a real Postgres server (`AGENT_FSM_PG_URL`, each test in a
//! schema of its own): a corrupt snapshot, a log whose states do not
//! replay, work in flight whose key names nothing, and a step whose event
//! serde refuses each halt that agent at once, with a halt saying so in its
//! status, rather than stop it on every lease for ever; the worker and the
//! other agents run on, and the agent runs again once mended and revived.
//! Text that is not UTF-8 (which a database of encoding `SQL_ASCII`
//! stores) halts the agent whose snapshot holds it, and is refused in an
//! inbox row.

mod fleet_support;

use std::time::Duration;

use agent_fsm::fleet::{Halt, Refusal, Worker};
use agent_fsm::runtime::ExecutorConfig;
use agent_fsm::store::SnapshotPolicy;
use fleet_support::{Db, Event, Job, Proc, taken, until, within};

const LEASE: Duration = Duration::from_millis(300);

/// A worker of `fleet` polling its inbox often, with no snapshot past the
/// first (a restore replays the whole log).
fn worker(fleet: &agent_fsm::fleet::Fleet, id: &str) -> Worker {
    Worker::new(fleet, id).poll(Duration::from_millis(50)).snapshots(SnapshotPolicy::Never)
}

/// An agent whose snapshot is not its machine's is halted as unreadable,
/// with the store's error, and no worker claims it again; the agent beside
/// it on the same worker runs to its end. Mended and revived, it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_whose_snapshot_does_not_read_is_halted_and_the_others_run() {
    let Some(db) = Db::new("unreadable_snapshot") else { return };
    let fleet = db.fleet(LEASE).await;
    for agent in ["bad", "good"] {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
    }
    let client = db.client().await;
    let row = client.query_one("SELECT data FROM snapshots WHERE agent = 'bad'", &[]).await.expect("reads");
    let data: String = row.get(0);
    client.execute("UPDATE snapshots SET data = 'not json' WHERE agent = 'bad'", &[]).await.expect("updates");
    let a = Proc::start(worker(&fleet, "a"));
    for event in [Event::Add(1), Event::Finish] {
        within(fleet.send("good", &event)).await.expect("sent");
    }
    until("the agent is halted", || async { within(fleet.status("bad")).await.expect("reads").halted.is_some() }).await;
    let status = within(fleet.status("bad")).await.expect("reads");
    let Some(Halt::Unreadable { message }) = &status.halted else { panic!("{status:?}") };
    assert!(message.contains("corrupt snapshot"), "{message}");
    assert_eq!((status.worker.as_deref(), status.done), (None, false), "{status:?}");
    until("the other agent finishes", || async { within(fleet.status("good")).await.expect("reads").done }).await;
    assert_eq!(taken(&fleet, "good").await, [1]);

    // Halted, it stays so: no worker claims it, however long.
    tokio::time::sleep(LEASE * 3).await;
    let later = within(fleet.status("bad")).await.expect("reads");
    assert_eq!((later.epoch, later.worker.as_deref()), (status.epoch, None), "{later:?}");
    assert!(matches!(later.halted, Some(Halt::Unreadable { .. })), "{later:?}");

    client.execute("UPDATE snapshots SET data = $1 WHERE agent = 'bad'", &[&data]).await.expect("updates");
    assert!(within(fleet.revive("bad")).await.expect("revives"));
    for event in [Event::Add(2), Event::Finish] {
        within(fleet.send("bad", &event)).await.expect("sent");
    }
    until("the revived agent finishes", || async { within(fleet.status("bad")).await.expect("reads").done }).await;
    assert_eq!(taken(&fleet, "bad").await, [2]);
    assert_eq!(within(fleet.status("bad")).await.expect("reads").halted, None);
    let report = a.stop().await;
    assert_eq!((report.failed, report.finished), (1, 2), "{report:?}");
    db.drop_schema().await;
}

/// An agent whose log records states its machine does not replay to, and
/// one whose work in flight has a key that names no step's work, are
/// halted as unreadable when a worker resumes them; an agent beside them
/// runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_whose_log_or_work_in_flight_does_not_read_are_halted() {
    let Some(db) = Db::new("unreadable_log") else { return };
    let fleet = db.fleet(LEASE).await;
    for agent in ["log", "work", "good"] {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
    }
    within(fleet.send("log", &Event::Add(1))).await.expect("sent");
    // The tool waits for a permit that never comes: its work stays in flight.
    within(fleet.send("work", &Event::Work(5))).await.expect("sent");
    let a = Proc::start(worker(&fleet, "a"));
    for agent in ["log", "work"] {
        until("the step is written", || async { within(fleet.status(agent)).await.expect("reads").steps == 1 }).await;
    }
    a.stop().await;
    let client = db.client().await;
    client.execute("UPDATE events SET state = 'Elsewhere' WHERE agent = 'log'", &[]).await.expect("updates");
    let changed =
        client.execute("UPDATE effects SET key = 'nonsense' WHERE agent = 'work'", &[]).await.expect("updates");
    assert_eq!(changed, 1);

    let b = Proc::start(worker(&fleet, "b"));
    for event in [Event::Add(3), Event::Finish] {
        within(fleet.send("good", &event)).await.expect("sent");
    }
    for (agent, what) in [("log", "corrupt event"), ("work", "corrupt effect")] {
        until("the agent is halted", || async { within(fleet.status(agent)).await.expect("reads").halted.is_some() })
            .await;
        let status = within(fleet.status(agent)).await.expect("reads");
        let Some(Halt::Unreadable { message }) = &status.halted else { panic!("{agent}: {status:?}") };
        assert!(message.contains(what), "{agent}: {message}");
        assert_eq!(status.worker, None, "{status:?}");
    }
    until("the other agent finishes", || async { within(fleet.status("good")).await.expect("reads").done }).await;
    assert_eq!(taken(&fleet, "good").await, [3]);
    let report = b.stop().await;
    // At least the two failed starts: a checkpoint read that outlasts its
    // time limit on a loaded machine is a failed start as well, tried again.
    assert!(report.failed >= 2 && report.finished == 1, "{report:?}");
    db.drop_schema().await;
}

/// In a database of encoding `SQL_ASCII`, which stores text as given, a
/// snapshot that is not UTF-8 halts its agent as unreadable (rather than
/// read as a failed read, tried again every lease), an inbox event that is
/// not UTF-8 is refused as undecodable, listed with its bytes, while the
/// events sent after it are applied, and an agent whose id is not UTF-8
/// (which would fail every claim picking it) is halted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_that_is_not_utf8_halts_its_agent_or_is_refused() {
    let Some(db) = Db::new("not_utf8") else { return };
    let admin = db.client().await;
    let name = format!("fleet_ascii_{}", std::process::id());
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.expect("drops");
    let create = format!("CREATE DATABASE {name} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
    admin.batch_execute(&create).await.expect("creates");
    // The same server, that database.
    let (base, query) = db.url.split_once('?').unwrap_or((&db.url, ""));
    let (server, _) = base.rsplit_once('/').expect("a URL with a database");
    let url = if query.is_empty() { format!("{server}/{name}") } else { format!("{server}/{name}?{query}") };
    let ascii = Db { url, schema: db.schema.clone() };
    let fleet = ascii.fleet(LEASE).await;
    for agent in ["snapshot", "inbox"] {
        within(fleet.create(agent, &Job::new(Vec::new()))).await.expect("created");
    }
    let client = ascii.client().await;
    client.execute("UPDATE snapshots SET data = E'{\\xff}' WHERE agent = 'snapshot'", &[]).await.expect("updates");
    within(fleet.send("inbox", &Event::Add(1))).await.expect("sent");
    let row = client
        .query_one("INSERT INTO inbox (agent, event) VALUES ('inbox', E'\\xff\\xfe') RETURNING id", &[])
        .await
        .expect("inserts");
    let bad = u64::try_from(row.get::<_, i64>(0)).expect("an id");
    // An agent the fleet cannot name (written by hand: it writes none),
    // picked by every claim with the others.
    client
        .batch_execute(
            "INSERT INTO agents (agent, machine, format, next_seq, created_at) VALUES (E'bad\\xff', 'Job', 1, 1, now());
             INSERT INTO leases (agent) VALUES (E'bad\\xff')",
        )
        .await
        .expect("inserts");
    for event in [Event::Add(2), Event::Finish] {
        within(fleet.send("inbox", &event)).await.expect("sent");
    }
    let a = Proc::start(worker(&fleet, "a"));
    until("the agent is halted", || async { within(fleet.status("snapshot")).await.expect("reads").halted.is_some() })
        .await;
    let status = within(fleet.status("snapshot")).await.expect("reads");
    let Some(Halt::Unreadable { message }) = &status.halted else { panic!("{status:?}") };
    assert!(message.contains("corrupt snapshot"), "{message}");
    until("the other agent finishes", || async { within(fleet.status("inbox")).await.expect("reads").done }).await;
    assert_eq!(taken(&fleet, "inbox").await, [1, 2]);
    let refused = within(fleet.refused("inbox")).await.expect("reads");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!((refused[0].id, &refused[0].reason), (bad, &Refusal::Undecodable));
    assert_eq!(refused[0].event, "\u{fffd}\u{fffd}");
    let halted =
        "SELECT count(*) FROM leases WHERE halted AND halt = 'unreadable' AND failure LIKE 'its id is not UTF-8%'";
    assert_eq!(client.query_one(halted, &[]).await.expect("reads").get::<_, i64>(0), 1);
    let report = a.stop().await;
    // At least the one failed start: a checkpoint read that outlasts its
    // time limit on a loaded machine is a failed start as well, tried again.
    assert!(report.failed >= 1 && report.finished == 1, "{report:?}");
    drop((fleet, client));
    admin.batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)")).await.expect("drops");
}

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Keeper)]
mod keeper {
    #[context]
    pub type Context = Vec<super::Token>;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        #[terminal]
        Done,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        /// Kept in the context.
        Keep(u32),
        Finish,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
    }

    transitions! {
        Idle + Keep(n) => { ctx.push(super::Token(n)); } Idle / Nothing,
        Idle + Finish => Done / Nothing,
    }
}

/// A number written like any other except 0, which serde refuses to
/// write, and read like any other except 666, whose reading panics.
#[derive(Debug, Clone, PartialEq)]
pub struct Token(u32);

impl serde::Serialize for Token {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0 == 0 {
            return Err(serde::ser::Error::custom("token 0 is not written"));
        }
        serializer.serialize_u32(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Token {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let n = u32::deserialize(deserializer)?;
        assert!(n != 666, "666 does not read back");
        Ok(Token(n))
    }
}

/// An agent whose step leaves a context serde refuses to write (its
/// snapshot, taken at every step here) is halted as unencodable at that
/// step, rather than resumed and failed on it every lease; an agent of the
/// same machine beside it runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_whose_step_does_not_encode_is_halted() {
    let Some(db) = Db::new("unencodable") else { return };
    let fleet = db.fleet(LEASE).await;
    for agent in ["bad", "good"] {
        within(fleet.create(agent, &keeper::Keeper::new(Vec::new()))).await.expect("created");
    }
    within(fleet.send("bad", &keeper::Event::Keep(0))).await.expect("sent");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let every = SnapshotPolicy::Every(std::num::NonZeroU64::MIN);
    let worker = Worker::new(&fleet, "a").poll(Duration::from_millis(50)).snapshots(every);
    let running = tokio::spawn(worker.run(|_: &str| ((), ExecutorConfig::<keeper::Keeper>::new()), async {
        let _ = stopped.await;
    }));
    for event in [keeper::Event::Keep(4), keeper::Event::Finish] {
        within(fleet.send("good", &event)).await.expect("sent");
    }
    until("the agent is halted", || async { within(fleet.status("bad")).await.expect("reads").halted.is_some() }).await;
    let status = within(fleet.status("bad")).await.expect("reads");
    let Some(Halt::Unencodable { message }) = &status.halted else { panic!("{status:?}") };
    assert!(message.contains("token 0 is not written"), "{message}");
    assert_eq!((status.worker.as_deref(), status.steps, status.unapplied), (None, 0, 1), "{status:?}");
    until("the other agent finishes", || async { within(fleet.status("good")).await.expect("reads").done }).await;
    tokio::time::sleep(LEASE * 3).await;
    assert_eq!(within(fleet.status("bad")).await.expect("reads").epoch, status.epoch);
    let _ = stop.send(());
    let report = within(running).await.expect("joins").expect("runs");
    // At least the one failed start: a checkpoint read that outlasts its
    // time limit on a loaded machine is a failed start as well, tried again.
    assert!(report.failed >= 1 && report.finished == 1, "{report:?}");
    db.drop_schema().await;
}

/// An agent whose checkpoint makes the machine's `Deserialize` panic as a
/// worker reads it is halted as unreadable, with the panic's message: the
/// worker that read it runs on, with the agent beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_whose_checkpoint_panics_as_it_is_read_is_halted() {
    let Some(db) = Db::new("unreadable_panic") else { return };
    let fleet = db.fleet(LEASE).await;
    for agent in ["cursed", "good"] {
        within(fleet.create(agent, &keeper::Keeper::new(Vec::new()))).await.expect("created");
    }
    let every = SnapshotPolicy::Every(std::num::NonZeroU64::MIN);
    let run = |id: &str| {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let worker = Worker::new(&fleet, id).poll(Duration::from_millis(50)).snapshots(every);
        let running = tokio::spawn(worker.run(|_: &str| ((), ExecutorConfig::<keeper::Keeper>::new()), async {
            let _ = stopped.await;
        }));
        (stop, running)
    };
    // Written at its step, the snapshot holds 666; only a resume reads it.
    let (stop, running) = run("a");
    within(fleet.send("cursed", &keeper::Event::Keep(666))).await.expect("sent");
    until("the step is written", || async { within(fleet.status("cursed")).await.expect("reads").steps == 1 }).await;
    let _ = stop.send(());
    within(running).await.expect("the worker did not panic").expect("runs");

    let (stop, running) = run("b");
    for event in [keeper::Event::Keep(1), keeper::Event::Finish] {
        within(fleet.send("good", &event)).await.expect("sent");
    }
    until("the agent is halted", || async { within(fleet.status("cursed")).await.expect("reads").halted.is_some() })
        .await;
    let status = within(fleet.status("cursed")).await.expect("reads");
    let Some(Halt::Unreadable { message }) = &status.halted else { panic!("{status:?}") };
    assert!(message.contains("panicked") && message.contains("666 does not read back"), "{message}");
    until("the other agent finishes", || async { within(fleet.status("good")).await.expect("reads").done }).await;
    let _ = stop.send(());
    let report = within(running).await.expect("the worker did not panic").expect("runs");
    // At least the one failed start: a checkpoint read that outlasts its
    // time limit on a loaded machine is a failed start as well, tried again.
    assert!(report.failed >= 1 && report.finished == 1, "{report:?}");
    db.drop_schema().await;
}
