//! Events a fleet's agent will never apply, on a real Postgres server
//! (`AGENT_FSM_PG_URL`, each test in a schema of its own): a send that
//! commits after the agent's terminal step is refused with
//! `FleetError::Finished`, even while the worker has not yet got round to
//! the agent's end; events still waiting when the agent finished are
//! refused, visibly, not left unapplied for ever; an event the machine
//! panics on is refused after the configured attempts, and the events
//! sent after it are applied, in order; an inbox an earlier release created
//! gains the columns a refusal is kept in; an event whose own `Clone`
//! panics is refused as one the machine panics on; an event whose serde
//! impls panic is refused as undecodable; the refused events are read a
//! page at a time as well as all at once.

mod fleet_support;

use std::time::Duration;

use agent_fsm::fleet::{FleetConfig, FleetError, Refusal, Worker};
use agent_fsm::runtime::ExecutorConfig;
use fleet_support::{Db, Event, Job, Proc, taken, until, within};

const LEASE: Duration = Duration::from_millis(900);

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Picky)]
mod picky {
    #[context]
    pub type Context = Vec<u32>;

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
        /// Written down; 13 and 14 make the machine panic.
        Add(u32),
        Finish,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
    }

    transitions! {
        Idle + Add(n) => {
            assert!(n != 13, "the machine cannot take 13");
            // A message quoting what it was given, NUL byte and all.
            assert!(n != 14, "the machine cannot take \0{n}");
            ctx.push(n);
        } Idle / Nothing,
        Idle + Finish => Done / Nothing,
    }
}

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Brittle)]
mod brittle {
    #[context]
    pub type Context = Vec<u32>;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
    }

    #[events]
    #[derive(Debug, PartialEq)]
    pub enum Event {
        /// Written down; the `Clone` of `Note(7)` panics.
        Note(u32),
    }

    impl Clone for Event {
        fn clone(&self) -> Self {
            let Self::Note(n) = self;
            assert!(*n != 7, "seven does not clone");
            Self::Note(*n)
        }
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
    }

    transitions! {
        Idle + Note(n) => { ctx.push(n); } Idle / Nothing,
    }
}

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

/// An inbox event the machine panics on stops the agent each time it is
/// taken; after the configured attempts it is refused, with the panic's
/// message, and the agent goes on with the events sent after it, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_the_machine_panics_on_is_refused_after_the_configured_attempts() {
    let Some(db) = Db::new("poison_event") else { return };
    // Short leases: each failure costs the agent one before it is retried.
    let lease = Duration::from_millis(300);
    let config = FleetConfig::new(db.url.clone()).schema(db.schema.clone()).lease(lease).event_attempts(2);
    let fleet = within(agent_fsm::fleet::Fleet::connect(config)).await.expect("connects");
    within(fleet.create("picky", &picky::Picky::new(Vec::new()))).await.expect("created");
    for n in [1, 13, 2, 14, 3] {
        within(fleet.send("picky", &picky::Event::Add(n))).await.expect("sent");
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = Worker::new(&fleet, "a").poll(Duration::from_millis(50));
    let running = tokio::spawn(worker.run(|_: &str| ((), ExecutorConfig::<picky::Picky>::new()), async {
        let _ = stopped.await;
    }));
    let applied = || async {
        let store = fleet.store().clone();
        tokio::task::spawn_blocking(move || agent_fsm::store::restore::<picky::Picky, _>(&store, "picky"))
            .await
            .expect("joins")
            .expect("restores")
            .machine
            .context()
            .clone()
    };
    until("the events after the panicking one are applied", || async { applied().await.len() == 3 }).await;
    assert_eq!(applied().await, [1, 2, 3]);
    let status = within(fleet.status("picky")).await.expect("reads");
    assert_eq!((status.unapplied, status.refused, status.steps), (0, 2, 3), "{status:?}");
    let refused = within(fleet.refused("picky")).await.expect("reads");
    assert_eq!(refused.len(), 2, "{refused:?}");
    for (refused, (n, said)) in refused.iter().zip([(13, "the machine cannot take 13"), (14, "take \u{fffd}14")]) {
        let event: picky::Event = serde_json::from_str(&refused.event).expect("decodes");
        assert_eq!(event, picky::Event::Add(n));
        let Refusal::Panicked { attempts, message } = &refused.reason else { panic!("{refused:?}") };
        assert_eq!(*attempts, 2);
        assert!(message.contains(said), "{message}");
    }

    // The agent goes on: it takes what is sent next and finishes.
    within(fleet.send("picky", &picky::Event::Finish)).await.expect("sent");
    until("the agent is done", || async { within(fleet.status("picky")).await.expect("reads").done }).await;
    let _ = stop.send(());
    let report = within(running).await.expect("joins").expect("runs");
    assert_eq!((report.failed, report.finished), (4, 1), "{report:?}");
    db.drop_schema().await;
}

/// A schema an earlier release created, whose inbox lacks the columns a
/// refusal is kept in and their index, whose leases lack those a halt is
/// kept in, and whose workers lack their machine and life, gains them at
/// the next connect: its agents' events are refused and listed, and their
/// status read, as on a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbox_an_earlier_release_created_gains_the_refusal_columns() {
    let Some(db) = Db::new("inbox_columns") else { return };
    drop(db.fleet(LEASE).await);
    let client = db.client().await;
    client
        .batch_execute(
            "DROP INDEX inbox_refused;
             ALTER TABLE inbox DROP COLUMN failures, DROP COLUMN failure, DROP COLUMN refusal;
             ALTER TABLE leases DROP COLUMN failures, DROP COLUMN failed_seq, DROP COLUMN failure,
                                DROP COLUMN halted;
             ALTER TABLE workers DROP COLUMN machine, DROP COLUMN life",
        )
        .await
        .expect("drops the columns");
    let fleet = db.fleet(LEASE).await;
    let index = client.query_one("SELECT to_regclass('inbox_refused') IS NOT NULL", &[]).await.expect("reads");
    assert!(index.get::<_, bool>(0), "the refused rows' index is created");
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    within(fleet.send("job", &Event::Finish)).await.expect("sent");
    within(fleet.send("job", &Event::Add(1))).await.expect("sent");
    let a = Proc::start(Worker::new(&fleet, "a").capacity(2).poll(Duration::from_millis(100)));
    until("the agent is done", || async { within(fleet.status("job")).await.expect("reads").done }).await;
    let refused = within(fleet.refused("job")).await.expect("reads");
    assert_eq!(refused.iter().map(|r| &r.reason).collect::<Vec<_>>(), [&Refusal::Finished]);
    assert_eq!(within(fleet.status("job")).await.expect("reads").halted, None);
    a.stop().await;
    db.drop_schema().await;
}

/// The refused events read a page at a time are the whole list's, in
/// order, each once: a page starts after the id given and holds at most
/// the limit; an event applied (sent first) is on no page; past the last
/// id, with a limit of 0, or for an agent the fleet does not know, a page
/// is empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_events_read_a_page_at_a_time_are_the_whole_list() {
    let Some(db) = Db::new("refused_pages") else { return };
    let fleet = db.fleet(LEASE).await;
    within(fleet.create("job", &Job::new(Vec::new()))).await.expect("created");
    within(fleet.send("job", &Event::Add(9))).await.expect("sent");
    within(fleet.send("job", &Event::Finish)).await.expect("sent");
    for n in 1..=5 {
        within(fleet.send("job", &Event::Add(n))).await.expect("sent");
    }
    let a = Proc::start(Worker::new(&fleet, "a").capacity(2).poll(Duration::from_millis(100)));
    until("the agent is done", || async { within(fleet.status("job")).await.expect("reads").done }).await;
    assert_eq!(taken(&fleet, "job").await, [9]);
    let all = within(fleet.refused("job")).await.expect("reads");
    assert_eq!(all.len(), 5, "{all:?}");
    for (refused, n) in all.iter().zip(1..) {
        assert_eq!(refused.reason, Refusal::Finished);
        assert!(refused.event.contains(&n.to_string()), "{refused:?}");
    }
    let mut paged = Vec::new();
    let mut after = 0;
    loop {
        let page = within(fleet.refused_page("job", after, 2)).await.expect("reads");
        assert!(page.len() <= 2, "{page:?}");
        paged.extend(page.iter().cloned());
        match page.last() {
            Some(last) if page.len() == 2 => after = last.id,
            _ => break,
        }
    }
    assert_eq!(paged, all);
    assert_eq!(within(fleet.refused_page("job", all[1].id, 2)).await.expect("reads"), all[2..4]);
    assert_eq!(within(fleet.refused_page("job", all[4].id, 2)).await.expect("reads"), []);
    assert_eq!(within(fleet.refused_page("job", 0, 0)).await.expect("reads"), []);
    assert_eq!(within(fleet.refused_page("job", u64::MAX, 10)).await.expect("reads"), []);
    assert_eq!(within(fleet.refused_page("nobody", 0, 10)).await.expect("reads"), []);
    a.stop().await;
    db.drop_schema().await;
}

/// An inbox event whose own `Clone` panics, on a worker recording its
/// agents' events, is refused after the configured attempts as one the
/// machine panics on, and the events after it are applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_whose_clone_panics_is_refused_after_the_configured_attempts() {
    let Some(db) = Db::new("poison_clone") else { return };
    let config = FleetConfig::new(db.url.clone()).schema(db.schema.clone()).lease(Duration::from_millis(300));
    let fleet = within(agent_fsm::fleet::Fleet::connect(config.event_attempts(1))).await.expect("connects");
    within(fleet.create("brittle", &brittle::Brittle::new(Vec::new()))).await.expect("created");
    for n in [1, 7, 2] {
        within(fleet.send("brittle", &brittle::Event::Note(n))).await.expect("sent");
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = Worker::new(&fleet, "a").poll(Duration::from_millis(50));
    let running =
        tokio::spawn(worker.run(|_: &str| ((), ExecutorConfig::<brittle::Brittle>::new().record_events()), async {
            let _ = stopped.await;
        }));
    until("the event after the refused one is applied", || async {
        within(fleet.status("brittle")).await.expect("reads").steps == 2
    })
    .await;
    let status = within(fleet.status("brittle")).await.expect("reads");
    assert_eq!((status.unapplied, status.refused), (0, 1), "{status:?}");
    let refused = within(fleet.refused("brittle")).await.expect("reads");
    let Refusal::Panicked { attempts: 1, message } = &refused[0].reason else { panic!("{refused:?}") };
    assert!(message.contains("seven does not clone"), "{message}");
    let _ = stop.send(());
    let report = within(running).await.expect("joins").expect("runs");
    assert_eq!(report.failed, 1, "{report:?}");
    db.drop_schema().await;
}

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Fused)]
mod fused {
    #[context]
    pub type Context = Vec<u32>;

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
        /// Written down.
        Light(super::Fuse),
        Finish,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
    }

    transitions! {
        Idle + Light(fuse) => { ctx.push(fuse.0); } Idle / Nothing,
        Idle + Finish => Done / Nothing,
    }
}

/// A number whose serde impls panic: read, on 666; written, on 777; and
/// that serde refuses to write on 888.
#[derive(Debug, Clone, PartialEq)]
pub struct Fuse(u32);

impl serde::Serialize for Fuse {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        assert!(self.0 != 777, "777 blows up as it is written");
        if self.0 == 888 {
            return Err(serde::ser::Error::custom("888 is not written"));
        }
        serializer.serialize_u32(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Fuse {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let n = u32::deserialize(deserializer)?;
        assert!(n != 666, "666 blows up as it is read");
        Ok(Fuse(n))
    }
}

/// An inbox event whose `Deserialize` panics, and one whose `Serialize`
/// panics or fails (which the step taking it would call), are refused as
/// undecodable, as one that does not parse is: the worker, the agent and
/// the events sent after them go on, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_whose_serde_impl_panics_is_refused_as_undecodable() {
    let Some(db) = Db::new("serde_panics") else { return };
    let fleet = db.fleet(LEASE).await;
    within(fleet.create("fused", &fused::Fused::new(Vec::new()))).await.expect("created");
    let mut bad = Vec::new();
    within(fleet.send("fused", &fused::Event::Light(Fuse(1)))).await.expect("sent");
    bad.push(within(fleet.send("fused", &fused::Event::Light(Fuse(666)))).await.expect("sent"));
    within(fleet.send("fused", &fused::Event::Light(Fuse(2)))).await.expect("sent");
    // As JSON: the fleet's own writing of it would panic here.
    let written = serde_json::json!({"event": "light", "data": 777});
    bad.push(within(fleet.send("fused", &written)).await.expect("sent"));
    let refused = serde_json::json!({"event": "light", "data": 888});
    bad.push(within(fleet.send("fused", &refused)).await.expect("sent"));
    within(fleet.send("fused", &fused::Event::Light(Fuse(3)))).await.expect("sent");
    within(fleet.send("fused", &fused::Event::Finish)).await.expect("sent");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = Worker::new(&fleet, "a").poll(Duration::from_millis(50));
    let running = tokio::spawn(worker.run(|_: &str| ((), ExecutorConfig::<fused::Fused>::new()), async {
        let _ = stopped.await;
    }));
    until("the agent is done", || async { within(fleet.status("fused")).await.expect("reads").done }).await;
    let refused = within(fleet.refused("fused")).await.expect("reads");
    let refused: Vec<(u64, Refusal)> = refused.into_iter().map(|r| (r.id, r.reason)).collect();
    let undecodable: Vec<(u64, Refusal)> = bad.iter().map(|id| (*id, Refusal::Undecodable)).collect();
    assert_eq!(refused, undecodable);
    let store = fleet.store().clone();
    let restored = tokio::task::spawn_blocking(move || agent_fsm::store::restore::<fused::Fused, _>(&store, "fused"))
        .await
        .expect("joins")
        .expect("restores");
    assert_eq!(restored.machine.context(), &[1, 2, 3]);
    let _ = stop.send(());
    let report = within(running).await.expect("the worker did not panic").expect("runs");
    assert_eq!((report.failed, report.finished), (0, 1), "{report:?}");
    db.drop_schema().await;
}
