//! Durable agents killed with SIGKILL at seeded points under each
//! durability mode, with a snapshot every step or few (so that kills land
//! in snapshot writes too), and spawned again from their SQLite file each
//! time. After every kill the store restores (no corrupt row, no gap) and
//! has not gone back; under `OnStop` it holds exactly what it held before
//! the spawn. Each life performs its jobs from the one the store has in
//! flight on, never one from before it and never one the store does not
//! lead to. The finished agent took each job's result once and its alarm
//! once, including an alarm whose deadline passed while no process ran.
//! Two agents spawned from the same file at once leave one log: the
//! second writer's step is refused as a conflict and stops it. A file
//! damaged at seeded bytes never makes a spawn panic.
//!
//! Its own `main`: the test binary is also the child process it kills (run
//! with `KILL_CHILD_STORE` set).

#[path = "support/child.rs"]
mod child;

use std::collections::HashMap;
use std::io::Write as _;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, RequestError, WorkerError};
use agent_fsm::store::{CheckpointStore, Durability, Durable, SnapshotPolicy, SqliteStore, Start, StoreError, restore};
use child::{Seeded, finishes, kill, wait_for};
use serde::{Deserialize, Serialize};

/// Jobs in a run, one after the other.
const JOBS: u32 = 24;
/// The alarm armed once the jobs are done.
const ALARM: Duration = Duration::from_millis(150);
/// The alarm of the test that kills a life once its alarm is armed: long
/// enough that the kill lands before it fires, however slowly the test
/// sees the armed step.
const LONG_ALARM: Duration = Duration::from_secs(1);
/// The agent's id in the store.
const AGENT: &str = "jobs";
/// The seed of the kill points (printed, to replay a failure).
const SEED: u64 = 0xdead_beef_0045;

/// What the agent has taken in (public: the machine's context is part of
/// its public type).
#[allow(unreachable_pub)]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Done {
    /// The jobs whose results came, in order.
    pub jobs: Vec<u32>,
    /// Alarms that fired.
    pub alarms: u32,
    /// Weight, so that a snapshot takes a while to write.
    pub pad: String,
}

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Jobs)]
mod jobs {
    use super::{Done, JOBS};

    #[context]
    pub type Context = Done;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Working {
            next: u32,
        },
        Waiting,
        #[terminal]
        Finished,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Begin,
        Tick(u32),
        Failed(String),
        Alarm,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
        Job(u32),
        Sleep,
    }

    transitions! {
        Idle + Begin => Working { next: 0 } / Job(0),
        Working { next } + Tick(n) [*n == *next && *n + 1 < JOBS] => { ctx.jobs.push(n); } Working { next: next + 1 } / Job(next + 1),
        Working { next } + Tick(n) [*n == *next] => { ctx.jobs.push(n); } Waiting / Sleep,
        Waiting + Alarm => { ctx.alarms += 1; } Finished / Nothing,
    }
}

use jobs::{Event, Jobs, State};

/// Effects whose every job first appends `pid job` to a ledger file (the
/// work as performed, outside the store), then takes a few milliseconds.
struct Ledger {
    path: PathBuf,
    /// The alarm's delay.
    alarm: Duration,
}

impl Effects<Jobs> for Ledger {
    type Output = ();

    fn perform(&mut self, action: jobs::Action, cx: &mut EffectContext<'_, Jobs, ()>) {
        match action {
            jobs::Action::Job(n) => {
                let path = self.path.clone();
                cx.spawn_task(
                    format!("job-{n}"),
                    async move {
                        let line = format!("{} {n}\n", std::process::id());
                        let written = std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(&path)
                            .and_then(|mut f| f.write_all(line.as_bytes()));
                        if let Err(error) = written {
                            return Event::Failed(error.to_string());
                        }
                        tokio::time::sleep(Duration::from_millis(3)).await;
                        Event::Tick(n)
                    },
                    |key, failure| Event::Failed(format!("{key}: {failure}")),
                );
            }
            jobs::Action::Sleep => cx.deadline(self.alarm, Event::Alarm),
            jobs::Action::Nothing => {}
        }
    }
}

fn new_machine() -> Jobs {
    Jobs::new(Done { pad: "x".repeat(64 * 1024), ..Done::default() })
}

fn durable(store: Arc<dyn CheckpointStore>, mode: &str) -> Durable {
    let (durability, every) = match mode {
        "before" => (Durability::BeforeAction, 1),
        "while" => (Durability::WhileAction, 3),
        _ => (Durability::OnStop, 2),
    };
    let every = NonZeroU64::new(every).unwrap_or(NonZeroU64::MIN);
    Durable::new(store, AGENT).durability(durability).snapshots(SnapshotPolicy::Every(every))
}

/// The child: runs the agent kept at `store` to its end.
fn child(store: &Path, ledger: &Path, mode: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        let store: Arc<dyn CheckpointStore> = Arc::new(SqliteStore::open(store)?);
        let alarm = std::env::var("KILL_CHILD_ALARM_MS").ok().and_then(|ms| ms.parse().ok());
        let effects = Ledger { path: ledger.to_path_buf(), alarm: alarm.map_or(ALARM, Duration::from_millis) };
        let (handle, _) = durable(store, mode).spawn(new_machine, effects, ExecutorConfig::new())?;
        if handle.state().await? == State::Idle {
            handle.send(Event::Begin).await?;
        }
        // A life told to pause stops cleanly after that long (writing what
        // `OnStop` kept), unless the agent finished first.
        let pause = std::env::var("KILL_CHILD_PAUSE_MS").ok().and_then(|ms| ms.parse().ok());
        match pause.map(Duration::from_millis) {
            None => drop(handle.wait_finished().await?),
            Some(pause) => {
                tokio::select! {
                    finished = handle.wait_finished() => drop(finished?),
                    () = tokio::time::sleep(pause) => drop(handle.shutdown().await?),
                }
            }
        }
        Ok(())
    })
}

fn spawn_child(store: &Path, ledger: &Path, mode: &str) -> Child {
    spawn_pausing(store, ledger, mode, None)
}

/// A child that stops cleanly after `pause`, if given.
fn spawn_pausing(store: &Path, ledger: &Path, mode: &str, pause: Option<Duration>) -> Child {
    spawn_with(store, ledger, mode, pause, ALARM)
}

/// A child that stops cleanly after `pause`, if given, and whose alarm
/// fires `alarm` after it is armed.
fn spawn_with(store: &Path, ledger: &Path, mode: &str, pause: Option<Duration>, alarm: Duration) -> Child {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = Command::new(exe);
    command
        .env("KILL_CHILD_STORE", store)
        .env("KILL_CHILD_LEDGER", ledger)
        .env("KILL_CHILD_MODE", mode)
        .env("KILL_CHILD_ALARM_MS", millis(alarm).to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    if let Some(pause) = pause {
        command.env("KILL_CHILD_PAUSE_MS", millis(pause).to_string());
    }
    command.spawn().expect("the child starts")
}

/// The steps the store at `path` holds, once it restores whole: a kill
/// must never leave a store that does not.
fn steps_restoring(path: &Path, context: &str) -> u64 {
    let store = SqliteStore::open(path).unwrap_or_else(|e| panic!("{context}: the store opens: {e}"));
    if store.agent(AGENT).expect("reads").is_none() {
        return 0;
    }
    let restored = restore::<Jobs, _>(&store, AGENT).unwrap_or_else(|e| panic!("{context}: the store restores: {e}"));
    restored.next_seq - 1
}

/// The jobs each process performed, by pid, in the order it performed them.
fn ledger(path: &Path) -> HashMap<u32, Vec<u32>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out: HashMap<u32, Vec<u32>> = HashMap::new();
    for line in text.lines() {
        let (pid, job) = line.split_once(' ').expect("a ledger line");
        out.entry(pid.parse().expect("a pid")).or_default().push(job.parse().expect("a job"));
    }
    out
}

/// The first job a process performs when the store holds `steps` steps:
/// step 1 (`Begin`) starts job 0 and step `s` starts job `s - 1`, so the
/// job in flight is the one the last step started.
fn first_job(steps: u64) -> u32 {
    u32::try_from(steps.saturating_sub(1)).expect("few steps")
}

/// One life's jobs: consecutive, from the job in flight in the store it
/// started from.
fn check_life(mode: &str, jobs: &[u32], steps_before: u64) {
    let Some(&first) = jobs.first() else { return };
    assert_eq!(first, first_job(steps_before), "{mode}: a life started from step {steps_before} performed {jobs:?}");
    let expected: Vec<u32> = (first..first + u32::try_from(jobs.len()).expect("few")).collect();
    assert_eq!(jobs, expected, "{mode}: a life performed jobs out of order");
}

/// The finished agent: ended, each result and the alarm taken once, its
/// log gapless, nothing left in flight.
fn check_finished(mode: &str, path: &Path) {
    let store = SqliteStore::open(path).expect("opens");
    let restored = restore::<Jobs, _>(&store, AGENT).expect("restores");
    assert_eq!(restored.machine.state(), &State::Finished, "{mode}");
    assert_eq!(restored.machine.context().jobs, (0..JOBS).collect::<Vec<_>>(), "{mode}");
    assert_eq!(restored.machine.context().alarms, 1, "{mode}");
    assert!(restored.in_flight.is_empty(), "{mode}: {:?}", restored.in_flight);
    let events = store.events(AGENT, 0, restored.next_seq - 1).expect("reads");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..restored.next_seq).collect::<Vec<_>>(), "{mode}: a gap or a duplicate");
    let logged: Vec<String> = events.iter().map(|e| e.event.clone()).collect();
    let mut expected = vec![serde_json::to_string(&Event::Begin).expect("encodes")];
    expected.extend((0..JOBS).map(|n| serde_json::to_string(&Event::Tick(n)).expect("encodes")));
    expected.push(serde_json::to_string(&Event::Alarm).expect("encodes"));
    assert_eq!(logged, expected, "{mode}: the log is not each event once");
}

/// Kills the agent under `mode` at seeded points until it finishes
/// (`OnStop`: `kills` times, then lets it finish), checking the store
/// after each kill.
fn killed_at_seeded_points(dir: &Path, mode: &str, kills: usize) {
    let mut rng = Seeded(SEED ^ mode.len() as u64);
    // A run never killed, and the start-up of a finished agent, set where
    // the kills land: from start-up (some in it and in the replay) to a
    // few of the run's steps after it, however fast this machine is.
    let calm = dir.join(format!("calm-{mode}.db"));
    let began = Instant::now();
    let mut first = spawn_child(&calm, &dir.join(format!("calm-{mode}.ledger")), mode);
    assert_eq!(finishes(&mut first, Duration::from_secs(60)), Some(true), "{mode}: a run never killed finishes");
    let whole = millis(began.elapsed());
    check_finished(mode, &calm);
    let began = Instant::now();
    let mut again = spawn_child(&calm, &dir.join(format!("calm-{mode}.ledger")), mode);
    assert_eq!(finishes(&mut again, Duration::from_secs(60)), Some(true), "{mode}: a finished agent resumes");
    let start_up = millis(began.elapsed());
    let (low, mut high) = (start_up / 2, start_up + (whole / 12).max(10));
    println!("{mode}: a run never killed takes {whole} ms, a start-up {start_up} ms");
    let deadline = Instant::now() + Duration::from_secs(300);
    let (mut killed, mut written) = (0, Vec::new());
    let distinct = |written: &[u64]| {
        let mut distinct = written.to_vec();
        distinct.dedup();
        distinct.len()
    };
    // Runs until enough kills landed at enough points: at least half of
    // `kills`, at more than a third as many points as kills (`OnStop`: one
    // run, whose killed lives write nothing).
    for round in 0.. {
        assert!(
            Instant::now() < deadline,
            "{mode}: {killed} kills at {} points in 5 minutes (seed {SEED:#x}): {written:?}",
            distinct(&written)
        );
        let (db, ledger) = (dir.join(format!("{mode}-{round}.db")), dir.join(format!("{mode}-{round}.ledger")));
        let window = (low, &mut high, start_up + whole);
        let (more, points) = killed_in_one_run(&db, &ledger, mode, kills, window, &mut rng, deadline);
        killed += more;
        written.extend(points);
        let enough = killed >= kills / 2;
        if mode == "on-stop" || (enough && distinct(&written) > killed / 3) {
            break;
        }
        if !enough {
            // The run ended before enough kills: its lives ran faster than
            // the calm run (measured while the machine was busier). The
            // next run's lives are half as long.
            high = (low + 1).max(high / 2);
        }
        println!("{mode}: {killed} kills after run {round}; another run on a store of its own");
    }
    println!("{mode}: {killed} kills; steps at each spawn: {written:?}");
}

/// One run of [`killed_at_seeded_points`] on the store `db`, up to `kills`
/// kills, each life killed after a seeded wait of `low` to `high`
/// milliseconds; the kills made and the steps written at each spawn.
/// Three kills in a row that find no more steps written make lives twice
/// as long (the machine got slower than the calm run measured), up to
/// `longest`, the calm run's length.
fn killed_in_one_run(
    db: &Path,
    ledger_path: &Path,
    mode: &str,
    kills: usize,
    (low, high, longest): (u64, &mut u64, u64),
    rng: &mut Seeded,
    deadline: Instant,
) -> (usize, Vec<u64>) {
    let mut lives = Vec::new();
    let (mut killed, mut stalled) = (0, 0);
    loop {
        assert!(Instant::now() < deadline, "{mode}: the agent never finished ({killed} kills, seed {SEED:#x})");
        let before = steps_restoring(db, mode);
        // Under `OnStop` every other life pauses (a clean stop writes its
        // steps), so that the next one resumes work in flight, and is killed.
        let pausing = mode == "on-stop" && killed < kills && lives.len() % 2 == 0;
        let wait = Duration::from_millis(rng.between(low, *high));
        let mut child = spawn_pausing(db, ledger_path, mode, pausing.then_some(wait));
        let pid = child.id();
        lives.push((pid, before));
        if pausing {
            assert_eq!(finishes(&mut child, Duration::from_secs(60)), Some(true), "{mode}: a pause stops the child");
            let after = steps_restoring(db, mode);
            assert!(after >= before, "{mode}: the store went back from {before} to {after}");
            if after == u64::from(JOBS) + 2 {
                break;
            }
            continue;
        }
        let limit = if killed < kills { wait } else { Duration::from_secs(60) };
        match wait_for(&mut child, limit) {
            Some(true) => break,
            Some(false) => panic!("{mode}: a child failed on its own after {killed} kills (seed {SEED:#x})"),
            None if killed >= kills => {
                kill(&mut child);
                panic!("{mode}: the last life did not finish in a minute: stuck");
            }
            None => {
                kill(&mut child);
                killed += 1;
                let after = steps_restoring(db, mode);
                assert!(after >= before, "{mode}: the store went back from {before} to {after}");
                stalled = if after == before && mode != "on-stop" { stalled + 1 } else { 0 };
                if stalled >= 3 && *high < longest {
                    *high = longest.min(*high * 2);
                    stalled = 0;
                    println!("{mode}: three lives wrote nothing: lives of up to {high} ms");
                }
                // Unless the kill came after the stop's write, at the end.
                if mode == "on-stop" && after != u64::from(JOBS) + 2 {
                    assert_eq!(after, before, "on-stop: a killed life wrote steps");
                }
            }
        }
    }
    let performed = ledger(ledger_path);
    for (pid, before) in &lives {
        check_life(mode, performed.get(pid).map_or(&[][..], Vec::as_slice), *before);
    }
    check_finished(mode, db);
    (killed, lives.iter().map(|(_, before)| *before).collect())
}

/// A kill once the alarm is armed and written; the next life starts after
/// its deadline passed: it fires once.
fn an_alarm_due_while_no_process_ran_fires_once(dir: &Path) {
    let db = dir.join("alarm.db");
    let ledger_path = dir.join("alarm.ledger");
    let mut child = spawn_with(&db, &ledger_path, "before", None, LONG_ALARM);
    let armed = u64::from(JOBS) + 1;
    let began = Instant::now();
    while steps_written(&db) < armed {
        if began.elapsed() >= Duration::from_secs(60) {
            kill(&mut child);
            panic!("the jobs never ended");
        }
        assert!(child.try_wait().expect("status").is_none(), "the child ended before its alarm");
        std::thread::sleep(Duration::from_millis(1));
    }
    kill(&mut child);
    assert_eq!(steps_restoring(&db, "alarm"), armed, "killed before the alarm fired");
    std::thread::sleep(LONG_ALARM * 2);
    let mut child = spawn_with(&db, &ledger_path, "before", None, LONG_ALARM);
    assert_eq!(finishes(&mut child, Duration::from_secs(60)), Some(true), "the resumed agent finishes");
    check_finished("alarm", &db);
}

fn millis(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

/// The steps written, without restoring (the writer may be mid-step).
fn steps_written(path: &Path) -> u64 {
    let Ok(store) = SqliteStore::open(path) else { return 0 };
    store.agent(AGENT).ok().flatten().map_or(0, |info| info.next_seq - 1)
}

/// Effects that only arm the alarm: jobs are left in flight.
struct Idle;

impl Effects<Jobs> for Idle {
    type Output = ();

    fn perform(&mut self, _: jobs::Action, _: &mut EffectContext<'_, Jobs, ()>) {}
}

/// Fails a test whose agent hangs, instead of stalling the suite.
async fn within<T>(future: impl std::future::Future<Output = T>) -> Result<T, tokio::time::error::Elapsed> {
    tokio::time::timeout(Duration::from_secs(20), future).await
}

/// Two agents spawned from one file at once (two connections, as two
/// processes have): both resume, the first step written wins, and the
/// other's step is refused as a conflict, which stops it; the log is
/// the winner's.
fn two_writers_of_one_agent_leave_one_log(dir: &Path) {
    let db = dir.join("two.db");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let first: Arc<dyn CheckpointStore> = Arc::new(SqliteStore::open(&db).expect("opens"));
        let (handle, start) =
            durable(Arc::clone(&first), "before").spawn(new_machine, Idle, ExecutorConfig::new()).expect("new");
        assert_eq!(start, Start::New);
        handle.send(Event::Begin).await.expect("sent");
        within(handle.wait_idle()).await.expect("in time").expect("idle");
        handle.shutdown().await.expect("stops");

        let second: Arc<dyn CheckpointStore> = Arc::new(SqliteStore::open(&db).expect("opens"));
        let (a, start_a) =
            durable(Arc::clone(&first), "before").spawn(new_machine, Idle, ExecutorConfig::new()).expect("a");
        let (b, start_b) =
            durable(Arc::clone(&second), "before").spawn(new_machine, Idle, ExecutorConfig::new()).expect("b");
        assert_eq!((start_a, start_b), (Start::Resumed { last: 1 }, Start::Resumed { last: 1 }));
        a.send(Event::Tick(0)).await.expect("sent");
        within(a.wait_idle()).await.expect("in time").expect("idle");
        b.send(Event::Tick(0)).await.expect("sent");
        let refused = within(b.wait_finished()).await.expect("in time").expect_err("b's step is refused");
        let RequestError::Failed(error) = refused else { panic!("not a failure: {refused:?}") };
        let WorkerError::Store(inside) = &*error else { panic!("not a store failure: {error:?}") };
        assert!(
            matches!(
                inside.error().downcast_ref::<StoreError>(),
                Some(StoreError::Conflict { expected: 3, found: 2, .. })
            ),
            "{inside:?}"
        );
        a.send(Event::Tick(1)).await.expect("a still runs");
        within(a.wait_idle()).await.expect("in time").expect("idle");
        a.shutdown().await.expect("stops");
    });
    let store = SqliteStore::open(&db).expect("opens");
    let restored = restore::<Jobs, _>(&store, AGENT).expect("restores");
    assert_eq!(restored.next_seq, 4);
    assert_eq!(restored.machine.context().jobs, [0, 1]);
}

/// A store file with bytes flipped, or cut short, at seeded places:
/// opening, restoring and spawning the agent from it gives the agent as
/// it was or a typed error, and never panics. (SQLite keeps no checksum
/// of its pages, so damage that still decodes, a byte of an event's text,
/// is read as a store holding other steps: those are counted and printed,
/// not refused.)
fn a_damaged_file_never_panics(dir: &Path) {
    let db = dir.join("damaged.db");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let small = || Jobs::new(Done::default());
    runtime.block_on(async {
        let store: Arc<dyn CheckpointStore> = Arc::new(SqliteStore::open(&db).expect("opens"));
        let (handle, _) = durable(store, "before").spawn(small, Idle, ExecutorConfig::new()).expect("new");
        handle.send(Event::Begin).await.expect("sent");
        for n in 0..6 {
            handle.send(Event::Tick(n)).await.expect("sent");
        }
        handle.wait_idle().await.expect("idle");
        handle.shutdown().await.expect("stops");
    });
    let pristine = std::fs::read(&db).expect("the file reads");
    let mut rng = Seeded(SEED);
    let (mut same, mut refused, mut changed) = (0, 0, 0);
    for trial in 0..340 {
        let mut bytes = pristine.clone();
        let at = usize::try_from(rng.next() % pristine.len() as u64).expect("in range");
        if trial < 300 {
            bytes[at] ^= u8::try_from(rng.between(1, 255)).expect("a byte");
        } else {
            // Truncated there.
            bytes.truncate(at);
        }
        let copy = dir.join(format!("damaged-{trial}.db"));
        std::fs::write(&copy, &bytes).expect("writes");
        let outcome = std::panic::catch_unwind(|| {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            runtime.block_on(async {
                let store: Arc<dyn CheckpointStore> = Arc::new(SqliteStore::open(&copy)?);
                let (handle, _) = durable(store, "before").spawn(small, Idle, ExecutorConfig::new())?;
                let found = tokio::time::timeout(
                    Duration::from_secs(20),
                    handle.inspect(|m| (m.state().clone(), m.context().clone())),
                )
                .await
                .expect("the resumed agent answers");
                let _ = handle.shutdown().await;
                Ok::<_, StoreError>(found.ok())
            })
        });
        let _ = std::fs::remove_file(&copy);
        match outcome {
            Err(_) => panic!("a flip at byte {at} (trial {trial}) panicked"),
            Ok(Err(_)) => refused += 1,
            Ok(Ok(Some((State::Working { next: 6 }, done)))) if done.jobs == [0, 1, 2, 3, 4, 5] => same += 1,
            Ok(Ok(found)) => {
                changed += 1;
                println!("a flip at byte {at} was read as {found:?}");
            }
        }
    }
    println!("damaged files: {same} read as written, {refused} refused, {changed} read otherwise");
}

/// A test of this binary: its name, and its body given a fresh temp dir.
type Test<'a> = &'a dyn Fn(&Path);

fn main() {
    if let Some(store) = std::env::var_os("KILL_CHILD_STORE") {
        let ledger = std::env::var_os("KILL_CHILD_LEDGER").expect("a ledger path");
        let mode = std::env::var("KILL_CHILD_MODE").expect("a mode");
        if let Err(error) = child(Path::new(&store), Path::new(&ledger), &mode) {
            eprintln!("child failed: {error}");
            std::process::exit(1);
        }
        return;
    }
    let tests: [(&str, Test<'_>); 6] = [
        ("before_action_killed_at_seeded_points", &|dir| killed_at_seeded_points(dir, "before", 20)),
        ("while_action_killed_at_seeded_points", &|dir| killed_at_seeded_points(dir, "while", 20)),
        ("on_stop_killed_at_seeded_points", &|dir| killed_at_seeded_points(dir, "on-stop", 10)),
        ("an_alarm_due_while_no_process_ran_fires_once", &an_alarm_due_while_no_process_ran_fires_once),
        ("two_writers_of_one_agent_leave_one_log", &two_writers_of_one_agent_leave_one_log),
        ("a_damaged_file_never_panics", &a_damaged_file_never_panics),
    ];
    // `cargo test -- --list`, and a name filter.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    if std::env::args().any(|a| a == "--list") {
        for (name, _) in &tests {
            println!("{name}: test");
        }
        return;
    }
    for (name, test) in tests {
        if !args.is_empty() && !args.iter().any(|a| name.contains(a.as_str())) {
            continue;
        }
        let dir = tempfile::tempdir().expect("a temp dir");
        test(dir.path());
        println!("test {name} ... ok");
    }
}
