//! A float that is not finite (NaN, infinity) is refused where it would be
//! written, with an error naming where it is, instead of being written as
//! JSON's `null`, which would not read back: a snapshot, a journal's step,
//! and a durable agent's step on the executor, whose store keeps its last
//! good step and restores to it.

use std::sync::Arc;

use agent_fsm::runtime::{ExecutorConfig, RequestError, WorkerError};
use agent_fsm::snapshot::{self, SnapshotError};
use agent_fsm::store::{CheckpointStore, Durable, Journal, MemoryStore, StoreError, restore};
use serde::{Deserialize, Serialize};

/// What a scoring agent keeps: each tool's last score.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    by_tool: Vec<(String, f64)>,
}

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Scorer)]
mod scorer {
    #[context]
    pub type Context = super::Scores;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Scoring,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Scored { tool: String, score: f64 },
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
    }

    transitions! {
        Scoring + Scored { tool, score } => { ctx.by_tool.push((tool, score)); } Scoring / Nothing,
    }
}

use scorer::{Event, Scorer};

fn scored(tool: &str, score: f64) -> Event {
    Event::Scored { tool: tool.to_owned(), score }
}

/// Asserts that `error` names `what` at `at`.
fn assert_names(error: &dyn std::error::Error, what: &str, at: &str) {
    let text = error.to_string();
    assert!(text.contains(&format!("{what} at {at}")), "{text}");
}

#[test]
fn a_snapshot_holding_nan_is_refused_and_names_where() {
    let mut machine = Scorer::new(Scores::default());
    machine.handle_event(scored("read", 0.5));
    let written = snapshot::to_json(&machine).expect("a finite snapshot writes");
    assert_eq!(snapshot::from_json::<Scorer>(&written).expect("and loads").context(), machine.context());
    machine.handle_event(scored("grep", f64::NAN));
    match snapshot::to_json(&machine) {
        Err(SnapshotError::Data(e)) => assert_names(&e, "NaN", ".context.by_tool[1][1]"),
        other => panic!("{other:?}, not a data error"),
    }
}

#[test]
fn a_journal_step_with_infinity_is_refused_and_the_log_keeps_its_last_good_step() {
    let store = MemoryStore::new();
    let mut machine = Scorer::new(Scores::default());
    let mut journal = Journal::create(&store, "s", &machine).expect("creates");
    let event = scored("read", 0.5);
    let step = journal.begin(&event).expect("begins");
    machine.handle_event(event);
    journal.commit(&store, step, &machine).expect("commits");

    match journal.begin(&scored("grep", f64::INFINITY)) {
        Err(StoreError::Encode(SnapshotError::Data(e))) => assert_names(&e, "inf", ".data.score"),
        other => panic!("{other:?}, not an encoding error"),
    }
    match Journal::<Scorer>::encode(&scored("grep", f64::NEG_INFINITY)) {
        Err(StoreError::Encode(SnapshotError::Data(e))) => assert_names(&e, "-inf", ".data.score"),
        other => panic!("{other:?}, not an encoding error"),
    }
    let restored = restore::<Scorer, _>(&store, "s").expect("restores");
    assert_eq!(restored.machine.context(), machine.context());
}

/// On the executor: the step taking a NaN is not written; the agent stops
/// with the store's error, and the next run resumes from the last good
/// step, where a NaN written as `null` would have stopped every restore.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_durable_agent_refuses_the_step_and_resumes_from_the_last_good_one() {
    let store = Arc::new(MemoryStore::new());
    let agent = Durable::new(store.clone(), "s");
    let (handle, _) = agent.spawn(|| Scorer::new(Scores::default()), (), ExecutorConfig::new()).expect("spawns");
    let run = async {
        handle.send(scored("read", 0.5)).await.expect("sends");
        handle.wait_idle().await.expect("idle");
        handle.send(scored("grep", f64::NAN)).await.expect("sends");
        handle.wait_finished().await
    };
    let stopped = tokio::time::timeout(std::time::Duration::from_secs(30), run).await.expect("stops in time");
    let Err(RequestError::Failed(failure)) = stopped else { panic!("{stopped:?}, not a failed worker") };
    let WorkerError::Store(failure) = &*failure else { panic!("{failure:?}, not the store's error") };
    match failure.error().downcast_ref::<StoreError>() {
        Some(StoreError::Encode(SnapshotError::Data(e))) => assert_names(e, "NaN", ".data.score"),
        other => panic!("{other:?}, not the store's encoding error"),
    }
    assert_eq!(store.agent("s").expect("reads").expect("the agent").next_seq, 2, "one step written");
    let (handle, _) = agent.spawn(|| Scorer::new(Scores::default()), (), ExecutorConfig::new()).expect("resumes");
    let context = handle.inspect(|machine| machine.context().by_tool.clone());
    let context = tokio::time::timeout(std::time::Duration::from_secs(30), context).await.expect("in time");
    assert_eq!(context.expect("reads"), [("read".to_owned(), 0.5)]);
}
