//! Durable agents spawned again by a release whose effects changed: the
//! action of a step whose tool call is still in flight now sets a timer
//! before it spawns the tool, or opens a stream where it spawned a task.
//! The restart performs that action again to start the work in flight
//! under its id (the step, and the work's rank among what the action
//! starts); an action that no longer starts that work there fails the
//! agent with a typed error (`StoreError::Corrupt`, an effect) instead of
//! leaving its machine waiting for a result that never comes, or starting
//! a stream under the id of the task the store has in flight (whose row
//! the stream's end would never finish: every later restart would perform
//! it again).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, RequestError, WorkerError};
use agent_fsm::store::{CheckpointStore, Durable, MemoryStore, StoreError};

#[path = "support/clerk.rs"]
mod clerk;
use clerk::clerk::{Action, Clerk, Event, State};

/// How a release's `Lookup` starts its work.
#[derive(Clone, Copy, PartialEq)]
enum Release {
    /// A lookup task, which never answers (it is in flight at the stop).
    First,
    /// A deadline, then the lookup task: the task's rank moved.
    TimerFirst,
    /// The lookup as a stream rather than a task.
    Streamed,
    /// The same as the first, answering at once.
    Same,
}

/// The effects of a release, counting the lookups started.
#[derive(Clone)]
struct Lookups {
    release: Release,
    started: Arc<AtomicUsize>,
}

impl Effects<Clerk> for Lookups {
    type Output = ();

    fn perform(&mut self, action: Action, cx: &mut EffectContext<'_, Clerk, ()>) {
        if !matches!(action, Action::Lookup) {
            return;
        }
        let started = Arc::clone(&self.started);
        let lookup = async move {
            started.fetch_add(1, Ordering::SeqCst);
            Event::Add(5)
        };
        match self.release {
            Release::First => cx.spawn_task("lookup", std::future::pending(), |_, _| Event::Hang),
            Release::TimerFirst => {
                cx.deadline(Duration::from_secs(600), Event::Hang);
                cx.spawn_task("lookup", lookup, |_, _| Event::Hang);
            }
            Release::Streamed => cx.stream_keyed("lookup", futures::stream::once(lookup), |_| None),
            Release::Same => cx.spawn_task("lookup", lookup, |_, _| Event::Hang),
        }
    }
}

/// Fails a test whose agent hangs, instead of stalling the suite.
async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future).await.expect("the agent answered in time")
}

/// A store whose agent called, its lookup in flight at the stop.
async fn called() -> Arc<dyn CheckpointStore> {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let effects = Lookups { release: Release::First, started: Arc::default() };
    let (handle, _) =
        Durable::new(Arc::clone(&store), "clerk").spawn(Clerk::new, effects, ExecutorConfig::new()).expect("new");
    // Answered once the step is taken and written; the lookup never answers.
    within(handle.call(Event::Call)).await.expect("taken");
    assert_eq!(within(handle.state()).await.expect("runs"), State::Calling { adds: 0 });
    within(handle.shutdown()).await.expect("stops");
    store
}

/// Spawns the agent again with `release`'s effects, and what its worker
/// answers once it had time to start the lookup.
async fn spawned_again(release: Release) -> (Result<State, RequestError<Clerk>>, usize) {
    let store = called().await;
    let effects = Lookups { release, started: Arc::default() };
    let (handle, _) = Durable::new(store, "clerk")
        .spawn(Clerk::new, effects.clone(), ExecutorConfig::new())
        .expect("the store reads");
    let _ = within(handle.wait_idle()).await;
    (within(handle.state()).await, effects.started.load(Ordering::SeqCst))
}

fn assert_refused(answer: Result<State, RequestError<Clerk>>, release: &str) {
    let Err(RequestError::Failed(error)) = &answer else {
        panic!("{release}: the agent answered {answer:?}, waiting for a lookup never started again");
    };
    let WorkerError::Store(failure) = &**error else { panic!("{release}: {error}") };
    let error = failure.error().downcast_ref::<StoreError>();
    assert!(matches!(error, Some(StoreError::Corrupt { what: "effect", seq: 1, .. })), "{release}: {failure}");
}

#[tokio::test]
async fn a_release_that_moved_the_tool_call_after_a_timer_fails_the_agent() {
    let (answer, started) = spawned_again(Release::TimerFirst).await;
    assert_refused(answer, "a timer first");
    assert_eq!(started, 0);
}

#[tokio::test]
async fn a_release_that_streams_what_was_a_task_fails_the_agent() {
    let (answer, started) = spawned_again(Release::Streamed).await;
    assert_refused(answer, "a stream");
    assert_eq!(started, 0);
}

#[tokio::test]
async fn the_same_effects_start_the_tool_call_again() {
    let (answer, started) = spawned_again(Release::Same).await;
    assert_eq!(answer.expect("runs"), State::Calling { adds: 5 });
    assert_eq!(started, 1);
}
