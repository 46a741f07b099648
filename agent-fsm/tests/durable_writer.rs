//! A durable agent written from a writer thread
//! (`Durability::WhileAction`) whose write fails while the agent has
//! nothing more to do: the failure stops the agent then, with the store's
//! typed error, rather than at a next step that may not come for hours,
//! while its handles report an agent running whose steps the store does
//! not hold.

use std::sync::Arc;
use std::time::Duration;

use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, RequestError, WorkerError};
use agent_fsm::store::{Durability, Durable, MemoryStore, StoreError, restore};

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Notes)]
mod notes {
    #[context]
    pub type Context = Vec<String>;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Open,
    }

    #[events]
    #[derive(Debug)]
    pub enum Event {
        Note(String),
    }

    #[actions]
    #[derive(Debug, Default)]
    pub enum Action {
        #[default]
        Nothing,
    }

    transitions! {
        Open + Note(s) => { ctx.push(s.clone()); } Open / Nothing,
    }
}

use notes::{Event, Notes};

struct Quiet;

impl Effects<Notes> for Quiet {
    type Output = ();

    fn perform(&mut self, _: notes::Action, _: &mut EffectContext<'_, Notes, ()>) {}
}

#[tokio::test]
async fn a_writer_thread_that_fills_the_store_stops_the_idle_agent() {
    // Room for the agent and its first note, not for the second.
    let store = Arc::new(MemoryStore::with_quota(3_000));
    let durable = Durable::new(store.clone(), "notes").durability(Durability::WhileAction);
    let (handle, _) = durable.spawn(|| Notes::new(Vec::new()), Quiet, ExecutorConfig::new()).expect("new");
    handle.call(Event::Note("first".to_owned())).await.expect("taken");
    // Taken, and handed to the writer thread, which the store refuses.
    handle.call(Event::Note("x".repeat(4_096))).await.expect("taken");
    // Nothing else comes: the agent has no next step to learn it from.
    let finished = tokio::time::timeout(Duration::from_secs(20), handle.wait_finished()).await;
    let Ok(error) = finished else { panic!("the idle agent runs on, its last step not in the store") };
    let error = error.expect_err("the store filled up");
    let RequestError::Failed(error) = error else { panic!("not a failure: {error:?}") };
    let WorkerError::Store(failure) = &*error else { panic!("not a store failure: {error:?}") };
    assert!(matches!(failure.error().downcast_ref::<StoreError>(), Some(StoreError::Full(_))), "{failure:?}");
    let restored = restore::<Notes, _>(&*store, "notes").expect("the last good step restores");
    assert_eq!(restored.machine.context(), &["first"]);
}
