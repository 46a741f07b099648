//! Durable agents at their edges: sends still owed at a restart are
//! delivered in the order they were due and then finished in the store,
//! and deadlines due together fire in the order they were set; under
//! `BeforeAction` no task runs before the step that spawned it is written
//! (every step's, not only the first's), nor ever if the store refused
//! that step; a task cancelled by the action that spawned it leaves
//! nothing in flight; a writer thread that hits a full store stops the
//! agent while it runs, and writes an agent whose id a thread name cannot
//! hold; a `Durable` describes itself without its store; a step whose
//! event came from the mailbox is marked as input, and a restart reads
//! past that mark.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, RequestError, WorkerError};
use agent_fsm::store::{
    AgentInfo, Checkpoint, CheckpointStore, Durability, Durable, Effect, EffectKind, EventRecord, INPUT_ORIGIN,
    InFlight, Journal, MemoryStore, Snapshot, SnapshotPolicy, SqliteStore, Start, StepRecord, StoreError, restore,
};

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Relay)]
mod relay {
    #[context]
    pub type Context = Vec<String>;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        /// Written down.
        Note(String),
        /// Each name sent back as a `Note`, in order.
        Fan(Vec<String>),
        /// Spawns that many tasks, each ending in a `Note` of its key.
        Spawn(u32),
        /// Spawns a task and cancels it at once.
        Doom,
        /// Spawns a task whose result is a `Fan` of `hopped`.
        Hop,
        /// Each name streamed back as a `Note`, in order.
        Stream(Vec<String>),
        /// Each name a `Note` at a deadline a minute away, set in order.
        Remind(Vec<String>),
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
        SendAll(Vec<String>),
        SpawnTasks(u32),
        SpawnAndCancel,
        HopTask,
        StreamAll(Vec<String>),
        RemindAll(Vec<String>),
    }

    transitions! {
        Idle + Note(s) => { ctx.push(s.clone()); } Idle / Nothing,
        Idle + Fan(names) => Idle / SendAll(names.clone()),
        Idle + Spawn(n) => Idle / SpawnTasks(n),
        Idle + Doom => Idle / SpawnAndCancel,
        Idle + Hop => Idle / HopTask,
        Idle + Stream(names) => Idle / StreamAll(names.clone()),
        Idle + Remind(names) => Idle / RemindAll(names.clone()),
    }
}

use relay::{Event, Relay};

/// Sends what it is told to, and counts the tasks that began to run.
#[derive(Clone, Default)]
struct Sender {
    ran: Arc<AtomicUsize>,
}

impl Effects<Relay> for Sender {
    type Output = ();

    fn perform(&mut self, action: relay::Action, cx: &mut EffectContext<'_, Relay, ()>) {
        match action {
            relay::Action::SendAll(names) => {
                for name in names {
                    cx.send(Event::Note(name));
                }
            }
            relay::Action::SpawnTasks(n) => {
                for i in 0..n {
                    let key = format!("task-{i}");
                    let (ran, note) = (Arc::clone(&self.ran), key.clone());
                    cx.spawn_task(
                        key,
                        async move {
                            ran.fetch_add(1, Ordering::SeqCst);
                            Event::Note(note)
                        },
                        |key, failure| Event::Note(format!("{key}: {failure}")),
                    );
                }
            }
            relay::Action::SpawnAndCancel => {
                cx.spawn_task("doomed", std::future::pending(), |key, failure| {
                    Event::Note(format!("{key}: {failure}"))
                });
                cx.cancel_task("doomed");
            }
            relay::Action::HopTask => {
                cx.spawn_task("hop", async { Event::Fan(vec!["hopped".to_owned()]) }, |key, failure| {
                    Event::Note(format!("{key}: {failure}"))
                });
            }
            relay::Action::StreamAll(names) => {
                let items = futures::stream::iter(names.into_iter().map(Event::Note));
                cx.stream_keyed("names", items, |_| None);
            }
            relay::Action::RemindAll(names) => {
                for name in names {
                    cx.deadline(Duration::from_secs(60), Event::Note(name));
                }
            }
            relay::Action::Nothing => {}
        }
    }
}

/// Fails a test whose agent hangs, instead of stalling the suite.
async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future).await.expect("the agent answered in time")
}

/// A wall clock that follows tokio's (paused) one.
fn tokio_clock() -> impl Fn() -> SystemTime + Send + Sync + 'static {
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let start = tokio::time::Instant::now();
    move || base + start.elapsed()
}

fn note(name: &str) -> String {
    Journal::<Relay>::encode(&Event::Note(name.to_owned())).expect("encodes")
}

fn send_row(key: &str, name: &str) -> Effect {
    Effect { kind: EffectKind::Send, key: key.to_owned(), deadline: None, event: Some(note(name)) }
}

/// Writes the log of a process that died after two `Fan` steps whose
/// sends were not delivered: step 1 sent `a` then `b`, step 2 sent `c`.
fn log_with_owed_sends(store: &dyn CheckpointStore) {
    let mut machine = Relay::new(Vec::new());
    let mut journal = Journal::create(store, "relay", &machine).expect("creates").with_policy(SnapshotPolicy::Never);
    let steps =
        [(vec!["a", "b"], vec![send_row("1.0", "a"), send_row("1.1", "b")]), (vec!["c"], vec![send_row("2.0", "c")])];
    for (names, rows) in steps {
        let event = Event::Fan(names.into_iter().map(str::to_owned).collect());
        let mut step = journal.begin(&event).expect("begins");
        machine.handle_event(event);
        for row in rows {
            step.start(row);
        }
        journal.commit(store, step, &machine).expect("writes");
    }
}

#[tokio::test]
async fn sends_owed_at_a_restart_are_delivered_newest_step_first_and_then_finished() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    log_with_owed_sends(&*store);
    let (handle, start) = Durable::new(Arc::clone(&store), "relay")
        .spawn(|| Relay::new(Vec::new()), Sender::default(), ExecutorConfig::new())
        .expect("reads");
    assert_eq!(start, Start::Resumed { last: 2 });
    within(handle.wait_idle()).await.expect("runs");
    // What the later step sent comes first (it would have been delivered
    // before the older sends, depth first), each step's in call order; the
    // `Fan` steps replayed send nothing again.
    let notes = within(handle.inspect(|m| m.context().clone())).await.expect("runs");
    assert_eq!(notes, ["c", "a", "b"]);
    within(handle.shutdown()).await.expect("stops");
    let restored = restore::<Relay, _>(&*store, "relay").expect("restores");
    assert!(restored.in_flight.is_empty(), "{:?}", restored.in_flight);
    assert_eq!(restored.next_seq, 6);
    assert_eq!(restored.machine.context(), &["c", "a", "b"]);
}

#[tokio::test]
async fn sends_of_a_running_agent_are_written_and_finished_by_their_delivery() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let (handle, _) = Durable::new(Arc::clone(&store), "relay")
        .spawn(|| Relay::new(Vec::new()), Sender::default(), ExecutorConfig::new())
        .expect("reads");
    handle.send(Event::Fan(vec!["x".into(), "y".into()])).await.expect("sent");
    within(handle.wait_idle()).await.expect("runs");
    within(handle.shutdown()).await.expect("stops");
    // Step 1 started both sends, steps 2 and 3 delivered them.
    let in_flight_after = |seq| store.in_flight("relay", seq).expect("reads");
    let owed: Vec<_> =
        in_flight_after(1).into_iter().map(|row| (row.effect.kind, row.effect.key, row.effect.event)).collect();
    assert_eq!(
        owed,
        [(EffectKind::Send, "1.0".to_owned(), Some(note("x"))), (EffectKind::Send, "1.1".to_owned(), Some(note("y")))]
    );
    assert_eq!(in_flight_after(2).len(), 1);
    assert!(in_flight_after(3).is_empty());
    let restored = restore::<Relay, _>(&*store, "relay").expect("restores");
    assert_eq!(restored.machine.context(), &["x", "y"]);
    assert_eq!(restored.next_seq, 4);
}

/// Deadlines one action set for the same moment fire in the order it set
/// them, after a restart as before it: more than ten of them too, whose
/// keys (`"1.10"` before `"1.2"` as text) do not sort in that order.
#[tokio::test(start_paused = true)]
async fn deadlines_set_together_fire_in_call_order_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn CheckpointStore> = Arc::new(SqliteStore::open(dir.path().join("agents.db")).expect("opens"));
    let durable = Durable::new(Arc::clone(&store), "relay").clock(tokio_clock());
    let names: Vec<String> = (0..12).map(|i| format!("reminder {i}")).collect();
    let (handle, _) = durable.spawn(|| Relay::new(Vec::new()), Sender::default(), ExecutorConfig::new()).expect("new");
    handle.send(Event::Remind(names.clone())).await.expect("sent");
    // Deadlines let the agent be idle.
    within(handle.wait_idle()).await.expect("runs");
    within(handle.shutdown()).await.expect("stops");

    let (handle, start) =
        durable.spawn(|| Relay::new(Vec::new()), Sender::default(), ExecutorConfig::new()).expect("resumes");
    assert_eq!(start, Start::Resumed { last: 1 });
    tokio::time::sleep(Duration::from_secs(61)).await;
    within(handle.wait_idle()).await.expect("runs");
    assert_eq!(handle.inspect(|m| m.context().clone()).await.expect("runs"), names);
}

#[tokio::test]
async fn a_writer_thread_that_fills_the_store_stops_the_running_agent() {
    let store = Arc::new(MemoryStore::with_quota(1_500));
    let durable = Durable::new(store.clone(), "relay").durability(Durability::WhileAction);
    let (handle, _) =
        durable.spawn(|| Relay::new(Vec::new()), Sender::default(), ExecutorConfig::new()).expect("reads");
    // No stop: the writer's failure reaches the worker while it runs.
    for i in 0..1_000 {
        if handle.call(Event::Note(format!("note {i}"))).await.is_err() {
            break;
        }
    }
    let error = within(handle.wait_finished()).await.expect_err("the store filled up");
    let RequestError::Failed(error) = error else { panic!("not a failure: {error:?}") };
    let WorkerError::Store(failure) = &*error else { panic!("not a store failure: {error:?}") };
    assert!(matches!(failure.error().downcast_ref::<StoreError>(), Some(StoreError::Full(_))), "{failure:?}");
    // What the thread wrote before the store filled reads back.
    let restored = restore::<Relay, _>(&*store, "relay").expect("the last good step restores");
    assert!(restored.next_seq > 1);
}

/// An agent id is the user's: one with a NUL byte (which a thread's name
/// cannot hold) is written by the writer thread as any other.
#[tokio::test]
async fn a_writer_thread_writes_an_agent_whose_id_has_a_nul_byte() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let durable = Durable::new(Arc::clone(&store), "re\0lay").durability(Durability::WhileAction);
    let (handle, _) =
        durable.spawn(|| Relay::new(Vec::new()), Sender::default(), ExecutorConfig::new()).expect("reads");
    within(handle.call(Event::Note("x".to_owned()))).await.expect("the step is taken");
    within(handle.shutdown()).await.expect("stops");
    let restored = restore::<Relay, _>(&*store, "re\0lay").expect("restores");
    assert_eq!(restored.machine.context(), &["x"]);
}

#[test]
fn a_durable_shows_its_agent_and_mode() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let shown = format!("{:?}", Durable::new(store, "agent-7").durability(Durability::OnStop));
    assert!(shown.contains("agent-7") && shown.contains("OnStop"), "{shown}");
}

/// A store that, while it writes a step whose event is `Spawn`, watches
/// for a task to begin running (for up to `WATCH`), and notes how many
/// had.
struct Watching {
    inner: MemoryStore,
    ran: Arc<AtomicUsize>,
    seen: Mutex<Vec<usize>>,
}

/// Long enough for a task spawned on another worker thread to run.
const WATCH: Duration = Duration::from_millis(300);

impl CheckpointStore for Watching {
    fn create(&self, agent: &str, machine: &str, at: SystemTime, initial: &Snapshot) -> Result<(), StoreError> {
        self.inner.create(agent, machine, at, initial)
    }

    fn agent(&self, agent: &str) -> Result<Option<AgentInfo>, StoreError> {
        self.inner.agent(agent)
    }

    fn agents(&self) -> Result<Vec<String>, StoreError> {
        self.inner.agents()
    }

    fn append(&self, agent: &str, step: &StepRecord) -> Result<(), StoreError> {
        if step.event.contains("\"spawn\"") {
            let since = Instant::now();
            let before = self.ran.load(Ordering::SeqCst);
            while self.ran.load(Ordering::SeqCst) == before && since.elapsed() < WATCH {
                std::thread::sleep(Duration::from_millis(1));
            }
            self.seen.lock().expect("not poisoned").push(self.ran.load(Ordering::SeqCst));
        }
        self.inner.append(agent, step)
    }

    fn finish(&self, agent: &str, finished: &[(EffectKind, String)]) -> Result<(), StoreError> {
        self.inner.finish(agent, finished)
    }

    fn snapshot_at_or_before(&self, agent: &str, seq: u64) -> Result<Option<(u64, Snapshot)>, StoreError> {
        self.inner.snapshot_at_or_before(agent, seq)
    }

    fn events(&self, agent: &str, after: u64, through: u64) -> Result<Vec<EventRecord>, StoreError> {
        self.inner.events(agent, after, through)
    }

    fn in_flight(&self, agent: &str, seq: u64) -> Result<Vec<InFlight>, StoreError> {
        self.inner.in_flight(agent, seq)
    }

    fn checkpoints(&self, agent: &str) -> Result<Vec<Checkpoint>, StoreError> {
        self.inner.checkpoints(agent)
    }

    fn fork(&self, source: &str, seq: u64, new: &str) -> Result<(), StoreError> {
        self.inner.fork(source, seq, new)
    }
}

// Several worker threads: a task started before its step is written would
// be run by another thread while the worker's thread writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn before_action_runs_no_task_until_its_step_is_written() {
    let effects = Sender::default();
    let store = Arc::new(Watching { inner: MemoryStore::new(), ran: Arc::clone(&effects.ran), seen: Mutex::default() });
    let durable = Durable::new(store.clone(), "relay");
    let (handle, _) = durable.spawn(|| Relay::new(Vec::new()), effects.clone(), ExecutorConfig::new()).expect("reads");
    handle.send(Event::Spawn(3)).await.expect("sent");
    within(async {
        while handle.inspect(|m| m.context().len()).await.expect("runs") < 3 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    within(handle.shutdown()).await.expect("stops");
    assert_eq!(*store.seen.lock().expect("not poisoned"), [0], "tasks ran while their step was written");
    assert_eq!(effects.ran.load(Ordering::SeqCst), 3);
}

/// Not only the first step's: each step's tasks wait for its write.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn before_action_holds_the_tasks_of_every_step_until_it_is_written() {
    let effects = Sender::default();
    let store = Arc::new(Watching { inner: MemoryStore::new(), ran: Arc::clone(&effects.ran), seen: Mutex::default() });
    let durable = Durable::new(store.clone(), "relay");
    let (handle, _) = durable.spawn(|| Relay::new(Vec::new()), effects.clone(), ExecutorConfig::new()).expect("reads");
    for (n, notes) in [(2, 2), (3, 5), (1, 6)] {
        handle.send(Event::Spawn(n)).await.expect("sent");
        within(async {
            while handle.inspect(|m| m.context().len()).await.expect("runs") < notes {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await;
    }
    within(handle.shutdown()).await.expect("stops");
    // At each write, only the tasks of the steps before it had run.
    assert_eq!(*store.seen.lock().expect("not poisoned"), [0, 2, 5], "tasks ran while their step was written");
    assert_eq!(effects.ran.load(Ordering::SeqCst), 6);
}

/// A step the store refused is not in the store: its tasks never run,
/// though the worker had already queued them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn before_action_runs_no_task_of_a_step_the_store_refused() {
    // The smallest quota that holds the new agent: its first step is refused.
    let quota = (0..100_000)
        .find(|&q| Journal::create(&MemoryStore::with_quota(q), "relay", &Relay::new(Vec::new())).is_ok())
        .expect("a small agent fits");
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::with_quota(quota));
    let effects = Sender::default();
    let durable = Durable::new(Arc::clone(&store), "relay");
    let (handle, _) = durable.spawn(|| Relay::new(Vec::new()), effects.clone(), ExecutorConfig::new()).expect("new");
    let tracker = handle.tracker().clone();
    handle.send(Event::Spawn(1000)).await.expect("sent");
    let error = within(handle.wait_finished()).await.expect_err("the store is full");
    let RequestError::Failed(error) = error else { panic!("not a failure: {error:?}") };
    assert!(matches!(&*error, WorkerError::Store(_)), "{error:?}");
    // Every task the worker started has ended, run or not.
    tracker.close();
    within(tracker.wait()).await;
    assert_eq!(effects.ran.load(Ordering::SeqCst), 0, "a task of the refused step ran");
    assert_eq!(store.agent("relay").expect("reads").expect("there").next_seq, 1);
}

#[tokio::test]
async fn a_task_cancelled_by_the_action_that_spawned_it_is_not_left_in_flight() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let durable = Durable::new(Arc::clone(&store), "relay");
    let (handle, _) =
        durable.spawn(|| Relay::new(Vec::new()), Sender::default(), ExecutorConfig::new()).expect("reads");
    handle.send(Event::Doom).await.expect("sent");
    within(handle.wait_idle()).await.expect("runs");
    within(handle.shutdown()).await.expect("stops");
    // Its step neither starts nor finishes it: no row is left behind to
    // perform it again at the next spawn.
    assert!(store.in_flight("relay", 1).expect("reads").iter().all(|row| row.effect.kind != EffectKind::Task));
    let restored = restore::<Relay, _>(&*store, "relay").expect("restores");
    assert!(restored.in_flight.is_empty(), "{:?}", restored.in_flight);
    assert_eq!(restored.machine.context(), &["doomed: cancelled"]);
}

#[tokio::test]
async fn a_step_that_ends_a_task_and_starts_a_send_writes_both() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let durable = Durable::new(Arc::clone(&store), "relay");
    let (handle, _) =
        durable.spawn(|| Relay::new(Vec::new()), Sender::default(), ExecutorConfig::new()).expect("reads");
    handle.send(Event::Hop).await.expect("sent");
    within(handle.wait_idle()).await.expect("runs");
    within(handle.shutdown()).await.expect("stops");
    // Step 2 (the task's result) finishes the task and starts the send
    // that step 3 delivers.
    let kinds = |seq| -> Vec<EffectKind> {
        store.in_flight("relay", seq).expect("reads").into_iter().map(|row| row.effect.kind).collect()
    };
    assert_eq!(kinds(1), [EffectKind::Task]);
    assert_eq!(kinds(2), [EffectKind::Send]);
    assert!(kinds(3).is_empty());
    let restored = restore::<Relay, _>(&*store, "relay").expect("restores");
    assert_eq!(restored.machine.context(), &["hopped"]);
}

#[tokio::test]
async fn a_mailbox_event_is_marked_as_input_and_the_runtime_own_events_are_not() {
    for (store, _dir) in stores() {
        let durable = Durable::new(Arc::clone(&store), "relay");
        let (handle, _) =
            durable.spawn(|| Relay::new(Vec::new()), Sender::default(), ExecutorConfig::new()).expect("reads");
        handle.send(Event::Note("sent".into())).await.expect("sent");
        within(handle.call(Event::Note("called".into()))).await.expect("called");
        handle.send(Event::Fan(vec!["fanned".into()])).await.expect("sent");
        handle.send(Event::Spawn(1)).await.expect("sent");
        within(handle.wait_idle()).await.expect("runs");
        handle.send(Event::Stream(vec!["streamed".into()])).await.expect("sent");
        within(handle.wait_idle()).await.expect("runs");
        within(handle.shutdown()).await.expect("stops");

        let log = store.events("relay", 0, 100).expect("reads");
        let origins: Vec<(&str, Option<&str>)> = log.iter().map(|e| (e.event.as_str(), e.origin.as_deref())).collect();
        let input = Some(INPUT_ORIGIN);
        let fan = Journal::<Relay>::encode(&Event::Fan(vec!["fanned".into()])).expect("encodes");
        let spawn = Journal::<Relay>::encode(&Event::Spawn(1)).expect("encodes");
        let stream = Journal::<Relay>::encode(&Event::Stream(vec!["streamed".into()])).expect("encodes");
        let (sent, called, fanned, task, streamed) =
            (note("sent"), note("called"), note("fanned"), note("task-0"), note("streamed"));
        assert_eq!(
            origins,
            [
                (sent.as_str(), input),
                (called.as_str(), input),
                (fan.as_str(), input),
                (fanned.as_str(), None),
                (spawn.as_str(), input),
                (task.as_str(), None),
                (stream.as_str(), input),
                (streamed.as_str(), Some("stream:7.0")),
            ]
        );
        // A restart reads the marks as nothing it must act on.
        let restored = restore::<Relay, _>(&*store, "relay").expect("restores");
        assert_eq!(restored.machine.context(), &["sent", "called", "fanned", "task-0", "streamed"]);
        let (handle, start) =
            durable.spawn(|| Relay::new(Vec::new()), Sender::default(), ExecutorConfig::new()).expect("reads");
        assert_eq!(start, Start::Resumed { last: 8 });
        let notes = within(handle.inspect(|m| m.context().clone())).await.expect("runs");
        assert_eq!(notes, ["sent", "called", "fanned", "task-0", "streamed"]);
        within(handle.shutdown()).await.expect("stops");
    }
}

/// An in-memory store and an SQLite file.
fn stores() -> Vec<(Arc<dyn CheckpointStore>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().expect("a temp dir");
    let sqlite = agent_fsm::store::SqliteStore::open(dir.path().join("agents.db")).expect("the file opens");
    vec![(Arc::new(MemoryStore::new()), None), (Arc::new(sqlite), Some(dir))]
}
