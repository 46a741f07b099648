//! What a fleet on Postgres does on this machine: steps per second and
//! the wait of each step for its checkpoint (p50, p99) with 1, 2 and 4
//! worker processes, beside the same agents in one process on SQLite; and
//! the time from a worker's SIGKILL to its agents running again on
//! another. Not a test: a run that prints one table (see
//! docs/performance.md, "Fleet").
//!
//! The agents are the fleet demo's (`fleet_agent`): each is given its task
//! through the inbox, then runs 5 turns of 4 tool calls (26 steps), the
//! model answering in 2 ms and each tool taking 1 ms, every step written
//! before its work starts (`Durability::BeforeAction`). No approvals:
//! nothing waits on the outside world. A step's checkpoint wait is
//! measured inside the agent ([`Probe`]): from the action performed to its
//! task starting, which is when the step's write returned. Alongside, the
//! CPU time of the workers and of the Postgres server, and the commits
//! Postgres counted, tell which one bounds the run.
//!
//! Run: `AGENT_FSM_PG_URL=... cargo bench --bench fleet`. Without the
//! variable it says it is skipped.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use agent_fsm::fleet::{Fleet, FleetConfig};
use agent_fsm::runtime::ExecutorConfig;
use agent_fsm::store::{CheckpointStore, Durable, SqliteStore};
use agent_fsm_examples::fleet_agent::audit::connect;
use agent_fsm_examples::fleet_agent::cluster::{
    ChildSpec, Processes, Role, URL_ENV, WorkerOutcome, agent_ids, create_agents, drop_schema, fresh_schema, progress,
    read_outcome, run_if_child, wait_until, workers,
};
use agent_fsm_examples::fleet_agent::drive::task_for;
use agent_fsm_examples::fleet_agent::{FleetAgent, FleetEffects, Plan, Probe, ScriptedModel};

/// Agents per run.
const AGENTS: usize = 400;
/// 26 steps an agent, no approvals.
const PLAN: Plan = Plan { turns: 5, calls_per_turn: 4, approve_every: 0 };
/// Each tool call's time.
const TOOL_MS: u64 = 1;
/// The leases of the throughput runs (no worker dies there).
const LEASE_MS: u64 = 5000;
/// The lease of the recovery run.
const RECOVERY_LEASE_MS: u64 = 2000;

fn main() {
    if let Some(ran) = run_if_child() {
        if let Err(error) = ran {
            eprintln!("child failed: {error}");
            std::process::exit(1);
        }
        return;
    }
    // `cargo bench --no-run` builds it; `cargo test --benches` runs it with
    // `--bench` absent: only a real bench run measures.
    if !std::env::args().any(|a| a == "--bench") {
        println!("bench fleet: run with `cargo bench --bench fleet`");
        return;
    }
    let Ok(url) = std::env::var(URL_ENV) else {
        println!("bench fleet: skipped ({URL_ENV} is not set; scripts/postgres.sh starts a server)");
        return;
    };
    let total = PLAN.steps() * AGENTS as u64;
    println!("{AGENTS} agents x {} steps = {total} steps per run; tools {TOOL_MS} ms, model 2 ms", PLAN.steps());
    let mut db = connect(&url, "public").expect("the server");
    for setting in ["fsync", "synchronous_commit", "wal_sync_method", "max_connections"] {
        let value: String = db.query_one(&format!("SHOW {setting}"), &[]).expect("a setting").get(0);
        println!("postgres {setting} = {value}");
    }
    println!("one connection, one row per commit: {:.0} commits/s", commit_rate(&mut db));
    println!();
    println!(
        "| run | steps/s | checkpoint wait p50 | p99 | agents' CPU / step | postgres CPU / step \
         | both, of 2 cores | machine busy | commits/s |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    sqlite_run(total);
    for workers in [1, 2, 4] {
        fleet_run(&url, workers, total, "");
    }
    // The same without waiting for the WAL flush at each commit (a
    // session setting of the workers' connections): what the commits'
    // fsync costs.
    let no_flush = format!("{url}{}options=-c%20synchronous_commit%3Doff", if url.contains('?') { '&' } else { '?' });
    for workers in [1, 4] {
        fleet_run(&no_flush, workers, total, ", synchronous_commit=off");
    }
    println!();
    recovery_run(&url);
}

/// Commits per second of one connection inserting one row per commit:
/// the server's bare commit (WAL flush) rate.
fn commit_rate(db: &mut postgres::Client) -> f64 {
    db.batch_execute("CREATE TEMP TABLE bench_commits (n int)").expect("a table");
    let n = 300;
    let start = Instant::now();
    for i in 0..n {
        db.execute("INSERT INTO bench_commits VALUES ($1)", &[&i]).expect("an insert");
    }
    f64::from(n) / start.elapsed().as_secs_f64()
}

/// CPU time in seconds: the machine's busy and total jiffies (from
/// `/proc/stat`), and the CPU time of the given processes and of every
/// `postgres` process.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    busy: f64,
    all: f64,
    ours: f64,
    postgres: f64,
}

/// Clock ticks a second in `/proc` (Linux's `USER_HZ`).
const TICKS: f64 = 100.0;

fn cpu(pids: &[u32]) -> Cpu {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<f64> =
        stat.lines().next().unwrap_or_default().split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let all: f64 = fields.iter().sum();
    let idle = fields.get(3).copied().unwrap_or(0.0) + fields.get(4).copied().unwrap_or(0.0);
    let process = |pid: &str| -> Option<(String, f64)> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (name, rest) = text.split_once(") ")?;
        let name = name.split_once('(')?.1.to_owned();
        let f: Vec<&str> = rest.split_whitespace().collect();
        let used = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
        Some((name, used / TICKS))
    };
    let mut cpu = Cpu { busy: (all - idle) / TICKS, all: all / TICKS, ..Cpu::default() };
    cpu.ours = pids.iter().filter_map(|pid| process(&pid.to_string())).map(|(_, used)| used).sum();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            if let Some((name, used)) = process(&entry.file_name().to_string_lossy())
                && name == "postgres"
            {
                cpu.postgres += used;
            }
        }
    }
    cpu
}

fn commits(db: &mut postgres::Client) -> i64 {
    db.query_one("SELECT sum(xact_commit)::bigint FROM pg_stat_database", &[]).expect("stats").get(0)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

/// One line of the table: `ours` is the CPU time of this run's own
/// processes (the workers, or this one), beside the server's.
#[allow(clippy::too_many_arguments)]
fn row(
    run: &str,
    total: u64,
    elapsed: Duration,
    mut waits: Vec<u64>,
    before: Cpu,
    after: Cpu,
    ours: f64,
    commits: Option<f64>,
) {
    waits.sort_unstable();
    let secs = elapsed.as_secs_f64();
    let postgres = after.postgres - before.postgres;
    let per_step = |cpu: f64| 1000.0 * cpu / total as f64;
    println!(
        "| {run} | {:.0} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.0}% | {:.0}% | {} |",
        total as f64 / secs,
        percentile(&waits, 0.5),
        percentile(&waits, 0.99),
        per_step(ours),
        per_step(postgres),
        100.0 * (ours + postgres) / (2.0 * secs),
        100.0 * (after.busy - before.busy) / (after.all - before.all).max(f64::MIN_POSITIVE),
        commits.map_or("-".to_owned(), |c| format!("{:.0}", c / secs)),
    );
}

/// The same agents in this process, each a `Durable` agent on one SQLite
/// file.
fn sqlite_run(total: u64) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store: Arc<dyn CheckpointStore> = Arc::new(SqliteStore::open(dir.path().join("agents.db")).expect("sqlite"));
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
    let probe = Probe::new();
    let effects = FleetEffects::new(ScriptedModel { delay: Duration::from_millis(2) }, Duration::from_millis(TOOL_MS))
        .with_probe(probe.clone());
    let me = std::process::id();
    let before = cpu(&[me]);
    let start = Instant::now();
    runtime.block_on(async {
        let mut handles = Vec::new();
        for id in agent_ids(AGENTS) {
            let (handle, _) = Durable::new(Arc::clone(&store), id.clone())
                .spawn(|| FleetAgent::new(PLAN), effects.clone(), ExecutorConfig::new())
                .expect("spawns");
            handle.send(task_for(&id)).await.expect("sends");
            handles.push(handle);
        }
        for handle in handles {
            handle.wait_finished().await.expect("finishes");
        }
    });
    let elapsed = start.elapsed();
    let after = cpu(&[me]);
    row("1 process, SQLite", total, elapsed, us(probe.take()), before, after, after.ours - before.ours, None);
}

fn us(waits: Vec<Duration>) -> Vec<u64> {
    waits.iter().map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)).collect()
}

/// A fleet of `n` worker processes: the agents created and given their
/// tasks first, then the workers started; timed from their start to the
/// last agent done.
fn fleet_run(url: &str, n: usize, total: u64, note: &str) {
    let schema = fresh_schema("fleet_bench");
    let dir = tempfile::tempdir().expect("a temp dir");
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
    let fleet = runtime.block_on(Fleet::connect(FleetConfig::new(url).schema(schema.clone()))).expect("connects");
    let mut db = connect(url, &schema).expect("connects");
    let ids = agent_ids(AGENTS);
    runtime.block_on(async {
        create_agents(&fleet, &ids, PLAN).await.expect("creates");
        for id in &ids {
            fleet.send(id, &task_for(id)).await.expect("sends");
        }
    });
    let mut procs = Processes::new();
    procs.watchdog(Duration::from_secs(600), || std::process::exit(1));
    let names: Vec<String> = (1..=n).map(|i| format!("w{i}")).collect();
    let capacity = u32::try_from(AGENTS.div_ceil(n)).unwrap_or(u32::MAX);
    let before = cpu(&[]);
    let commits_before = commits(&mut db);
    let start = Instant::now();
    let mut pids = Vec::new();
    for name in &names {
        let role = Role::Worker { name: name.clone(), capacity, lease_ms: LEASE_MS, poll_ms: 1000, tool_ms: TOOL_MS };
        let out = Some(dir.path().join(format!("{name}.json")));
        pids.push(
            procs
                .spawn(name, &ChildSpec { url: url.to_owned(), schema: schema.clone(), out, role }, &[])
                .expect("spawns"),
        );
    }
    let done = wait_until(Duration::from_secs(300), || progress(&mut db).map(|(_, done)| done >= AGENTS as u64));
    assert!(done.expect("reads"), "the agents finished");
    let elapsed = start.elapsed();
    let after = cpu(&pids);
    let commits = (commits(&mut db) - commits_before) as f64;
    let mut waits = Vec::new();
    for name in &names {
        procs.close_stdin(name);
        let _ = procs.wait(name, Duration::from_secs(30));
        let outcome: WorkerOutcome = read_outcome(&dir.path().join(format!("{name}.json"))).expect("an outcome");
        waits.extend(outcome.waits_us);
    }
    let label = format!("{n} worker process{}, Postgres{note}", if n == 1 { "" } else { "es" });
    row(&label, total, elapsed, waits, before, after, after.ours, Some(commits));
    drop(procs);
    drop_schema(&mut db, &schema).expect("drops");
}

/// Two workers; one killed with SIGKILL a third of the way: for each agent
/// it held, the time from the kill to the agent's next step, written by
/// the other.
fn recovery_run(url: &str) {
    let schema = fresh_schema("fleet_bench_recovery");
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
    let fleet = runtime.block_on(Fleet::connect(FleetConfig::new(url).schema(schema.clone()))).expect("connects");
    let mut db = connect(url, &schema).expect("connects");
    let mut procs = Processes::new();
    procs.watchdog(Duration::from_secs(600), || std::process::exit(1));
    for name in ["w1", "w2"] {
        let role = Role::Worker {
            name: name.to_owned(),
            capacity: 1000,
            lease_ms: RECOVERY_LEASE_MS,
            poll_ms: 1000,
            tool_ms: 20,
        };
        procs
            .spawn(name, &ChildSpec { url: url.to_owned(), schema: schema.clone(), out: None, role }, &[])
            .expect("spawns");
    }
    assert!(wait_until(Duration::from_secs(30), || workers(&mut db).map(|n| n == 2)).expect("reads"));
    let ids = agent_ids(200);
    runtime.block_on(async {
        create_agents(&fleet, &ids, PLAN).await.expect("creates");
        for id in &ids {
            fleet.send(id, &task_for(id)).await.expect("sends");
        }
    });
    let total = PLAN.steps() * ids.len() as u64;
    assert!(
        wait_until(Duration::from_secs(120), || progress(&mut db).map(|(events, _)| events >= total / 3))
            .expect("reads")
    );
    let held: Vec<String> = db
        .query("SELECT agent FROM leases WHERE worker = 'w1' AND NOT done", &[])
        .expect("reads")
        .iter()
        .map(|r| r.get(0))
        .collect();
    let killed = SystemTime::now();
    procs.kill("w1").expect("SIGKILL");
    assert!(
        wait_until(Duration::from_secs(120), || progress(&mut db).map(|(_, done)| done >= ids.len() as u64))
            .expect("reads")
    );
    let mut back: Vec<f64> = db
        .query(
            "SELECT extract(epoch FROM min(at) - $2::timestamptz)::float8 FROM events
             WHERE agent = ANY($1) AND at > $2 GROUP BY agent",
            &[&held, &killed],
        )
        .expect("reads")
        .iter()
        .map(|r| r.get(0))
        .collect();
    back.sort_by(f64::total_cmp);
    let at =
        |p: f64| back.get(((back.len().saturating_sub(1)) as f64 * p).round() as usize).copied().unwrap_or(f64::NAN);
    println!(
        "worker death to its agents running again ({} agents it held, lease {} ms, 2 workers): \
         first {:.2} s, median {:.2} s, last {:.2} s",
        back.len(),
        RECOVERY_LEASE_MS,
        at(0.0),
        at(0.5),
        at(1.0)
    );
    drop(procs);
    drop_schema(&mut db, &schema).expect("drops");
}
