//! Durable agents whose work fails without an event: a stream that times
//! out (a model server that stalls) or panics, whose failure the effects
//! map to no event, as the runtime's own example does (`|_| None`). Its
//! end is written as soon as the worker sees it, as a stream's normal end
//! is, so that a crash after it does not open the stream again any more
//! than a stop does. Each test runs on every store (the in-memory store, a
//! SQLite file and, when `AGENT_FSM_PG_URL` is set, Postgres).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle};
use agent_fsm::store::{CheckpointStore, Durable, MemoryStore, SqliteStore, restore};

#[path = "stores/mod.rs"]
mod stores;

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Reader)]
mod reader {
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
        Reading + Line(_) => Reading / Nothing,
        Reading + End => Idle / Nothing,
    }
}

use reader::{Event, Reader, State};

/// How the stream fails.
#[derive(Clone, Copy)]
enum Failure {
    /// It never yields, and times out.
    Stalls,
    /// It panics when first polled.
    Panics,
}

/// Opens a stream that fails as told, its failure mapped to no event, and
/// counts the opens.
#[derive(Clone)]
struct Failing {
    failure: Failure,
    opens: Arc<AtomicU32>,
}

impl Effects<Reader> for Failing {
    type Output = ();

    fn perform(&mut self, action: reader::Action, cx: &mut EffectContext<'_, Reader, ()>) {
        if matches!(action, reader::Action::Open) {
            self.opens.fetch_add(1, Ordering::SeqCst);
            match self.failure {
                Failure::Stalls => cx.stream_keyed("lines", futures::stream::pending::<Event>(), |_| None),
                Failure::Panics => cx.stream_keyed(
                    "lines",
                    futures::stream::poll_fn(|_| -> std::task::Poll<Option<Event>> { panic!("the source broke") }),
                    |_| None,
                ),
            }
        }
    }
}

/// How long a stream may stay open.
const TIMEOUT: Duration = Duration::from_secs(5);

fn spawn(store: &Arc<dyn CheckpointStore>, effects: Failing) -> (MachineHandle<Reader>, tokio::task::JoinHandle<()>) {
    let config = ExecutorConfig::new().stream_timeout(TIMEOUT);
    let (handle, worker, _) =
        Durable::new(Arc::clone(store), "reader").pair(Reader::new, effects, config).expect("the store reads");
    (handle, tokio::spawn(worker))
}

/// Fails a test whose agent hangs, instead of stalling the suite.
async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), future).await.expect("the agent answered in time")
}

fn stores() -> Vec<(Arc<dyn CheckpointStore>, Box<dyn std::any::Any>)> {
    let dir = tempfile::tempdir().expect("a temp dir");
    let sqlite = SqliteStore::open(dir.path().join("agents.db")).expect("the file opens");
    #[cfg_attr(not(feature = "postgres"), allow(unused_mut))]
    let mut stores: Vec<(Arc<dyn CheckpointStore>, Box<dyn std::any::Any>)> =
        vec![(Arc::new(MemoryStore::new()), Box::new(())), (Arc::new(sqlite), Box::new(dir))];
    #[cfg(feature = "postgres")]
    if let Some(pg) = stores::pg::Schema::fresh() {
        stores.push((Arc::new(pg.store.clone()), Box::new(pg)));
    }
    stores
}

/// Opens the stream, lets it fail, crashes the agent (its worker dropped,
/// no stop protocol) and spawns it again: the failed stream is not in
/// flight in the store, and is not opened again.
async fn a_failed_stream_is_not_opened_again_after_a_crash(failure: Failure) {
    for (store, _keep) in stores() {
        let effects = Failing { failure, opens: Arc::default() };
        let (handle, worker) = spawn(&store, effects.clone());
        handle.send(Event::Read).await.expect("sent");
        tokio::time::sleep(TIMEOUT + Duration::from_secs(1)).await;
        within(handle.wait_idle()).await.expect("the worker runs");
        assert_eq!(within(handle.state()).await.expect("runs"), State::Reading);
        let in_flight = restore::<Reader, _>(&*store, "reader").expect("restores").in_flight;
        assert!(in_flight.is_empty(), "the failed stream's end is written at once: {in_flight:?}");
        worker.abort();
        let _ = worker.await;

        let (handle, _worker) = spawn(&store, effects.clone());
        assert_eq!(within(handle.state()).await.expect("runs"), State::Reading);
        tokio::time::sleep(TIMEOUT + Duration::from_secs(1)).await;
        within(handle.wait_idle()).await.expect("the worker runs");
        assert_eq!(effects.opens.load(Ordering::SeqCst), 1, "the stream that failed was not opened again");
        within(handle.shutdown()).await.expect("stops");
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_timed_out_is_not_opened_again_after_a_crash() {
    a_failed_stream_is_not_opened_again_after_a_crash(Failure::Stalls).await;
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_panicked_is_not_opened_again_after_a_crash() {
    a_failed_stream_is_not_opened_again_after_a_crash(Failure::Panics).await;
}
