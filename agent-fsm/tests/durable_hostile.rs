//! Durable agents spawned from a SQLite file whose effect rows someone
//! edited: a tool call in flight whose key names another step than the
//! one that started it (a step past the log's end, step 0, a later step). The restart would never perform it again, and the machine would
//! wait for its result forever; the spawn is refused with
//! `StoreError::Corrupt` (an effect) instead, before any action is
//! performed again.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig};
use agent_fsm::store::{CheckpointStore, Durable, SqliteStore, StoreError};

#[path = "support/clerk.rs"]
mod clerk;
use clerk::clerk::{Action, Clerk, Event};

/// Starts a lookup that never answers, counting those started.
#[derive(Clone, Default)]
struct Lookups(Arc<AtomicUsize>);

impl Effects<Clerk> for Lookups {
    type Output = ();

    fn perform(&mut self, action: Action, cx: &mut EffectContext<'_, Clerk, ()>) {
        if matches!(action, Action::Lookup) {
            self.0.fetch_add(1, Ordering::SeqCst);
            cx.spawn_task("lookup", std::future::pending(), |_, _| Event::Hang);
        }
    }
}

/// Fails a test whose agent hangs, instead of stalling the suite.
async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future).await.expect("the agent answered in time")
}

fn durable(path: &Path) -> Durable {
    let store: Arc<dyn CheckpointStore> = Arc::new(SqliteStore::open(path).expect("opens"));
    Durable::new(store, "clerk")
}

/// Writes an agent that called (its lookup in flight under key `"1.0"`,
/// started by step 1) and edits the lookup's key to `key`.
async fn written_with_key(path: &Path, key: &str) {
    let (handle, _) = durable(path).spawn(Clerk::new, Lookups::default(), ExecutorConfig::new()).expect("new");
    within(handle.call(Event::Call)).await.expect("taken");
    within(handle.shutdown()).await.expect("stops");
    let raw = rusqlite::Connection::open(path).expect("raw");
    let edited = raw.execute("UPDATE effects SET key = ?1, sum = NULL WHERE key = '1.0'", [key]).expect("edits");
    assert_eq!(edited, 1, "the lookup's row");
}

#[tokio::test]
async fn a_tool_call_whose_key_names_another_step_refuses_the_spawn() {
    // Past the log's end, the agent's creation, the step after the call.
    for key in ["9.0", "0.0", "2.0"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("agents.db");
        written_with_key(&path, key).await;
        let lookups = Lookups::default();
        let spawned = durable(&path).spawn(Clerk::new, lookups.clone(), ExecutorConfig::new());
        let Err(err) = spawned else {
            let (handle, _) = spawned.expect("spawned");
            let state = within(handle.state()).await;
            panic!("key {key}: the agent ran in {state:?}, waiting for a lookup never performed again");
        };
        assert!(matches!(err, StoreError::Corrupt { what: "effect", seq: 1, .. }), "key {key}: {err}");
        assert_eq!(lookups.0.load(Ordering::SeqCst), 0, "no action is performed again");
    }
}
