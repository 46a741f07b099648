//! Durable agents whose store no longer replays as written: a release that
//! changed a transition, or a log that lost a row before its newest
//! snapshot. A restart with a tool call still in flight replays the log
//! from the snapshot before that call, further back than `restore` reads;
//! there too a step that does not reach the state the log recorded, or a
//! missing step, refuses the spawn with a typed error before any action is
//! performed again, instead of running a machine that is not the one the
//! store holds.

use std::num::NonZeroU64;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig};
use agent_fsm::store::{CheckpointStore, Durable, SnapshotPolicy, SqliteStore, StoreError, restore};

/// The machine as the first release wrote it: a call looks something up.
#[path = "support/clerk.rs"]
mod first_release;
use first_release::clerk as before;

/// The same machine in a later release, whose call no longer leaves
/// `Ready` (a new event opens the call): the log written by the first does
/// not replay on it.
#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Clerk)]
mod after {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Ready,
        Calling {
            adds: u32,
        },
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Call,
        Add(u32),
        Hang,
        Open,
    }

    #[actions]
    #[derive(Debug, Default)]
    pub enum Action {
        #[default]
        Nothing,
        Lookup,
    }

    transitions! {
        Ready + Call => Ready / Lookup,
        Ready + Open => Calling { adds: 0 } / Nothing,
        Calling { adds } + Add(k) => Calling { adds: adds + k } / Nothing,
        Calling { .. } + Hang => Ready / Nothing,
    }
}

/// Starts a lookup that never answers (a tool still running at the stop)
/// and sends two adds, and counts the lookups started.
#[derive(Clone, Default)]
struct Lookups(Arc<AtomicUsize>);

impl Effects<before::Clerk> for Lookups {
    type Output = ();

    fn perform(&mut self, action: before::Action, cx: &mut EffectContext<'_, before::Clerk, ()>) {
        if matches!(action, before::Action::Lookup) {
            self.0.fetch_add(1, Ordering::SeqCst);
            cx.spawn_task("lookup", std::future::pending(), |_, _| before::Event::Add(0));
            // Steps after the call's while its lookup runs (external input
            // waits for the lookup).
            cx.send(before::Event::Add(1));
            cx.send(before::Event::Add(2));
        }
    }
}

impl Effects<after::Clerk> for Lookups {
    type Output = ();

    fn perform(&mut self, action: after::Action, cx: &mut EffectContext<'_, after::Clerk, ()>) {
        if matches!(action, after::Action::Lookup) {
            self.0.fetch_add(1, Ordering::SeqCst);
            cx.spawn_task("lookup", std::future::pending(), |_, _| after::Event::Add(0));
        }
    }
}

/// Fails a test whose agent hangs, instead of stalling the suite.
async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future).await.expect("the agent answered in time")
}

fn durable(store: &Arc<SqliteStore>) -> Durable {
    let store: Arc<dyn CheckpointStore> = store.clone();
    Durable::new(store, "clerk").snapshots(SnapshotPolicy::Every(NonZeroU64::MIN))
}

/// Runs the first release's agent in the store at `path`: a call whose
/// lookup is still in flight at the stop, then two adds, with a snapshot
/// at every step (so `restore` replays nothing, and only the restart's
/// replay from before the call reads the older steps).
async fn write_first_release(path: &Path) -> Arc<SqliteStore> {
    let store = Arc::new(SqliteStore::open(path).expect("opens"));
    let lookups = Lookups::default();
    let (handle, _) = durable(&store).spawn(before::Clerk::new, lookups.clone(), ExecutorConfig::new()).expect("new");
    handle.send(before::Event::Call).await.expect("sent");
    // The lookup keeps the agent busy: wait for the adds to be taken.
    within(async {
        while handle.state().await.expect("runs") != (before::State::Calling { adds: 3 }) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    within(handle.shutdown()).await.expect("stops");
    assert_eq!(lookups.0.load(Ordering::SeqCst), 1);
    assert_eq!(store.agent("clerk").expect("reads").expect("there").next_seq, 4);
    store
}

#[tokio::test]
async fn a_changed_transition_before_the_newest_snapshot_refuses_the_spawn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = write_first_release(&dir.path().join("agents.db")).await;
    // `restore` starts from the snapshot at step 3 and replays nothing.
    let restored = restore::<after::Clerk, _>(&*store, "clerk").expect("the newest snapshot reads");
    assert_eq!(restored.machine.state(), &after::State::Calling { adds: 3 });

    let lookups = Lookups::default();
    let spawned = durable(&store).spawn(after::Clerk::new, lookups.clone(), ExecutorConfig::new());
    let Err(err) = spawned else {
        let (handle, _) = spawned.expect("spawned");
        let state = within(handle.state()).await;
        panic!("the agent ran in {state:?}, while its store says `Calling {{ adds: 3 }}`");
    };
    assert!(matches!(err, StoreError::Corrupt { what: "event", seq: 1, .. }), "{err}");
    assert_eq!(lookups.0.load(Ordering::SeqCst), 0, "no action is performed again");
    // Nothing was written: the first release still reads it.
    assert_eq!(store.agent("clerk").expect("reads").expect("there").next_seq, 4);
    assert!(restore::<before::Clerk, _>(&*store, "clerk").is_ok());
}

#[tokio::test]
async fn a_step_missing_before_the_newest_snapshot_refuses_the_spawn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("agents.db");
    let store = write_first_release(&path).await;
    {
        let raw = rusqlite::Connection::open(&path).expect("raw");
        raw.execute("DELETE FROM events WHERE agent = 'clerk' AND seq = 2", []).expect("damage");
    }
    // The log still ends at step 3, whose snapshot `restore` reads.
    assert!(restore::<before::Clerk, _>(&*store, "clerk").is_ok());

    let lookups = Lookups::default();
    let spawned = durable(&store).spawn(before::Clerk::new, lookups.clone(), ExecutorConfig::new());
    let Err(err) = spawned else {
        let (handle, _) = spawned.expect("spawned");
        let state = within(handle.state()).await;
        panic!("the agent ran in {state:?} without its step 2");
    };
    assert!(matches!(err, StoreError::Corrupt { what: "log", seq: 2, .. }), "{err}");
    assert_eq!(lookups.0.load(Ordering::SeqCst), 0, "no action is performed again");
}
