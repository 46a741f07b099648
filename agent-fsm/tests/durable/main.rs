//! Durable agents (`store::Durable`): an agent whose worker is dropped in
//! the middle of its work (a crash: no stop protocol runs) and spawned
//! again from its store continues exactly: each logged event was handled
//! once, the tasks and streams in flight are performed again under the same
//! keys (a stream skipping what the machine already took), timers resume
//! with the time they had left, an approval is answered after the restart,
//! a fork continues on its own, each durability mode writes when it says,
//! and a store that fails mid-run stops the agent with a typed error while
//! its last good checkpoint stays readable. The tests that loop over
//! `stores()` run on Postgres too when `AGENT_FSM_PG_URL` is set.

use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Duration;

use agent_fsm::runtime::{ExecutorConfig, Outcome, RequestError, WorkerError};
use agent_fsm::store::{
    CheckpointStore, Durability, Durable, MemoryStore, SnapshotPolicy, SqliteStore, Start, StoreError, restore,
};

#[path = "../stores/mod.rs"]
mod stores;

mod desk;

use desk::{
    Desk, Event, Gated, Running, State, Taken, WINDOW, assert_gapless, release, stores, tokio_clock, until, within,
};

#[tokio::test]
async fn tools_in_flight_at_a_crash_are_performed_again_and_each_result_is_taken_once() {
    for (store, _dir) in stores() {
        let durable = Durable::new(Arc::clone(&store), "desk");
        let effects = Gated::new();
        let agent = Running::spawn(&durable, effects.clone());
        assert_eq!(agent.start, Start::New);
        agent.handle.send(Event::Run(3)).await.expect("sent");
        // One of the three tools finishes; the other two are running.
        effects.permits.add_permits(1);
        until(&agent, |taken| taken.results.len() == 1).await;
        agent.crash().await;

        let effects = Gated::new();
        let agent = Running::spawn(&durable, effects.clone());
        assert!(matches!(agent.start, Start::Resumed { .. }));
        assert_eq!(agent.state().await, State::Tools { left: 2 });
        release(&agent, &effects, 2).await;
        // The two unfinished tools ran again, under their keys; the
        // finished one did not.
        let again = effects.started();
        assert_eq!(again.values().sum::<u32>(), 2, "{again:?}");
        assert!(again.keys().all(|key| key.starts_with("tool-")), "{again:?}");
        assert_eq!(agent.state().await, State::Idle);
        let mut results = agent.taken().await.results;
        results.sort();
        assert_eq!(results, ["tool-0", "tool-1", "tool-2"]);
        agent.handle.shutdown().await.expect("stops");
        assert_gapless(&*store, "desk");
        let restored = restore::<Desk, _>(&*store, "desk").expect("restores");
        assert_eq!(restored.machine.context().results.len(), 3);
        assert!(restored.in_flight.is_empty(), "{:?}", restored.in_flight);
    }
}

#[tokio::test]
async fn a_stream_performed_again_skips_the_items_the_machine_took() {
    for (store, _dir) in stores() {
        let durable = Durable::new(Arc::clone(&store), "desk");
        let effects = Gated::new();
        let agent = Running::spawn(&durable, effects.clone());
        agent.handle.send(Event::Stream(5)).await.expect("sent");
        effects.permits.add_permits(2);
        until(&agent, |taken| taken.items.len() == 2).await;
        assert_eq!(agent.taken().await.items, [0, 1]);
        agent.crash().await;

        let effects = Gated::new();
        let agent = Running::spawn(&durable, effects.clone());
        assert_eq!(agent.state().await, State::Streaming);
        release(&agent, &effects, 5).await;
        assert_eq!(agent.state().await, State::Idle);
        assert_eq!(agent.taken().await.items, [0, 1, 2, 3, 4]);
        agent.handle.shutdown().await.expect("stops");
        assert_gapless(&*store, "desk");
    }
}

#[tokio::test(start_paused = true)]
async fn a_deadline_resumes_with_the_time_it_had_left() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let durable = Durable::new(Arc::clone(&store), "desk").clock(tokio_clock());
    let agent = Running::spawn(&durable, Gated::new());
    agent.handle.send(Event::Ask).await.expect("sent");
    agent.idle().await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    agent.crash().await;

    let agent = Running::spawn(&durable, Gated::new());
    assert_eq!(agent.state().await, State::Asking { request: 0 });
    // 20 s were left: not fired a moment before, fired at 20 s.
    tokio::time::sleep(Duration::from_millis(19_900)).await;
    assert_eq!(agent.state().await, State::Asking { request: 0 });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(agent.state().await, State::Idle);
    assert_eq!(agent.taken().await.timeouts, 1);
}

#[tokio::test(start_paused = true)]
async fn a_deadline_that_passed_while_the_agent_was_down_fires_at_once() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let durable = Durable::new(Arc::clone(&store), "desk").clock(tokio_clock());
    let agent = Running::spawn(&durable, Gated::new());
    agent.handle.send(Event::Ask).await.expect("sent");
    agent.idle().await;
    agent.crash().await;
    tokio::time::sleep(WINDOW * 2).await;

    let agent = Running::spawn(&durable, Gated::new());
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(agent.state().await, State::Idle);
    assert_eq!(agent.taken().await.timeouts, 1);
    // It fired once: the store has it finished.
    agent.handle.shutdown().await.expect("stops");
    assert!(restore::<Desk, _>(&*store, "desk").expect("restores").in_flight.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_backoff_resumes_with_the_time_it_had_left_and_still_holds_input() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let durable = Durable::new(Arc::clone(&store), "desk").clock(tokio_clock());
    let agent = Running::spawn(&durable, Gated::new());
    agent.handle.send(Event::Fail).await.expect("sent");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(agent.handle.status().to_string(), "Backoff");
    agent.crash().await;

    let agent = Running::spawn(&durable, Gated::new());
    // `Stop` waits for the backoff: taken in `Backoff` it would be refused.
    agent.handle.send(Event::Stop).await.expect("sent");
    tokio::time::sleep(Duration::from_millis(2_900)).await;
    assert_eq!(agent.state().await, State::Backoff);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let finished = within(agent.handle.wait_finished()).await;
    assert!(finished.is_ok(), "{finished:?}");
    let restored = restore::<Desk, _>(&*store, "desk").expect("restores");
    assert_eq!(restored.machine.state(), &State::Done);
    assert_eq!(restored.machine.context().retries, 1);
}

#[tokio::test]
async fn an_approval_after_a_restart_answers_the_pending_request_and_a_stale_one_is_refused() {
    for (store, _keep) in stores() {
        let durable = Durable::new(Arc::clone(&store), "desk");
        let agent = Running::spawn(&durable, Gated::new());
        agent.handle.send(Event::Ask).await.expect("sent");
        agent.idle().await;
        agent.crash().await;

        let agent = Running::spawn(&durable, Gated::new());
        let stale = within(agent.handle.call(Event::Approve(7))).await.expect("delivered");
        assert!(matches!(stale.outcome, Outcome::Refused { .. }), "{stale:?}");
        let answer = within(agent.handle.call(Event::Approve(0))).await.expect("delivered");
        assert!(matches!(answer.outcome, Outcome::Moved { .. }), "{answer:?}");
        assert_eq!(agent.taken().await.approved, [0]);
        agent.handle.shutdown().await.expect("stops");
        let restored = restore::<Desk, _>(&*store, "desk").expect("restores");
        assert_eq!(restored.machine.context().approved, [0]);
        // The deadline of the answered request is over, in the store too.
        assert!(restored.in_flight.is_empty(), "{:?}", restored.in_flight);
    }
}

#[tokio::test]
async fn a_fork_before_a_tool_call_continues_on_its_own() {
    for (store, _keep) in stores() {
        let durable = Durable::new(Arc::clone(&store), "desk");
        let effects = Gated::new();
        let agent = Running::spawn(&durable, effects.clone());
        agent.handle.send(Event::Stream(1)).await.expect("sent");
        release(&agent, &effects, 1).await;
        let before_tools = store.agent("desk").expect("reads").expect("there").next_seq - 1;
        agent.handle.send(Event::Run(2)).await.expect("sent");
        release(&agent, &effects, 2).await;
        agent.handle.shutdown().await.expect("stops");

        store.fork("desk", before_tools, "desk-fork").expect("forks");
        let forked = Durable::new(Arc::clone(&store), "desk-fork");
        let effects = Gated::new();
        // The stream's end came after its last item's step: at the fork's step
        // it is still in flight, and is performed again, its items skipped.
        effects.permits.add_permits(1);
        let fork = Running::spawn(&forked, effects.clone());
        assert!(matches!(fork.start, Start::Resumed { .. }));
        assert_eq!(fork.taken().await.results, Vec::<String>::new());
        fork.handle.send(Event::Ask).await.expect("sent");
        fork.idle().await;
        assert_eq!(fork.state().await, State::Asking { request: 0 });
        fork.handle.shutdown().await.expect("stops");

        let original = restore::<Desk, _>(&*store, "desk").expect("restores");
        let copy = restore::<Desk, _>(&*store, "desk-fork").expect("restores");
        assert_eq!(original.machine.context().results.len(), 2);
        assert_eq!(original.machine.state(), &State::Idle);
        assert_eq!(copy.machine.state(), &State::Asking { request: 0 });
        assert!(copy.machine.context().results.is_empty());
        assert_gapless(&*store, "desk");
        assert_gapless(&*store, "desk-fork");
    }
}

#[tokio::test]
async fn on_stop_writes_only_at_the_stop_and_while_action_writes_every_step() {
    for (durability, (store, _keep)) in [Durability::OnStop, Durability::WhileAction]
        .into_iter()
        .flat_map(|d| stores().into_iter().map(move |s| (d, s)))
    {
        let durable = Durable::new(Arc::clone(&store), "desk").durability(durability);
        let effects = Gated::new();
        let agent = Running::spawn(&durable, effects.clone());
        agent.handle.send(Event::Run(2)).await.expect("sent");
        release(&agent, &effects, 2).await;
        let written = || store.agent("desk").expect("reads").expect("there").next_seq - 1;
        if durability == Durability::OnStop {
            assert_eq!(written(), 0, "nothing before the stop");
        } else {
            // The writer thread gets there shortly.
            for _ in 0..1000 {
                if written() == 3 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            assert_eq!(written(), 3);
        }
        agent.handle.shutdown().await.expect("stops");
        assert_eq!(written(), 3, "{durability:?}");
        assert_gapless(&*store, "desk");
    }
}

#[tokio::test]
async fn a_crash_under_on_stop_loses_the_steps_since_the_spawn() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let durable = Durable::new(Arc::clone(&store), "desk").durability(Durability::OnStop);
    let agent = Running::spawn(&durable, Gated::new());
    agent.handle.send(Event::Ask).await.expect("sent");
    agent.idle().await;
    agent.crash().await;
    let agent = Running::spawn(&durable, Gated::new());
    assert_eq!(agent.state().await, State::Idle);
}

#[tokio::test]
async fn a_store_that_fills_stops_the_agent_with_a_typed_error_and_keeps_the_last_good_step() {
    let store = Arc::new(MemoryStore::with_quota(2_000));
    let durable = Durable::new(store.clone(), "desk").snapshots(SnapshotPolicy::Every(NonZeroU64::MIN));
    let effects = Gated::new();
    let agent = Running::spawn(&durable, effects.clone());
    let mut failure = None;
    for _ in 0..100 {
        if agent.handle.send(Event::Ask).await.is_err() {
            break;
        }
        if let Err(error) = agent.handle.call(Event::Approve(u32::MAX)).await {
            failure = Some(error);
            break;
        }
        let request = agent.taken().await.next_request - 1;
        if let Err(error) = agent.handle.call(Event::Approve(request)).await {
            failure = Some(error);
            break;
        }
    }
    let error = within(agent.handle.wait_finished()).await.expect_err("the store filled up");
    let RequestError::Failed(error) = error else { panic!("not a failure: {error:?}") };
    let WorkerError::Store(failure_inside) = &*error else { panic!("not a store failure: {error:?} ({failure:?})") };
    assert!(
        matches!(failure_inside.error().downcast_ref::<StoreError>(), Some(StoreError::Full(_))),
        "{failure_inside:?}"
    );
    // The last good checkpoint is whole.
    let restored = restore::<Desk, _>(&*store, "desk").expect("the last good step restores");
    assert!(restored.next_seq > 1);
}

/// Another machine, to resume a store it did not write.
#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Other)]
mod other {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Only,
    }
    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Poke,
    }
    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
    }
    transitions! {
        Only + Poke => Only / Nothing,
    }
}

#[tokio::test]
async fn spawning_from_a_store_another_machine_wrote_is_a_typed_error_and_leaves_the_agent_readable() {
    for (store, _dir) in stores() {
        let durable = Durable::new(Arc::clone(&store), "desk");
        let agent = Running::spawn(&durable, Gated::new());
        agent.handle.send(Event::Ask).await.expect("sent");
        agent.idle().await;
        agent.handle.shutdown().await.expect("stops");

        let wrong = durable.spawn(other::Other::new, (), ExecutorConfig::new());
        assert!(matches!(wrong, Err(StoreError::WrongMachine { .. })), "{:?}", wrong.map(|(_, start)| start));

        // A log another machine wrote, forked under a new id: still refused.
        let (handle, start) = Durable::new(Arc::clone(&store), "other")
            .spawn(other::Other::new, (), ExecutorConfig::new())
            .expect("a new agent");
        assert_eq!(start, Start::New);
        handle.send(other::Event::Poke).await.expect("sent");
        handle.wait_idle().await.expect("idle");
        handle.shutdown().await.expect("stops");
        store.fork("other", 1, "copy").expect("forks");
        let unreadable = Durable::new(Arc::clone(&store), "copy").spawn(
            || Desk::new(Taken::default()),
            Gated::new(),
            ExecutorConfig::new(),
        );
        assert!(matches!(unreadable, Err(StoreError::WrongMachine { .. })), "{:?}", unreadable.map(|(_, s)| s));
        // The agent's own checkpoint is untouched by the refusals.
        let restored = restore::<Desk, _>(&*store, "desk").expect("restores");
        assert_eq!(restored.machine.state(), &State::Asking { request: 0 });
    }
}

#[tokio::test]
async fn a_corrupt_row_or_a_newer_format_is_a_typed_error_at_spawn() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("agents.db");
    let store: Arc<dyn CheckpointStore> = Arc::new(SqliteStore::open(&path).expect("opens"));
    let durable = Durable::new(Arc::clone(&store), "desk");
    let agent = Running::spawn(&durable, Gated::new());
    agent.handle.send(Event::Ask).await.expect("sent");
    agent.idle().await;
    agent.handle.shutdown().await.expect("stops");
    let raw = rusqlite::Connection::open(&path).expect("raw");
    raw.execute("UPDATE effects SET event = 'garbage', sum = NULL WHERE agent = 'desk'", []).expect("damage");
    let spawned = durable.spawn(|| Desk::new(Taken::default()), Gated::new(), ExecutorConfig::new());
    assert!(matches!(spawned, Err(StoreError::Corrupt { what: "effect", .. })), "{:?}", spawned.map(|(_, s)| s));
    raw.execute("UPDATE events SET event = 'garbage', sum = NULL WHERE agent = 'desk' AND seq = 1", [])
        .expect("damage");
    let spawned = durable.spawn(|| Desk::new(Taken::default()), Gated::new(), ExecutorConfig::new());
    assert!(matches!(spawned, Err(StoreError::Corrupt { what: "event", seq: 1, .. })), "{:?}", spawned.map(|(_, s)| s));
    raw.execute("UPDATE agents SET format = 9 WHERE agent = 'desk'", []).expect("newer");
    let spawned = durable.spawn(|| Desk::new(Taken::default()), Gated::new(), ExecutorConfig::new());
    assert!(matches!(spawned, Err(StoreError::UnknownFormat { found: 9, .. })), "{:?}", spawned.map(|(_, s)| s));
    // Nothing was written by the refused spawns: checkpoint 0 still reads.
    assert_eq!(store.agent("desk").expect("reads").expect("there").next_seq, 2);
}

#[tokio::test]
async fn an_agent_that_ended_is_not_given_its_work_again() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let durable = Durable::new(Arc::clone(&store), "desk");
    let effects = Gated::new();
    let agent = Running::spawn(&durable, effects.clone());
    agent.handle.send(Event::Run(2)).await.expect("sent");
    until(&agent, |_| effects.started().len() == 2).await;
    agent.handle.send(Event::Abort).await.expect("sent");
    within(agent.handle.wait_finished()).await.expect("ended");

    let effects = Gated::new();
    let (handle, start) =
        durable.spawn(|| Desk::new(Taken::default()), effects.clone(), ExecutorConfig::new()).expect("reads");
    assert!(matches!(start, Start::Resumed { .. }));
    within(handle.wait_finished()).await.expect("ends at once");
    assert_eq!(*effects.spawns.lock().expect("a count"), 0, "the tools' action was performed again");
}

#[tokio::test]
async fn a_stream_that_ended_before_a_stop_is_not_opened_again() {
    for (store, _dir) in stores() {
        let durable = Durable::new(Arc::clone(&store), "desk");
        let effects = Gated::new();
        effects.permits.add_permits(1);
        let agent = Running::spawn(&durable, effects.clone());
        agent.handle.send(Event::Stream(1)).await.expect("sent");
        agent.idle().await;
        assert_eq!(agent.state().await, State::Idle);
        agent.handle.shutdown().await.expect("stops");
        assert!(restore::<Desk, _>(&*store, "desk").expect("restores").in_flight.is_empty());

        let effects = Gated::new();
        let agent = Running::spawn(&durable, effects.clone());
        agent.idle().await;
        assert_eq!(*effects.spawns.lock().expect("a count"), 0, "the ended stream was opened again");
        assert_eq!(agent.taken().await.items, [0]);
    }
}
