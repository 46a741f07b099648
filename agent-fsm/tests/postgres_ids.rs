//! Agent ids that Postgres text cannot hold (a NUL byte, which the SQLite
//! and in-memory stores keep as any other character): the Postgres store
//! answers as for an id it does not hold, and refuses to add one with a
//! write error that says why, rather than a `read failed: db error` that
//! reads as the server failing (one a supervisor would retry forever).
//! Skipped without `AGENT_FSM_PG_URL`.

use std::sync::Arc;
use std::time::SystemTime;

use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig};
use agent_fsm::store::{CheckpointStore, Durable, EffectKind, Snapshot, StoreError};

#[path = "stores/mod.rs"]
mod stores;

#[path = "support/clerk.rs"]
mod clerk;
use clerk::clerk::{Action, Clerk};

struct Quiet;

impl Effects<Clerk> for Quiet {
    type Output = ();

    fn perform(&mut self, _: Action, _: &mut EffectContext<'_, Clerk, ()>) {}
}

const ID: &str = "user\0admin";

fn assert_says_nul(what: &str, result: Result<impl std::fmt::Debug, StoreError>) {
    match result {
        Err(StoreError::Write(e)) if e.to_string().contains("NUL") => {}
        other => panic!("{what}: {other:?}, not a write error naming the NUL byte"),
    }
}

fn assert_unknown<T: std::fmt::Debug>(what: &str, result: Result<T, StoreError>) {
    assert!(matches!(result, Err(StoreError::UnknownAgent(ref id)) if id == ID), "{what}: {result:?}");
}

#[test]
fn an_id_with_a_nul_byte_is_not_held_and_is_refused_with_why() {
    let Some(pg) = stores::pg::Schema::fresh() else { return };
    let store = &pg.store;
    assert_eq!(store.agent(ID).expect("a plain answer"), None);
    let snapshot = Snapshot { format: 1, state: "Ready".to_owned(), data: "{}".to_owned() };
    assert_says_nul("create", store.create(ID, "Clerk", SystemTime::now(), &snapshot));
    assert_unknown("snapshot", store.snapshot_at_or_before(ID, 0));
    assert_unknown("events", store.events(ID, 0, 1));
    assert_unknown("in flight", store.in_flight(ID, 0));
    assert_unknown("checkpoints", store.checkpoints(ID));
    assert_unknown("finish", store.finish(ID, &[(EffectKind::Task, "1.0".to_owned())]));
    assert_unknown("fork", store.fork(ID, 0, "copy"));
    assert!(store.agents().expect("lists").is_empty());
}

#[tokio::test]
async fn a_durable_agent_with_such_an_id_is_refused_with_why() {
    let Some(pg) = stores::pg::Schema::fresh() else { return };
    let store: Arc<dyn CheckpointStore> = Arc::new(pg.store.clone());
    let spawned = Durable::new(store, ID).spawn(Clerk::new, Quiet, ExecutorConfig::new()).map(|(_, start)| start);
    assert_says_nul("spawn", spawned);
}
