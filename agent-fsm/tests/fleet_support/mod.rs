//! What the fleet tests share: the job agent (inputs it takes in order, a
//! tool gated by the test), workers each on a tokio runtime and thread of
//! their own (so that a test can freeze one whole, as `SIGSTOP` freezes a
//! process), a fresh Postgres schema per test, a relay to the server whose
//! traffic the test can cut or take down, and waiting with a timeout.

// Each test uses a different part of this module.
#![allow(dead_code, unreachable_pub, unused_imports)]

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_fsm::fleet::{Fleet, FleetConfig, FleetError, Worker, WorkerReport};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig};
use tokio::sync::{Semaphore, oneshot};

mod relay;
pub use relay::Relay;

/// The variable the Postgres tests read their server's URL from.
pub const PG_URL: &str = "AGENT_FSM_PG_URL";

#[agent_fsm::state_machine(fallback = Nothing, serde, name = Job)]
pub mod job {
    #[context]
    pub type Context = Vec<u32>;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Working,
        #[terminal]
        Done,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        /// Taken in: written down.
        Add(u32),
        /// Runs the tool, whose result is written down.
        Work(u32),
        Worked(u32),
        Finish,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
        Tool(u32),
    }

    transitions! {
        Idle + Add(n) => { ctx.push(n); } Idle / Nothing,
        Idle + Work(n) => Working / Tool(n),
        Working + Worked(n) => { ctx.push(n); } Idle / Nothing,
        Idle + Finish => Done / Nothing,
    }
}

pub use job::{Event, Job};

/// Tool calls, as (agent, tool argument).
pub type Calls = Arc<Mutex<Vec<(String, u32)>>>;

/// A worker's tools: each call waits for a permit the test hands out, and
/// is counted.
#[derive(Clone)]
pub struct Tools {
    pub permits: Arc<Semaphore>,
    /// (agent, tool argument) of each call that began.
    pub calls: Calls,
    /// (agent, tool argument) of each call dropped before it ended: its
    /// agent was stopped.
    pub dropped: Calls,
    /// Milliseconds every action blocks its runtime's thread for (0: none),
    /// as a slow synchronous call in an action does.
    pub stall_ms: Arc<AtomicU64>,
    pub agent: String,
}

impl Default for Tools {
    fn default() -> Self {
        Self {
            permits: Arc::new(Semaphore::new(0)),
            calls: Arc::default(),
            dropped: Arc::default(),
            stall_ms: Arc::default(),
            agent: String::new(),
        }
    }
}

impl Effects<Job> for Tools {
    type Output = ();

    fn perform(&mut self, action: job::Action, cx: &mut EffectContext<'_, Job, ()>) {
        let stall = self.stall_ms.load(Ordering::Relaxed);
        if stall > 0 {
            std::thread::sleep(Duration::from_millis(stall));
        }
        if let job::Action::Tool(n) = action {
            let (permits, calls, agent) = (Arc::clone(&self.permits), Arc::clone(&self.calls), self.agent.clone());
            let dropped = Dropped(Some((Arc::clone(&self.dropped), (agent.clone(), n))));
            cx.spawn_task(
                format!("tool-{n}"),
                async move {
                    calls.lock().unwrap_or_else(PoisonError::into_inner).push((agent, n));
                    let mut dropped = dropped;
                    if let Ok(permit) = permits.acquire().await {
                        permit.forget();
                    }
                    dropped.0 = None;
                    Event::Worked(n)
                },
                |_, _| Event::Worked(0),
            );
        }
    }
}

/// Records a tool call in [`Tools::dropped`] when dropped before it ended.
struct Dropped(Option<(Calls, (String, u32))>);

impl Drop for Dropped {
    fn drop(&mut self) {
        if let Some((list, call)) = self.0.take() {
            list.lock().unwrap_or_else(PoisonError::into_inner).push(call);
        }
    }
}

/// A Postgres schema of the test's own, dropped by [`Db::drop_schema`].
pub struct Db {
    pub url: String,
    pub schema: String,
}

impl Db {
    /// The server's URL and a fresh schema named after `test` (the test's
    /// short name); `None` (after one line saying so) when no server is
    /// configured.
    pub fn new(test: &str) -> Option<Self> {
        let Ok(url) = std::env::var(PG_URL) else {
            let name = std::thread::current().name().unwrap_or(test).to_owned();
            println!("test {name}: skipped ({PG_URL} is not set; scripts/postgres.sh starts a server)");
            return None;
        };
        let schema = format!("fleet_{test}_{}", std::process::id());
        Some(Self { url, schema })
    }

    /// A fleet on the schema, with leases of `lease`.
    pub async fn fleet(&self, lease: Duration) -> Fleet {
        let config = FleetConfig::new(self.url.clone()).schema(self.schema.clone()).lease(lease);
        within(Fleet::connect(config)).await.expect("the fleet connects")
    }

    /// A plain connection, searching the schema.
    pub async fn client(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls).await.expect("connects");
        tokio::spawn(connection);
        client.batch_execute(&format!("SET search_path TO \"{}\"", self.schema)).await.expect("sets the path");
        client
    }

    /// Drops the schema, fresh before and gone after the test.
    pub async fn drop_schema(&self) {
        let client = self.client().await;
        client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.schema)).await.expect("drops");
    }
}

/// A worker running as a process would: on a runtime and thread of its own.
pub struct Proc {
    pub id: String,
    pub tools: Tools,
    /// The agents it was asked to spawn, in order.
    pub spawned: Arc<Mutex<Vec<String>>>,
    runtime: tokio::runtime::Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<WorkerReport, FleetError>>>,
}

impl Proc {
    pub fn start(worker: Worker) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let tools = Tools::default();
        let spawned = Arc::new(Mutex::new(Vec::new()));
        let id = worker.id().to_owned();
        let (for_agents, log) = (tools.clone(), Arc::clone(&spawned));
        let thread = std::thread::spawn(move || {
            runtime.block_on(worker.run(
                move |agent: &str| {
                    log.lock().unwrap_or_else(PoisonError::into_inner).push(agent.to_owned());
                    let tools = Tools { agent: agent.to_owned(), ..for_agents.clone() };
                    (tools, ExecutorConfig::new())
                },
                async move {
                    let _ = stopped.await;
                },
            ))
        });
        Self { id, tools, spawned, runtime: handle, stop: Some(stop), thread: Some(thread) }
    }

    /// Freezes the worker's whole runtime (its loop, agents and
    /// connections) until the returned sender is dropped or sent to.
    pub fn freeze(&self) -> std::sync::mpsc::Sender<()> {
        let (thaw, frozen) = std::sync::mpsc::channel::<()>();
        let (tell, told) = std::sync::mpsc::channel::<()>();
        self.runtime.spawn(async move {
            let _ = tell.send(());
            // Blocks the runtime's only thread, as a stopped process.
            let _ = frozen.recv();
        });
        told.recv_timeout(Duration::from_secs(20)).expect("the worker froze");
        thaw
    }

    pub fn spawned(&self) -> Vec<String> {
        self.spawned.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Waits, unasked, until the worker's run ends (30 s at most), and
    /// returns what it ended with.
    pub async fn ended(mut self) -> Result<WorkerReport, FleetError> {
        let thread = self.thread.take().expect("running");
        let joined = within(tokio::task::spawn_blocking(move || thread.join())).await.expect("joins");
        joined.expect("the worker did not panic")
    }

    /// Stops the worker cleanly and returns its report.
    pub async fn stop(self) -> WorkerReport {
        self.stopped().await.expect("the worker ran")
    }

    /// Asks the worker to stop, and returns what it ended with.
    pub async fn stopped(mut self) -> Result<WorkerReport, FleetError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.ended().await
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// `len` bytes of letters and digits that do not repeat in any way
/// Postgres's compression finds (xorshift, seeded by `len`).
pub fn noise(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ len as u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(ALPHABET[(state % ALPHABET.len() as u64) as usize])
        })
        .collect()
}

/// Fails a test that hangs, instead of stalling the suite.
pub async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), future).await.expect("done in time")
}

/// Waits until `check` is true, looking every 20 ms.
pub async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "timed out waiting until {what}");
}

/// The agent's context, as its last written step left it.
pub async fn taken(fleet: &Fleet, agent: &str) -> Vec<u32> {
    let store = fleet.store().clone();
    let agent = agent.to_owned();
    let restored = tokio::task::spawn_blocking(move || agent_fsm::store::restore::<Job, _>(&store, &agent))
        .await
        .expect("joins")
        .expect("restores");
    restored.machine.context().clone()
}
