//! What a checkpoint costs per step: appends per second with no store
//! (`handle_event` alone), the in-memory store, SQLite with
//! `synchronous=FULL` and `NORMAL` and, when `AGENT_FSM_PG_URL` names a
//! server (feature `postgres`), Postgres over loopback with
//! `synchronous_commit` on and off; the latency of one
//! append (p50, p99) in each store; and the bytes a step adds to the store
//! as a conversation grows.
//!
//! The machine is a chat agent whose context keeps every message (about
//! 600 bytes a turn): a turn is two steps, a prompt that starts a keyed
//! call and its deadline timer, and the reply that finishes both. Each
//! store step serializes the event, writes it with its effect rows and,
//! under the default `SnapshotPolicy::Proportional`, now and then a
//! snapshot. Agents are replaced every 400 steps so that the timing does
//! not drift with the conversation's length.
//!
//! The bytes per step are printed before the timings: the growth of the
//! in-memory store's text and of the SQLite file (its WAL checkpointed,
//! by closing it) between two lengths of one conversation, beside the
//! size of one snapshot at that length, which a store that rewrote the
//! machine every step would pay per step.
//!
//! The latencies are printed before the timings too: 2,000 steps through
//! each store, each timed alone, after 200 to warm up.
//!
//! Run: `cargo bench -p agent-fsm --features sqlite,postgres --bench store -- --quick`
//! (with `export AGENT_FSM_PG_URL=$(scripts/postgres.sh)` for Postgres).
//! Under callgrind, `STORE_CALLGRIND=write:N` or `read:N` runs only `N`
//! SQLite steps (and their restores): see `callgrind_run`.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use agent_fsm::store::{
    CheckpointStore, Effect, EffectKind, Journal, MemoryStore, SqliteConfig, SqliteStore, Synchronous,
};
use criterion::{Criterion, Throughput};
use serde::{Deserialize, Serialize};

/// A conversation: what the context grows with.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Convo {
    /// Every prompt and reply.
    pub messages: Vec<String>,
    /// Calls made.
    pub calls: u32,
}

#[allow(unreachable_pub, missing_docs)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Chat)]
mod chat {
    use super::Convo;

    #[context]
    pub type Context = Convo;

    #[states]
    #[derive(Debug, Clone)]
    pub enum State {
        #[initial]
        Idle,
        Calling {
            call: u32,
        },
    }

    #[events]
    #[derive(Debug, Clone)]
    pub enum Event {
        Prompt(String),
        Reply(u32, String),
    }

    #[actions]
    #[derive(Debug, Clone, Default)]
    pub enum Action {
        #[default]
        Nothing,
        Call(u32),
        Respond(String),
    }

    transitions! {
        Idle + Prompt(text) => { ctx.messages.push(text); ctx.calls += 1; } Calling { call: ctx.calls } / Call(ctx.calls),
        Calling { call } + Reply(c, text) [*c == *call] => { ctx.messages.push(text.clone()); } Idle / Respond(text),
    }
}

use chat::{Action, Chat, Event};

const PROMPT: &str = "Please look at src/main.rs and tell me why the build fails on the second run; \
                      the error mentions a missing feature flag and a lock file.";
const REPLY: &str = "The lock file pins an older version of the crate, which does not have the feature \
                     the manifest asks for. Run `cargo update -p the-crate`, or remove the feature from \
                     the manifest; the second run then reuses the updated lock file and builds. I also \
                     noticed that the build script reads an environment variable it never declares.";

/// The event of step `i` (0-based) of a conversation.
fn event(i: u64, machine: &Chat) -> Event {
    if i.is_multiple_of(2) {
        Event::Prompt(format!("{i}: {PROMPT}"))
    } else {
        Event::Reply(machine.context().calls, format!("{i}: {REPLY}"))
    }
}

/// One step through the journal, as the executor will take it.
fn step(store: &dyn CheckpointStore, journal: &mut Journal<Chat>, machine: &mut Chat, event: Event) {
    let mut pending = journal.begin(&event).expect("encode");
    if let Event::Reply(call, _) = &event {
        pending.finish(EffectKind::Task, format!("call-{call}"));
        pending.finish(EffectKind::Timer, "deadline");
    }
    if let Action::Call(n) = machine.handle_event(event) {
        pending.start(Effect::task(format!("call-{n}")));
        let deadline = SystemTime::now() + Duration::from_secs(60);
        pending.start(Effect::timer("deadline", deadline, "{\"event\":\"timeout\"}".to_owned()));
    }
    journal.commit(store, pending, machine).expect("commit");
}

/// Steps per agent before a fresh one.
const ROTATE: u64 = 400;

/// `iters` steps through `store`, a new agent every [`ROTATE`] steps.
fn run(store: &dyn CheckpointStore, iters: u64, round: &mut u64) -> Duration {
    let start = Instant::now();
    let mut agent = None;
    for i in 0..iters {
        if i % ROTATE == 0 {
            *round += 1;
            let machine = Chat::new(Convo::default());
            let journal = Journal::create(store, &format!("agent-{round}"), &machine).expect("create");
            agent = Some((machine, journal));
        }
        let Some((machine, journal)) = agent.as_mut() else { unreachable!() };
        let event = event(i % ROTATE, machine);
        step(store, journal, machine, event);
    }
    start.elapsed()
}

fn sqlite(dir: &Path, name: &str, synchronous: Synchronous) -> SqliteStore {
    SqliteStore::open_with(dir.join(name), SqliteConfig::default().synchronous(synchronous)).expect("open")
}

/// The Postgres store the bench runs on, in a schema of its own (dropped
/// by [`drop_pg`]), or `None`, said in one line, without a server.
#[cfg(feature = "postgres")]
fn postgres(synchronous_commit: bool) -> Option<agent_fsm::store::PgStore> {
    let Some(url) = std::env::var("AGENT_FSM_PG_URL").ok().filter(|u| !u.is_empty()) else {
        eprintln!("postgres: skipped (AGENT_FSM_PG_URL is not set; scripts/postgres.sh starts a server)");
        return None;
    };
    let config =
        agent_fsm::store::PgConfig::new(url).schema(pg_schema()).pool_size(1).synchronous_commit(synchronous_commit);
    Some(agent_fsm::store::PgStore::connect_with(config).expect("the Postgres server connects"))
}

#[cfg(feature = "postgres")]
fn pg_schema() -> String {
    format!("bench_store_{}", std::process::id())
}

/// Drops the bench's schema.
#[cfg(feature = "postgres")]
fn drop_pg() {
    if let Ok(url) = std::env::var("AGENT_FSM_PG_URL")
        && let Ok(mut client) = postgres::Client::connect(&url, postgres::NoTls)
    {
        let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", pg_schema()));
    }
}

/// Appends per second and the latency of one append (p50, p99) in each
/// store, printed: `STEPS` steps of one conversation per store, each timed
/// alone, after `WARM` untimed ones.
fn latencies(stores: &[(&str, &dyn CheckpointStore)]) {
    const WARM: u64 = 200;
    const STEPS: u64 = 2_000;
    eprintln!("store          appends/s   p50 µs   p99 µs");
    for (n, (name, store)) in stores.iter().enumerate() {
        let mut times = Vec::with_capacity(STEPS as usize);
        let mut agent = None;
        for i in 0..WARM + STEPS {
            if i % ROTATE == 0 {
                let machine = Chat::new(Convo::default());
                let id = format!("latency-{n}-{i}");
                agent = Some((Journal::create(*store, &id, &machine).expect("create"), machine));
            }
            let Some((journal, machine)) = agent.as_mut() else { unreachable!() };
            let event = event(i % ROTATE, machine);
            let start = Instant::now();
            step(*store, journal, machine, event);
            if i >= WARM {
                times.push(start.elapsed());
            }
        }
        let total: Duration = times.iter().sum();
        times.sort_unstable();
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
        eprintln!("{name:<14} {:>9.0}  {:>7.0}  {:>7.0}", times.len() as f64 / total.as_secs_f64(), at(0.5), at(0.99));
    }
}

/// Criterion's appends per second in each store (`pg`: the Postgres
/// stores, when there is a server).
fn appends(c: &mut Criterion, pg: &[(&str, &dyn CheckpointStore)]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("append");
    group.throughput(Throughput::Elements(1));
    group.bench_function("no_store", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            let mut machine = Chat::new(Convo::default());
            for i in 0..iters {
                if i % ROTATE == 0 {
                    machine = Chat::new(Convo::default());
                }
                let event = event(i % ROTATE, &machine);
                black_box(machine.handle_event(event));
            }
            start.elapsed()
        });
    });
    let memory = MemoryStore::new();
    let mut round = 0;
    group.bench_function("memory", |b| b.iter_custom(|iters| run(&memory, iters, &mut round)));
    let normal = sqlite(dir.path(), "normal.db", Synchronous::Normal);
    group.bench_function("sqlite_normal", |b| b.iter_custom(|iters| run(&normal, iters, &mut round)));
    let full = sqlite(dir.path(), "full.db", Synchronous::Full);
    group.bench_function("sqlite_full", |b| b.iter_custom(|iters| run(&full, iters, &mut round)));
    for (name, pg) in pg {
        group.bench_function(*name, |b| b.iter_custom(|iters| run(*pg, iters, &mut round)));
    }
    group.finish();
}

/// Bytes a step adds as one conversation grows, printed.
fn bytes_per_step() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lengths = [0_u64, 200, 1_000, 2_000, 4_000];
    let memory = MemoryStore::new();
    let mut machine = Chat::new(Convo::default());
    let mut journal = Journal::create(&memory, "a", &machine).expect("create");
    let mut done = 0;
    let mut previous: Option<(u64, usize, u64)> = None;
    eprintln!("steps      memory B/step  sqlite B/step  one snapshot B  event B");
    for &length in &lengths {
        while done < length {
            let event = event(done, &machine);
            step(&memory, &mut journal, &mut machine, event);
            done += 1;
        }
        // The same conversation in a SQLite file of its own, closed (which
        // checkpoints the WAL into the file) before it is measured.
        let path = dir.path().join(format!("len-{length}.db"));
        {
            let store =
                SqliteStore::open_with(&path, SqliteConfig::default().synchronous(Synchronous::Normal)).expect("open");
            let mut m = Chat::new(Convo::default());
            let mut j = Journal::create(&store, "a", &m).expect("create");
            for i in 0..length {
                let event = event(i, &m);
                step(&store, &mut j, &mut m, event);
            }
        }
        let file = std::fs::metadata(&path).map(|m| m.len()).expect("size");
        let snapshot = agent_fsm::snapshot::to_json(&machine).expect("snapshot").len();
        let event_len = serde_json::to_string(&event(length, &machine)).expect("event").len();
        if let Some((from, mem_before, file_before)) = previous {
            let steps = (length - from) as f64;
            eprintln!(
                "{from:>5}-{length:<5} {:>13.0}  {:>13.0}  {snapshot:>14}  {event_len:>7}",
                (memory.bytes() - mem_before) as f64 / steps,
                (file - file_before) as f64 / steps,
            );
        }
        previous = Some((length, memory.bytes(), file));
    }
}

/// `STORE_CALLGRIND=write:N` or `read:N`: `N` steps (a multiple of
/// [`ROTATE`]) through SQLite (`NORMAL`) in a temporary directory, then,
/// for `read`, every agent restored, and nothing else: run under
/// callgrind twice, the difference of two counts is what those steps (or
/// their restores) cost, process start and set-up cancelled out.
fn callgrind_run(spec: &str) {
    let (mode, steps) = spec.split_once(':').expect("write:N or read:N");
    let steps: u64 = steps.parse().expect("a count of steps");
    let dir = tempfile::tempdir().expect("tempdir");
    let store = sqlite(dir.path(), "callgrind.db", Synchronous::Normal);
    let mut round = 0;
    run(&store, steps, &mut round);
    if mode == "read" {
        for n in 1..=round {
            let restored = agent_fsm::store::restore::<Chat, _>(&store, &format!("agent-{n}")).expect("restores");
            black_box(restored);
        }
    }
}

fn main() {
    if let Ok(spec) = std::env::var("STORE_CALLGRIND") {
        callgrind_run(&spec);
        return;
    }
    bytes_per_step();
    let dir = tempfile::tempdir().expect("tempdir");
    let normal = sqlite(dir.path(), "normal.db", Synchronous::Normal);
    let full = sqlite(dir.path(), "full.db", Synchronous::Full);
    let memory = MemoryStore::new();
    #[cfg(feature = "postgres")]
    let pg = [("postgres", postgres(true)), ("postgres_async", postgres(false))];
    #[cfg(feature = "postgres")]
    let pg: Vec<(&str, &dyn CheckpointStore)> =
        pg.iter().filter_map(|(name, pg)| Some((*name, pg.as_ref()? as &dyn CheckpointStore))).collect();
    #[cfg(not(feature = "postgres"))]
    let pg: Vec<(&str, &dyn CheckpointStore)> = Vec::new();
    let mut stores: Vec<(&str, &dyn CheckpointStore)> =
        vec![("memory", &memory), ("sqlite_normal", &normal), ("sqlite_full", &full)];
    stores.extend(pg.iter().copied());
    latencies(&stores);
    let mut c = Criterion::default().configure_from_args();
    appends(&mut c, &pg);
    c.final_summary();
    #[cfg(feature = "postgres")]
    drop_pg();
}
