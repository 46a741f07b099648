//! The durable tests' agent: a desk whose tools and stream items wait for
//! permits the test hands out, its effects, an agent running on its own
//! tokio task to be crashed or stopped, and the stores every test loops
//! over.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle};
use agent_fsm::store::{CheckpointStore, Durable, MemoryStore, SqliteStore, Start};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

/// What the agent has taken in (public: the machine's context is part of
/// its public type).
#[allow(unreachable_pub)]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Taken {
    /// Tool results, in the order they came.
    pub results: Vec<String>,
    /// Stream items, in order.
    pub items: Vec<u32>,
    /// Approved request ids.
    pub approved: Vec<u32>,
    /// Deadlines that fired.
    pub timeouts: u32,
    /// Backoffs that ended.
    pub retries: u32,
    /// The id of the next request for approval.
    pub next_request: u32,
}

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Desk)]
mod desk {
    use super::Taken;

    #[context]
    pub type Context = Taken;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Tools {
            left: u32,
        },
        Streaming,
        Asking {
            request: u32,
        },
        Backoff,
        #[terminal]
        Done,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Run(u32),
        ToolDone(String),
        Stream(u32),
        Item(u32),
        StreamEnd,
        Ask,
        Approve(u32),
        Timeout,
        Fail,
        Retry,
        Stop,
        /// Ends the agent while its tools run.
        #[during_work]
        Abort,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
        SpawnTools(u32),
        OpenStream(u32),
        AskHuman,
        Wait,
    }

    transitions! {
        Idle + Run(n) [*n > 0] => Tools { left: n } / SpawnTools(n),
        Tools { left } + ToolDone(r) [*left > 1] => { ctx.results.push(r.clone()); } Tools { left: left - 1 } / Nothing,
        Tools + ToolDone(r) => { ctx.results.push(r.clone()); } Idle / Nothing,
        Idle + Stream(n) => Streaming / OpenStream(n),
        Streaming + Item(i) => { ctx.items.push(i); } Streaming / Nothing,
        Streaming + StreamEnd => Idle / Nothing,
        Idle + Ask => { ctx.next_request += 1; } Asking { request: ctx.next_request - 1 } / AskHuman,
        Asking { request } + Approve(id) [*id == *request] => { ctx.approved.push(id); } Idle / Nothing,
        Asking + Timeout => { ctx.timeouts += 1; } Idle / Nothing,
        Idle + Fail => Backoff / Wait,
        Backoff + Retry => { ctx.retries += 1; } Idle / Nothing,
        Idle + Stop => Done / Nothing,
        Tools + Abort => Done / Nothing,
    }
}

pub(crate) use desk::{Desk, Event, State};

/// How long a human has to answer, and how long a backoff lasts.
pub(crate) const WINDOW: Duration = Duration::from_secs(30);
pub(crate) const BACKOFF: Duration = Duration::from_secs(5);

/// Effects whose tools and stream items wait for permits the test hands
/// out, and which count how often each tool was started.
#[derive(Clone)]
pub(crate) struct Gated {
    pub(crate) permits: Arc<Semaphore>,
    pub(crate) started: Arc<Mutex<HashMap<String, u32>>>,
    /// How many times `SpawnTools` or `OpenStream` was performed.
    pub(crate) spawns: Arc<Mutex<u32>>,
}

impl Gated {
    pub(crate) fn new() -> Self {
        Self { permits: Arc::new(Semaphore::new(0)), started: Arc::default(), spawns: Arc::default() }
    }

    pub(crate) fn started(&self) -> HashMap<String, u32> {
        self.started.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

impl Effects<Desk> for Gated {
    type Output = ();

    fn perform(&mut self, action: desk::Action, cx: &mut EffectContext<'_, Desk, ()>) {
        match action {
            desk::Action::SpawnTools(n) => {
                if let Ok(mut spawns) = self.spawns.lock() {
                    *spawns += 1;
                }
                for i in 0..n {
                    let key = format!("tool-{i}");
                    let permits = Arc::clone(&self.permits);
                    let started = Arc::clone(&self.started);
                    let result = key.clone();
                    cx.spawn_task(
                        key,
                        async move {
                            if let Ok(mut started) = started.lock() {
                                *started.entry(result.clone()).or_default() += 1;
                            }
                            if let Ok(permit) = permits.acquire().await {
                                permit.forget();
                            }
                            Event::ToolDone(result)
                        },
                        |key, failure| Event::ToolDone(format!("{key} failed: {failure}")),
                    );
                }
            }
            desk::Action::OpenStream(n) => {
                if let Ok(mut spawns) = self.spawns.lock() {
                    *spawns += 1;
                }
                let permits = Arc::clone(&self.permits);
                let items = futures::stream::iter(0..n)
                    .then(move |i| {
                        let permits = Arc::clone(&permits);
                        async move {
                            if let Ok(permit) = permits.acquire().await {
                                permit.forget();
                            }
                            Event::Item(i)
                        }
                    })
                    .chain(futures::stream::iter([Event::StreamEnd]));
                cx.stream_keyed("items", items, |_| None);
            }
            desk::Action::AskHuman => cx.deadline(WINDOW, Event::Timeout),
            desk::Action::Wait => cx.pause(BACKOFF, Event::Retry),
            desk::Action::Nothing => {}
        }
    }
}

/// A wall clock that follows tokio's (paused) one.
pub(crate) fn tokio_clock() -> impl Fn() -> SystemTime + Send + Sync + 'static {
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let start = tokio::time::Instant::now();
    move || base + start.elapsed()
}

/// An agent running on its own tokio task, to be crashed (its worker
/// dropped mid-run, no stop protocol) or stopped.
pub(crate) struct Running {
    pub(crate) handle: MachineHandle<Desk>,
    pub(crate) worker: JoinHandle<()>,
    pub(crate) start: Start,
}

impl Running {
    pub(crate) fn spawn(durable: &Durable, effects: Gated) -> Self {
        let (handle, worker, start) =
            durable.pair(|| Desk::new(Taken::default()), effects, ExecutorConfig::new()).expect("the store reads");
        Self { handle, worker: tokio::spawn(worker), start }
    }

    pub(crate) async fn crash(self) {
        self.worker.abort();
        let _ = self.worker.await;
    }

    pub(crate) async fn idle(&self) {
        within(self.handle.wait_idle()).await.expect("the worker runs");
    }

    pub(crate) async fn state(&self) -> State {
        within(self.handle.state()).await.expect("the worker runs")
    }

    pub(crate) async fn taken(&self) -> Taken {
        within(self.handle.inspect(|m| m.context().clone())).await.expect("the worker runs")
    }
}

/// Fails a test whose agent hangs, instead of stalling the suite.
pub(crate) async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future).await.expect("the agent answered in time")
}

/// Lets `n` gated tools or items through and waits until the agent took them.
pub(crate) async fn release(agent: &Running, effects: &Gated, n: usize) {
    effects.permits.add_permits(n);
    agent.idle().await;
}

/// Waits until what the agent took satisfies `done`.
pub(crate) async fn until(agent: &Running, done: impl Fn(&Taken) -> bool) {
    within(async {
        while !done(&agent.taken().await) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
}

/// A memory store, a SQLite file and, when `AGENT_FSM_PG_URL` is set,
/// Postgres in a fresh schema, each with what keeps it alive (its temp
/// dir, its schema).
pub(crate) fn stores() -> Vec<(Arc<dyn CheckpointStore>, Box<dyn std::any::Any>)> {
    let dir = tempfile::tempdir().expect("a temp dir");
    let sqlite = SqliteStore::open(dir.path().join("agents.db")).expect("the file opens");
    #[cfg_attr(not(feature = "postgres"), allow(unused_mut))]
    let mut stores: Vec<(Arc<dyn CheckpointStore>, Box<dyn std::any::Any>)> =
        vec![(Arc::new(MemoryStore::new()), Box::new(())), (Arc::new(sqlite), Box::new(dir))];
    #[cfg(feature = "postgres")]
    if let Some(pg) = super::stores::pg::Schema::fresh() {
        stores.push((Arc::new(pg.store.clone()), Box::new(pg)));
    }
    stores
}

/// The event log has steps 1..=last, each once.
pub(crate) fn assert_gapless(store: &dyn CheckpointStore, agent: &str) {
    let next = store.agent(agent).expect("reads").expect("the agent is there").next_seq;
    let events = store.events(agent, 0, next - 1).expect("reads");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..next).collect::<Vec<_>>());
}
