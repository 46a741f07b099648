//! The processes of a fleet run, shared by `examples/fleet.rs`,
//! `tests/fleet_chaos.rs` and `benches/fleet.rs`: each re-executes its own
//! binary as a worker or as the driver, told which by one environment
//! variable ([`CHILD_ENV`], a [`ChildSpec`] in JSON), and keeps the
//! children in a [`Processes`] guard that kills them all when dropped, on
//! a panic or a time limit alike.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_fsm::fleet::{Fleet, FleetConfig, FleetError, Worker};
use agent_fsm::runtime::ExecutorConfig;
use postgres::Client;

use super::drive::{DriveError, drive};
use super::effects::{FleetEffects, Probe, ScriptedModel};
use super::{FleetAgent, Plan};

/// The environment variable that makes a binary a fleet child: its value
/// is the child's [`ChildSpec`] in JSON.
pub const CHILD_ENV: &str = "AGENT_FSM_FLEET_CHILD";

/// The environment variable the Postgres URL is read from.
pub const URL_ENV: &str = "AGENT_FSM_PG_URL";

/// What a child process is to do.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChildSpec {
    /// The fleet's database.
    pub url: String,
    /// The fleet's schema.
    pub schema: String,
    /// Where the child writes its outcome (JSON), if anywhere.
    pub out: Option<PathBuf>,
    /// Its part.
    pub role: Role,
}

/// A child's part in the run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Role {
    /// A worker, until its stdin closes.
    Worker {
        /// Its id in the fleet.
        name: String,
        /// Agents it runs at most.
        capacity: u32,
        /// Its leases, in milliseconds.
        lease_ms: u64,
        /// Its inbox poll besides notifications, in milliseconds.
        poll_ms: u64,
        /// How long each tool call takes, in milliseconds.
        tool_ms: u64,
    },
    /// The outside world: tasks and approvals for agents `agent-0000`..,
    /// until every one is done.
    Driver {
        /// How many agents.
        agents: usize,
        /// The time limit, in milliseconds.
        limit_ms: u64,
    },
}

/// What a worker did, as it writes it when it stops cleanly.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WorkerOutcome {
    /// Agents claimed.
    pub claimed: u64,
    /// Agents run to `Done`.
    pub finished: u64,
    /// Agents lost to another worker.
    pub lost: u64,
    /// Agents that failed here.
    pub failed: u64,
    /// Agents handed back at the stop.
    pub handed_back: u64,
    /// Each step's wait for its checkpoint before its work started, in
    /// microseconds (see [`Probe`]).
    pub waits_us: Vec<u64>,
}

/// Why a child failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChildError {
    /// The fleet failed.
    #[error(transparent)]
    Fleet(#[from] FleetError),
    /// The drive failed.
    #[error(transparent)]
    Drive(#[from] DriveError),
    /// The store could not be read.
    #[error("reading the store: {0}")]
    Store(#[from] postgres::Error),
    /// The runtime or the outcome file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The spec was not valid JSON, or the outcome did not serialize.
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
}

/// The agents of a run of `n`: `agent-0000`, `agent-0001`, ..
#[must_use]
pub fn agent_ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("agent-{i:04}")).collect()
}

/// A schema name no other run uses: `prefix`, the process id and the time.
#[must_use]
pub fn fresh_schema(prefix: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{prefix}_{}_{}", std::process::id(), nanos % 1_000_000_000_000)
}

/// The child spec of this process, if it is a fleet child.
///
/// # Errors
/// The JSON's, when the variable holds no spec.
pub fn child_spec() -> Option<Result<ChildSpec, serde_json::Error>> {
    std::env::var(CHILD_ENV).ok().map(|json| serde_json::from_str(&json))
}

/// Runs this process as the fleet child its environment names, if it is
/// one (`None` otherwise): [`child_spec`], then [`run_child`]. A binary
/// that starts itself as children calls it first thing in `main`.
///
/// # Errors
/// [`ChildError`]: the spec was not valid JSON, or the child failed.
pub fn run_if_child() -> Option<Result<(), ChildError>> {
    child_spec().map(|spec| run_child(&spec?))
}

/// Runs the child `spec` describes to its end, and writes its outcome.
///
/// # Errors
/// [`ChildError`]: connecting, running or writing the outcome failed.
pub fn run_child(spec: &ChildSpec) -> Result<(), ChildError> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let config = FleetConfig::new(spec.url.clone()).schema(spec.schema.clone());
    let outcome = match &spec.role {
        Role::Worker { name, capacity, lease_ms, poll_ms, tool_ms } => {
            let lease = Duration::from_millis(*lease_ms);
            let probe = Probe::new();
            let effects =
                FleetEffects::new(ScriptedModel { delay: Duration::from_millis(2) }, Duration::from_millis(*tool_ms))
                    .with_probe(probe.clone());
            let report = runtime.block_on(async {
                let fleet = Fleet::connect(config.lease(lease)).await?;
                let worker = Worker::new(&fleet, name.clone())
                    .capacity(*capacity)
                    .lease(lease)
                    .poll(Duration::from_millis(*poll_ms));
                worker
                    .run(move |_agent: &str| (effects.clone(), ExecutorConfig::<FleetAgent>::new()), stdin_closed())
                    .await
            })?;
            let waits_us = probe.take().iter().map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)).collect();
            serde_json::to_string(&WorkerOutcome {
                claimed: report.claimed,
                finished: report.finished,
                lost: report.lost,
                failed: report.failed,
                handed_back: report.handed_back,
                waits_us,
            })?
        }
        Role::Driver { agents, limit_ms } => {
            let fleet = runtime.block_on(Fleet::connect(config))?;
            let mut client = super::audit::connect(&spec.url, &spec.schema)?;
            let ids = agent_ids(*agents);
            let driven = drive(
                &mut client,
                &ids,
                Duration::from_millis(20),
                Duration::from_millis(*limit_ms),
                |agent, event| runtime.block_on(fleet.send(agent, event)).map(|_| ()),
            )?;
            serde_json::to_string(&driven)?
        }
    };
    if let Some(out) = &spec.out {
        std::fs::write(out, outcome)?;
    }
    runtime.shutdown_timeout(Duration::from_millis(200));
    Ok(())
}

/// Completes when this process's stdin reaches its end: a parent stops a
/// worker cleanly by closing the pipe.
async fn stdin_closed() {
    let read = tokio::task::spawn_blocking(|| {
        let mut buf = [0u8; 64];
        while std::io::stdin().read(&mut buf).is_ok_and(|n| n > 0) {}
    });
    let _ = read.await;
}

/// Reads a child's outcome file.
///
/// # Errors
/// When the file is missing or does not parse.
pub fn read_outcome<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ChildError> {
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

/// The child processes of a run, by name. Dropped, it kills every one
/// still running (a stopped one is continued first, so that it dies).
#[derive(Debug, Default)]
pub struct Processes {
    children: BTreeMap<String, std::process::Child>,
    pids: Arc<Mutex<Vec<u32>>>,
}

impl Processes {
    /// No children yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts this process's own binary as the child `spec` describes,
    /// under `name`, with `args`, its stdin a pipe (closed to stop a
    /// worker cleanly).
    ///
    /// # Errors
    /// When the binary cannot be found or started.
    pub fn spawn(&mut self, name: &str, spec: &ChildSpec, args: &[&str]) -> Result<u32, ChildError> {
        let exe = std::env::current_exe()?;
        let child = Command::new(exe)
            .args(args)
            .env(CHILD_ENV, serde_json::to_string(spec)?)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()?;
        let pid = child.id();
        self.pids.lock().unwrap_or_else(PoisonError::into_inner).push(pid);
        self.children.insert(name.to_owned(), child);
        Ok(pid)
    }

    /// Sends `signal` (`KILL`, `STOP`, `CONT`, ..) to child `name`.
    ///
    /// # Errors
    /// When there is no such child or `kill` fails.
    pub fn signal(&self, name: &str, signal: &str) -> Result<(), ChildError> {
        let child = self.children.get(name).ok_or_else(|| std::io::Error::other(format!("no child {name}")))?;
        signal_pid(child.id(), signal)
    }

    /// Kills child `name` with SIGKILL and reaps it.
    ///
    /// # Errors
    /// When there is no such child.
    pub fn kill(&mut self, name: &str) -> Result<(), ChildError> {
        let child = self.children.get_mut(name).ok_or_else(|| std::io::Error::other(format!("no child {name}")))?;
        child.kill()?;
        child.wait()?;
        Ok(())
    }

    /// Closes child `name`'s stdin: a worker stops cleanly.
    pub fn close_stdin(&mut self, name: &str) {
        if let Some(child) = self.children.get_mut(name) {
            drop(child.stdin.take());
        }
    }

    /// Waits up to `limit` for child `name` to exit; its status if it did.
    ///
    /// # Errors
    /// When there is no such child or its status cannot be read.
    pub fn wait(&mut self, name: &str, limit: Duration) -> Result<Option<ExitStatus>, ChildError> {
        let child = self.children.get_mut(name).ok_or_else(|| std::io::Error::other(format!("no child {name}")))?;
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(Some(status));
            }
            if start.elapsed() >= limit {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Starts a thread that, after `limit`, kills every child and then
    /// calls `expired` (which should end the process: a run past its
    /// limit is a failure, whatever it was waiting on).
    pub fn watchdog(&self, limit: Duration, expired: impl FnOnce() + Send + 'static) {
        let pids = Arc::clone(&self.pids);
        std::thread::spawn(move || {
            std::thread::sleep(limit);
            for &pid in pids.lock().unwrap_or_else(PoisonError::into_inner).iter() {
                let _ = signal_pid(pid, "CONT");
                let _ = signal_pid(pid, "KILL");
            }
            expired();
        });
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for child in self.children.values_mut() {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = signal_pid(child.id(), "CONT");
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Sends `signal` to process `pid` with the system's `kill` (the
/// workspace has no unsafe code to call `kill(2)` itself).
fn signal_pid(pid: u32, signal: &str) -> Result<(), ChildError> {
    let status = Command::new("kill").arg("-s").arg(signal).arg(pid.to_string()).stderr(Stdio::null()).status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("kill -s {signal} {pid}: {status}")).into())
    }
}

/// Steps written so far, and agents done.
///
/// # Errors
/// The server's.
pub fn progress(client: &mut Client) -> Result<(u64, u64), postgres::Error> {
    let events: i64 = client.query_one("SELECT count(*) FROM events", &[])?.get(0);
    let done: i64 = client.query_one("SELECT count(*) FROM leases WHERE done", &[])?.get(0);
    Ok((u64::try_from(events).unwrap_or(0), u64::try_from(done).unwrap_or(0)))
}

/// Agents worker `worker` holds and has not finished.
///
/// # Errors
/// The server's.
pub fn holding(client: &mut Client, worker: &str) -> Result<u64, postgres::Error> {
    let n: i64 = client.query_one("SELECT count(*) FROM leases WHERE worker = $1 AND NOT done", &[&worker])?.get(0);
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Live workers registered.
///
/// # Errors
/// The server's.
pub fn workers(client: &mut Client) -> Result<u64, postgres::Error> {
    let n: i64 = client.query_one("SELECT count(*) FROM workers WHERE NOT stopping", &[])?.get(0);
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Waits until `ready` says so, polling every 20 ms, for up to `limit`;
/// whether it did.
///
/// # Errors
/// What `ready` returns.
pub fn wait_until<E>(limit: Duration, mut ready: impl FnMut() -> Result<bool, E>) -> Result<bool, E> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if ready()? {
            return Ok(true);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    ready()
}

/// Creates agents `ids` in the fleet, each as `FleetAgent::new(plan)`.
///
/// # Errors
/// What creating one fails with.
pub async fn create_agents(fleet: &Fleet, ids: &[String], plan: Plan) -> Result<(), FleetError> {
    for id in ids {
        fleet.create(id, &FleetAgent::new(plan)).await?;
    }
    Ok(())
}

/// Drops `schema` and everything in it.
///
/// # Errors
/// The server's.
pub fn drop_schema(client: &mut Client, schema: &str) -> Result<(), postgres::Error> {
    client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", super::audit::quote_ident(schema)))
}
