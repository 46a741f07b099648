//! A fleet of three worker processes running 240 demo agents on Postgres
//! while a fourth process gives them their tasks and approves their tool
//! calls through the inbox: one worker is killed with SIGKILL, another is
//! paused (SIGSTOP) past its lease and then continued. Every agent ends
//! `Done`; from the store, every log is gapless with exactly the steps
//! its plan takes; no epoch of an agent was written by two workers; every
//! event the fourth process sent was applied once, by the step it names,
//! and each agent's ledger holds the approvals sent to it once each.
//!
//! Its own `main`: the test binary is also the workers and the driver (run
//! with `AGENT_FSM_FLEET_CHILD` set). Without `AGENT_FSM_PG_URL` it says
//! it is skipped and passes.

use std::time::{Duration, Instant};

use agent_fsm::fleet::{Fleet, FleetConfig};
use agent_fsm_examples::fleet_agent::Plan;
use agent_fsm_examples::fleet_agent::audit::{audit, connect};
use agent_fsm_examples::fleet_agent::cluster::{
    ChildSpec, Processes, Role, URL_ENV, WorkerOutcome, agent_ids, create_agents, drop_schema, fresh_schema, holding,
    progress, read_outcome, run_if_child, wait_until, workers,
};
use agent_fsm_examples::fleet_agent::drive::Driven;

const NAME: &str = "three_workers_one_killed_one_paused_every_event_applied_once";
/// Agents in the run.
const AGENTS: usize = 240;
/// Every agent: 4 turns of 3 calls, every 4th call approved: 20 steps.
const PLAN: Plan = Plan { turns: 4, calls_per_turn: 3, approve_every: 4 };
/// The workers' leases: short, so that the run waits little for a dead
/// worker's agents.
const LEASE: Duration = Duration::from_millis(1500);
/// The whole run's limit, past which every child is killed and it fails.
const LIMIT: Duration = Duration::from_secs(150);

fn main() {
    if let Some(ran) = run_if_child() {
        if let Err(error) = ran {
            eprintln!("child failed: {error}");
            std::process::exit(1);
        }
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        println!("{NAME}: test");
        return;
    }
    let Ok(url) = std::env::var(URL_ENV) else {
        println!("test {NAME}: skipped ({URL_ENV} is not set; scripts/postgres.sh starts a server)");
        return;
    };
    run(&url);
    println!("test {NAME} ... ok");
}

fn run(url: &str) {
    let began = Instant::now();
    let schema = fresh_schema("fleet_chaos");
    let dir = tempfile::tempdir().expect("a temp dir");
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
    let fleet = runtime
        .block_on(Fleet::connect(FleetConfig::new(url).schema(schema.clone()).lease(LEASE)))
        .expect("the fleet connects");
    let mut db = connect(url, &schema).expect("the store connects");

    let mut procs = Processes::new();
    procs.watchdog(LIMIT, || {
        eprintln!("test {NAME}: no end after {LIMIT:?}; every child killed");
        std::process::exit(1);
    });
    let names = ["w1", "w2", "w3"];
    for name in names {
        let spec = ChildSpec {
            url: url.to_owned(),
            schema: schema.clone(),
            out: Some(dir.path().join(format!("{name}.json"))),
            role: Role::Worker {
                name: name.to_owned(),
                capacity: 200,
                lease_ms: LEASE.as_millis() as u64,
                poll_ms: 250,
                tool_ms: 3,
            },
        };
        procs.spawn(name, &spec, &[]).expect("a worker starts");
    }
    assert!(wait_until(Duration::from_secs(30), || workers(&mut db).map(|n| n == 3)).expect("reads"), "3 workers");

    let ids = agent_ids(AGENTS);
    runtime.block_on(create_agents(&fleet, &ids, PLAN)).expect("the agents are created");
    let driver = ChildSpec {
        url: url.to_owned(),
        schema: schema.clone(),
        out: Some(dir.path().join("driver.json")),
        role: Role::Driver { agents: AGENTS, limit_ms: LIMIT.as_millis() as u64 },
    };
    procs.spawn("driver", &driver, &[]).expect("the driver starts");
    let total = PLAN.steps() * AGENTS as u64;
    let steps = |db: &mut postgres::Client| progress(db).map(|(events, _)| events);

    // A fifth of the way: w1 dies, its agents in the middle of their runs.
    assert!(wait_until(LIMIT, || steps(&mut db).map(|n| n >= total / 5)).expect("reads"));
    let held = holding(&mut db, "w1").expect("reads");
    procs.kill("w1").expect("SIGKILL");
    let killed_at = steps(&mut db).expect("reads");
    println!("w1 killed at step {killed_at} of {total}, holding {held} unfinished agents");
    assert!(held > 0, "w1 held no unfinished agent when it was killed");

    // Later: w2 stops for twice its lease, so that the others take its
    // agents, then goes on as if nothing happened.
    assert!(wait_until(LIMIT, || steps(&mut db).map(|n| n >= killed_at + total / 5)).expect("reads"));
    // Its unfinished agents, each at the epoch it holds it under.
    let rows = db.query("SELECT agent, epoch FROM leases WHERE worker = 'w2' AND NOT done", &[]).expect("reads");
    let held: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    let epochs: Vec<i64> = rows.iter().map(|r| r.get(1)).collect();
    assert!(!held.is_empty(), "w2 held no unfinished agent when it was paused");
    procs.signal("w2", "STOP").expect("SIGSTOP");
    let stopped_at = steps(&mut db).expect("reads");
    // Past its lease, and on until another worker has taken one of its
    // agents (on a loaded machine the others may look late). Taken: its
    // epoch moved on. (Not "held by another": on a fast machine the taker
    // may have finished it already, and a finished lease is held by none.)
    std::thread::sleep(LEASE * 2);
    let taken = |db: &mut postgres::Client| {
        db.query_one(
            "SELECT count(*) FROM leases l JOIN unnest($1::text[], $2::bigint[]) AS p (agent, epoch)
             ON l.agent = p.agent WHERE l.epoch > p.epoch",
            &[&held, &epochs],
        )
        .map(|r| r.get::<_, i64>(0) > 0)
    };
    if !wait_until(Duration::from_secs(30), || taken(&mut db)).expect("reads") {
        // What the leases say, for whoever reads the failure.
        let rows = db
            .query(
                "SELECT agent, worker, epoch, done, expires_at < now() FROM leases WHERE agent = ANY($1) LIMIT 10",
                &[&held],
            )
            .expect("reads");
        for r in rows {
            let (agent, worker, epoch, done, expired): (String, Option<String>, i64, bool, Option<bool>) =
                (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
            eprintln!("  {agent}: worker {worker:?}, epoch {epoch}, done {done}, expired {expired:?}");
        }
        panic!("no agent of w2 was taken within 30 s of its lease's end");
    }
    // Its last heartbeat, which stays while it is stopped: once it beats
    // again, it has renewed (the beat follows the renewal) and so seen the
    // leases it lost. On a fast machine the others may have finished every
    // agent by now, and the driver ends at once: without this wait, w2
    // could be told to stop before it looked.
    let beat = |db: &mut postgres::Client| {
        db.query_one("SELECT extract(epoch FROM heartbeat)::float8 FROM workers WHERE worker = 'w2'", &[])
            .map(|r| r.get::<_, f64>(0))
    };
    let paused_beat = beat(&mut db).expect("reads");
    procs.signal("w2", "CONT").expect("SIGCONT");
    assert!(
        wait_until(Duration::from_secs(30), || beat(&mut db).map(|b| b > paused_beat)).expect("reads"),
        "w2 did not beat again after it was continued"
    );
    let held = held.len();
    println!("w2 paused at step {stopped_at} for over {:?}, holding {held} unfinished agents", LEASE * 2);

    // The driver ends when every agent is done.
    let status = procs.wait("driver", LIMIT).expect("the driver's status");
    assert!(status.is_some_and(|s| s.success()), "the driver ended with {status:?}");
    let driven: Driven = read_outcome(&dir.path().join("driver.json")).expect("the driver's outcome");
    for name in ["w2", "w3"] {
        procs.close_stdin(name);
        let status = procs.wait(name, Duration::from_secs(20)).expect("a status");
        assert!(status.is_some_and(|s| s.success()), "{name} stopped with {status:?}");
    }
    let w2: WorkerOutcome = read_outcome(&dir.path().join("w2.json")).expect("w2's outcome");
    let w3: WorkerOutcome = read_outcome(&dir.path().join("w3.json")).expect("w3's outcome");
    println!(
        "w2 claimed {}, finished {}, lost {}; w3 claimed {}, finished {}, lost {}",
        w2.claimed, w2.finished, w2.lost, w3.claimed, w3.finished, w3.lost
    );
    assert!(w2.lost > 0, "w2 lost no agent to the others while paused");

    let report = audit(&mut db, PLAN, AGENTS).expect("the store reads");
    println!(
        "{} agents, {} done, {} steps under {} (agent, epoch) pairs, {} inbox rows, {} approvals, in {:?}",
        report.agents,
        report.done,
        report.events,
        report.epochs,
        report.inbox,
        report.approvals,
        began.elapsed()
    );
    for problem in report.problems.iter().take(20) {
        eprintln!("  {problem}");
    }
    assert!(report.is_clean(), "{} problems (schema {schema} kept)", report.problems.len());
    assert_eq!(report.done, AGENTS);
    assert_eq!(report.events, total);
    assert_eq!(report.approvals, PLAN.approvals() * AGENTS);
    assert_eq!((driven.tasks, driven.approvals), (AGENTS, PLAN.approvals() * AGENTS), "what the driver sent");
    assert_eq!(report.inbox, (driven.tasks + driven.approvals) as u64);
    assert!(report.epochs > AGENTS as u64, "no agent changed hands");
    drop(procs);
    drop_schema(&mut db, &schema).expect("the schema drops");
}
