//! A durable agent's stream opened again after a crash skips the items
//! the machine took before it. A source that replays them continues
//! where it stopped; one that does not (a model answering the repeated
//! request with a shorter reply) ends before the skip is done, and the
//! machine is told with the stream's failure (`EffectFailure::Diverged`)
//! rather than left waiting for the rest of a reply that will not come.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agent_fsm::runtime::{EffectContext, EffectFailure, Effects, ExecutorConfig, MachineHandle};
use agent_fsm::store::{CheckpointStore, Durable, MemoryStore, SqliteStore};
use futures::StreamExt;

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Reader)]
mod reader {
    #[context]
    pub type Context = Vec<String>;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Reading,
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Read,
        Line(u32),
        End,
        Failed(String),
    }

    #[actions]
    #[derive(Debug, Default)]
    pub enum Action {
        #[default]
        Nothing,
        Open,
    }

    transitions! {
        Idle + Read => Reading / Open,
        Reading + Line(n) => { ctx.push(format!("line {n}")); } Reading / Nothing,
        Reading + End => Idle / Nothing,
        Reading + Failed(why) => { ctx.push(format!("failed: {why}")); } Idle / Nothing,
    }
}

use reader::{Event, Reader, State};

/// What the source yields when opened again.
#[derive(Clone, Copy)]
enum Again {
    /// The same lines, then one more and the end.
    Replays,
    /// One line and the end: fewer items than the machine took.
    Shorter,
}

/// The first opening yields three lines and stalls (the crash comes
/// then); the second yields as `again` says.
#[derive(Clone)]
struct Source {
    again: Again,
    opens: Arc<AtomicU32>,
}

impl Effects<Reader> for Source {
    type Output = ();

    fn perform(&mut self, action: reader::Action, cx: &mut EffectContext<'_, Reader, ()>) {
        if !matches!(action, reader::Action::Open) {
            return;
        }
        let lines = |n: u32| futures::stream::iter((0..n).map(Event::Line));
        let stream = match (self.opens.fetch_add(1, Ordering::SeqCst), self.again) {
            (0, _) => lines(3).chain(futures::stream::pending()).boxed(),
            (_, Again::Replays) => lines(4).chain(futures::stream::iter([Event::End])).boxed(),
            (_, Again::Shorter) => lines(1).chain(futures::stream::iter([Event::End])).boxed(),
        };
        cx.stream_keyed("lines", stream, |failure| Some(Event::Failed(failure.to_string())));
    }
}

/// Fails a test whose agent hangs, instead of stalling the suite.
async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future).await.expect("the agent answered in time")
}

fn spawn(store: &Arc<dyn CheckpointStore>, source: Source) -> (MachineHandle<Reader>, tokio::task::JoinHandle<()>) {
    let (handle, worker, _) = Durable::new(Arc::clone(store), "reader")
        .pair(|| Reader::new(Vec::new()), source, ExecutorConfig::new())
        .expect("the store reads");
    (handle, tokio::spawn(worker))
}

/// Takes three lines, crashes, spawns again with `again`, and returns
/// the state and what the machine took once the agent is idle.
async fn crashed_and_reopened(store: &Arc<dyn CheckpointStore>, again: Again) -> (State, Vec<String>) {
    let source = Source { again, opens: Arc::default() };
    let (handle, worker) = spawn(store, source.clone());
    handle.send(Event::Read).await.expect("sent");
    within(async {
        while within(handle.inspect(|m| m.context().len())).await.expect("runs") < 3 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    worker.abort();
    let _ = worker.await;

    let (handle, _worker) = spawn(store, source.clone());
    within(handle.wait_idle()).await.expect("runs");
    let found = within(handle.inspect(|m| (m.state().clone(), m.context().clone()))).await.expect("runs");
    within(handle.shutdown()).await.expect("stops");
    assert_eq!(source.opens.load(Ordering::SeqCst), 2);
    found
}

fn stores() -> Vec<(Arc<dyn CheckpointStore>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().expect("a temp dir");
    let sqlite = SqliteStore::open(dir.path().join("agents.db")).expect("the file opens");
    vec![(Arc::new(MemoryStore::new()), None), (Arc::new(sqlite), Some(dir))]
}

#[tokio::test(start_paused = true)]
async fn a_stream_whose_source_replays_continues_where_it_stopped() {
    for (store, _keep) in stores() {
        let (state, taken) = crashed_and_reopened(&store, Again::Replays).await;
        assert_eq!(state, State::Idle);
        assert_eq!(taken, ["line 0", "line 1", "line 2", "line 3"]);
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_whose_source_ends_short_of_what_was_taken_fails() {
    for (store, _keep) in stores() {
        let (state, taken) = crashed_and_reopened(&store, Again::Shorter).await;
        assert_eq!(state, State::Idle, "the machine is not left waiting for lines that will not come");
        let failed = format!("failed: {}", EffectFailure::Diverged);
        assert_eq!(taken, ["line 0", "line 1", "line 2", failed.as_str()]);
    }
}
