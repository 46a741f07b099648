//! A fleet on Postgres: `cargo run --example fleet -- --workers 3 --agents 100`
//! starts three worker processes (this binary again, as children), adds
//! 100 demo agents (a tool loop whose calls sometimes wait for a human
//! approval), gives them their tasks and approves their calls from this
//! process through the fleet's inbox, kills one worker with SIGKILL
//! midway, and prints that every agent finished, its log checked in the
//! store. Exits non-zero if one did not, within `--timeout` seconds.
//!
//! The database is `--url URL`, else `AGENT_FSM_PG_URL`
//! (`scripts/postgres.sh` starts one on loopback and prints its URL). The
//! run keeps its tables in a schema of its own, dropped at the end.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use agent_fsm::fleet::{Fleet, FleetConfig};
use agent_fsm_examples::fleet_agent::Plan;
use agent_fsm_examples::fleet_agent::audit::{audit, connect};
use agent_fsm_examples::fleet_agent::cluster::{
    ChildSpec, Processes, Role, URL_ENV, agent_ids, create_agents, drop_schema, fresh_schema, holding, progress,
    run_if_child, wait_until, workers,
};
use agent_fsm_examples::fleet_agent::drive::drive;

/// The command line.
struct Args {
    workers: usize,
    agents: usize,
    url: Option<String>,
    timeout: Duration,
}

fn parse() -> Result<Args, String> {
    let mut args =
        Args { workers: 3, agents: 100, url: std::env::var(URL_ENV).ok(), timeout: Duration::from_secs(120) };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--workers" => args.workers = value()?.parse().map_err(|e| format!("--workers: {e}"))?,
            "--agents" => args.agents = value()?.parse().map_err(|e| format!("--agents: {e}"))?,
            "--url" => args.url = Some(value()?),
            "--timeout" => args.timeout = Duration::from_secs(value()?.parse().map_err(|e| format!("--timeout: {e}"))?),
            other => {
                return Err(format!(
                    "unknown argument {other}; usage: fleet [--workers N] [--agents N] [--url URL] [--timeout SECS]"
                ));
            }
        }
    }
    if args.workers < 2 {
        return Err("--workers must be at least 2: one is killed midway".to_owned());
    }
    Ok(args)
}

fn main() -> ExitCode {
    if let Some(ran) = run_if_child() {
        return match ran {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("fleet child failed: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let args = match parse() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    let Some(url) = args.url.clone() else {
        eprintln!(
            "no Postgres URL: pass --url postgres://USER@HOST:PORT/DB or set {URL_ENV} \
             (scripts/postgres.sh starts a server on loopback and prints its URL)"
        );
        return ExitCode::from(2);
    };
    match run(&args, &url) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("fleet: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args, url: &str) -> Result<bool, Box<dyn std::error::Error>> {
    let began = Instant::now();
    let plan = Plan::default();
    let lease = Duration::from_secs(2);
    let schema = fresh_schema("fleet_example");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let fleet = runtime.block_on(Fleet::connect(FleetConfig::new(url).schema(schema.clone()).lease(lease)))?;
    let mut db = connect(url, &schema)?;
    println!("fleet in schema {schema}: {} workers, {} agents, leases of {lease:?}", args.workers, args.agents);

    let mut procs = Processes::new();
    let timeout = args.timeout;
    procs.watchdog(timeout, move || {
        eprintln!("fleet: not every agent finished within {timeout:?}; the workers are killed");
        std::process::exit(1);
    });
    let names: Vec<String> = (1..=args.workers).map(|i| format!("worker-{i}")).collect();
    for name in &names {
        let role = Role::Worker { name: name.clone(), capacity: 1000, lease_ms: 2000, poll_ms: 500, tool_ms: 3 };
        let spec = ChildSpec { url: url.to_owned(), schema: schema.clone(), out: None, role };
        let pid = procs.spawn(name, &spec, &[])?;
        println!("started {name} (pid {pid})");
    }
    let expected = args.workers as u64;
    wait_until(Duration::from_secs(30), || workers(&mut db).map(|n| n >= expected))?;

    let ids = agent_ids(args.agents);
    runtime.block_on(create_agents(&fleet, &ids, plan))?;
    println!("created {} agents, {} steps each, {} approvals each", ids.len(), plan.steps(), plan.approvals());

    // The outside world, in a thread of this process: tasks, then an
    // approval each time an agent asks.
    let driver = {
        let (fleet, handle, ids) = (fleet.clone(), runtime.handle().clone(), ids.clone());
        let (url, schema) = (url.to_owned(), schema.clone());
        std::thread::spawn(move || {
            let mut db = connect(&url, &schema).map_err(|e| e.to_string())?;
            drive(&mut db, &ids, Duration::from_millis(20), timeout, |agent, event| {
                handle.block_on(fleet.send(agent, event)).map(|_| ())
            })
            .map_err(|e| e.to_string())
        })
    };

    // Midway, the first worker dies.
    let total = plan.steps() * args.agents as u64;
    wait_until(timeout, || progress(&mut db).map(|(events, _)| events >= total * 2 / 5))?;
    let held = holding(&mut db, &names[0])?;
    procs.kill(&names[0])?;
    let (events, done) = progress(&mut db)?;
    println!(
        "killed {} with SIGKILL at step {events} of {total} ({done} agents done); it held {held} running agents",
        names[0]
    );

    let driven = driver.join().map_err(|_| "the driver panicked")??;
    println!("sent {} tasks and {} approvals through the inbox", driven.tasks, driven.approvals);
    for name in &names[1..] {
        procs.close_stdin(name);
        procs.wait(name, Duration::from_secs(20))?;
    }
    let report = audit(&mut db, plan, args.agents)?;
    for problem in report.problems.iter().take(20) {
        println!("  problem: {problem}");
    }
    if !report.is_clean() {
        println!("{} problems; the tables are kept in schema {schema}", report.problems.len());
        return Ok(false);
    }
    println!(
        "every agent finished: {} of {} done, {} steps without gap or duplicate, {} inbox events applied once each, \
         {} ownership epochs, in {:.1?}",
        report.done,
        args.agents,
        report.events,
        report.inbox,
        report.epochs,
        began.elapsed()
    );
    drop(procs);
    drop_schema(&mut db, &schema)?;
    Ok(true)
}
