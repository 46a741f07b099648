//! The worker's life from history to stop: a bounded history that counts
//! what it drops, history that chains and replays to the final state, a
//! terminal state that stops the worker and stays readable, dropping every
//! handle, a sticky worker failure, and queries served while effects run.

mod support;

use std::time::Duration;

use agent_fsm::runtime::{self, EffectContext, Effects, Performing, RequestError, SendError, WorkerError, replay};
use agent_fsm::{StateMachine, Status};
use support::run::{input, start};
use support::{Action, ActionKind, Agent, Event, Reply, Scripted, StateKind, assert_chained, config};
use tokio::time::{Instant, sleep};

#[tokio::test(start_paused = true)]
async fn history_capacity_bounds_hops_and_interrupts_and_counts_what_it_drops() {
    async fn session(capacity: Option<usize>) -> runtime::History<Agent> {
        let script = Scripted::new([Reply::tools(&["a:10"]), Reply::text(&["done"])]);
        let config = match capacity {
            Some(capacity) => config().history_capacity(capacity),
            None => config(),
        };
        let handle = start(&script, config);
        crate::support::within(handle.call(input("go"))).await.unwrap();
        crate::support::within(handle.wait_idle()).await.unwrap();
        for cause in ["one", "two", "three"] {
            handle.interrupt(cause).await.unwrap();
        }
        crate::support::within(handle.history()).await.unwrap()
    }
    let all = session(None).await;
    assert_eq!(all.evicted(), 0);
    let hops = all.transitions().len() as u64;
    assert!(hops >= 3, "{hops}");
    let causes = |h: &runtime::History<Agent>| h.interrupts().map(|i| i.cause.to_string()).collect::<Vec<_>>();
    assert_eq!(causes(&all), ["one", "two", "three"]);

    let two = session(Some(2)).await;
    assert_eq!((two.transitions().len(), two.evicted()), (2, hops - 2));
    assert_eq!(causes(&two), ["two", "three"]);

    let none = session(Some(0)).await;
    assert_eq!((none.transitions().len(), none.evicted()), (0, hops));
    assert!(causes(&none).is_empty());
    // Time per state is still summed.
    assert_eq!(none.time_in(StateKind::ExecutingTools), all.time_in(StateKind::ExecutingTools));
}

#[tokio::test(start_paused = true)]
async fn history_chains_and_replay_reproduces_the_final_state() {
    let script = Scripted::new([
        Reply::tools(&["a:30", "b:10"]),
        Reply::error(),
        Reply::text(&["after retry"]),
        Reply::tools(&["c:hang"]),
    ]);
    let handle = start(&script, config());
    handle.send(input("one")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();
    handle.send(input("two")).await.unwrap();
    sleep(Duration::from_millis(100)).await;
    handle.interrupt("enough").await.unwrap();
    handle.send(input("three")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();

    let history = crate::support::within(handle.history()).await.unwrap();
    assert_chained(&history);
    let hops: Vec<_> = history.transitions().collect();
    assert_eq!(hops.first().unwrap().from, StateKind::Waiting);
    assert_eq!(Status::In(hops.last().unwrap().to), handle.status());
    assert!(hops.iter().any(|h| h.to == StateKind::ProcessingLlmResponse), "transient hops are recorded");

    let log = history.events().unwrap();
    assert_eq!(log.len() as u64, history.steps());
    let mut fresh = Agent::new(3);
    replay(&mut fresh, log).unwrap();
    let state = handle.state().await.unwrap();
    assert_eq!(fresh.state(), &state);
    let context = crate::support::within(handle.inspect(|m| m.context().clone())).await.unwrap();
    assert_eq!(fresh.context(), &context);

    // A different machine diverges, and replay says where.
    let mut other = Agent::new(1);
    assert!(replay(&mut other, log).is_err());
}

#[tokio::test(start_paused = true)]
async fn reaching_a_terminal_state_stops_the_worker() {
    let script = Scripted::new([]);
    let handle = start(&script, config());
    let delivered = crate::support::within(handle.call(Event::Shutdown)).await.unwrap();
    assert_eq!(
        (delivered.action(), delivered.state()),
        (Some(support::ActionKind::Shutdown), Some(support::StateKind::Done))
    );
    assert_eq!(crate::support::within(handle.wait_finished()).await.unwrap(), support::StateKind::Done);
    assert!(handle.is_finished());
    assert!(matches!(handle.send(input("late")).await, Err(SendError::Closed(_))));
    assert!(matches!(handle.wait_idle().await, Err(RequestError::Closed)));
}

#[tokio::test(start_paused = true)]
async fn the_final_state_and_history_stay_readable_once_terminal() {
    let script = Scripted::new([Reply::tools(&["a:10"]), Reply::text(&["answer"])]);
    let handle = start(&script, config());
    handle.send(input("question")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();
    sleep(Duration::from_secs(3)).await;
    crate::support::within(handle.call(Event::Shutdown)).await.unwrap();
    assert_eq!(crate::support::within(handle.wait_finished()).await.unwrap(), support::StateKind::Done);
    // Much later, the machine and its history are still there, as the
    // worker left them.
    sleep(Duration::from_secs(60)).await;
    assert_eq!(handle.state().await.unwrap(), support::State::Done);
    let transcript = crate::support::within(handle.inspect(|m| m.context().transcript.clone())).await.unwrap();
    assert_eq!(transcript, ["calling tools", "answer"]);
    let history = crate::support::within(handle.history()).await.unwrap();
    assert_chained(&history);
    assert_eq!(history.current().0, Status::In(StateKind::Done));
    assert_eq!(history.steps(), handle.steps());
    // The last stay ended when the worker stopped, not when it was read.
    assert_eq!(history.time_in(StateKind::Done), Duration::ZERO);
    assert!(history.time_in(StateKind::Waiting) >= Duration::from_secs(3));
    // The event log reproduces the run.
    let mut fresh = Agent::new(3);
    replay(&mut fresh, history.events().unwrap()).unwrap();
    assert_eq!(fresh, crate::support::within(handle.inspect(Agent::clone)).await.unwrap());
    // A panicking query is still reported as such.
    let err = crate::support::within(handle.inspect(|_| -> u32 { panic!("bad query") })).await.unwrap_err();
    assert!(matches!(err, RequestError::InspectPanicked(ref m) if m == "bad query"));
    assert_eq!(handle.with_history(|h| h.steps()).await.unwrap(), history.steps());
}

#[tokio::test(start_paused = true)]
async fn a_failed_worker_leaves_nothing_to_read() {
    let handle = runtime::spawn(Agent::new(3), PanicOnDisplay, runtime::ExecutorConfig::new());
    handle.send(input("go")).await.unwrap();
    assert!(crate::support::within(handle.wait_finished()).await.is_err());
    assert!(matches!(handle.state().await, Err(RequestError::Failed(_))));
    assert!(matches!(crate::support::within(handle.history()).await, Err(RequestError::Failed(_))));
}

#[tokio::test(start_paused = true)]
async fn dropping_every_handle_delivers_what_is_queued_then_stops() {
    let script = Scripted::new([Reply::tools(&["a:100"])]);
    let (handle, worker) = runtime::pair(Agent::new(3), script.clone(), config());
    let worker = tokio::spawn(worker);
    handle.send(input("one")).await.unwrap();
    handle.send(input("two")).await.unwrap();
    handle.send(input("three")).await.unwrap();
    drop(handle);
    crate::support::within(worker).await.unwrap();
    // one (+ follow-up after its tool), two, three: all delivered and performed.
    assert_eq!(script.produced().llm_requests, 4);
}

/// Effects that panic on the first `Display`.
struct PanicOnDisplay;

impl Effects<Agent> for PanicOnDisplay {
    type Output = ();

    fn perform(&mut self, action: Action, cx: &mut EffectContext<'_, Agent, ()>) {
        match action {
            Action::Display(_) => panic!("display is broken"),
            Action::SendLlmRequest { .. } => cx.send(Event::Delta("x".to_owned())),
            _ => {}
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_worker_failure_is_sticky_and_distinct_from_closed() {
    let handle = runtime::spawn(Agent::new(3), PanicOnDisplay, runtime::ExecutorConfig::new());
    handle.send(input("go")).await.unwrap();
    let err = crate::support::within(handle.wait_finished()).await.unwrap_err();
    let RequestError::Failed(cause) = &err else { panic!("expected Failed, got {err:?}") };
    assert!(
        matches!(&**cause, WorkerError::EffectsPanicked { performing: Performing::Action(ActionKind::Display), key: None, message } if message == "display is broken")
    );
    assert_eq!(err.to_string(), "the machine's worker failed", "lower-case Display without trailing punctuation");
    assert_eq!(cause.to_string(), "the effects panicked while performing `Display`: display is broken");
    // Every later call reports the same cause.
    match handle.send(input("again")).await {
        Err(SendError::Failed(event, again)) => {
            assert_eq!(event, input("again"));
            assert!(std::sync::Arc::ptr_eq(cause, &again));
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert!(matches!(handle.state().await, Err(RequestError::Failed(_))));
    assert!(matches!(handle.interrupt("x").await, Err(RequestError::Failed(_))));
    assert!(matches!(handle.shutdown().await, Err(RequestError::Failed(_))));
}

#[tokio::test(start_paused = true)]
async fn queries_are_served_while_effects_run() {
    let script = Scripted::new([Reply::tools(&["h:hang"])]);
    let handle = start(&script, config().inbox_capacity(1));
    handle.send(input("go")).await.unwrap();
    sleep(Duration::from_millis(50)).await;

    // The tool hangs, yet queries answer at once, between two steps.
    let before = Instant::now();
    let state = handle.state().await.unwrap();
    assert!(matches!(state, support::State::ExecutingTools { ref pending, .. } if pending == &["h:hang"]));
    assert_eq!(handle.status().to_string(), "ExecutingTools");
    assert_eq!(before.elapsed(), Duration::ZERO);

    // The inbox (capacity 1) holds one event while the tool runs.
    handle.try_send(input("queued")).unwrap();
    assert!(matches!(handle.try_send(input("full")), Err(SendError::Full(_))));

    // A panicking query is reported and the worker carries on.
    let err = crate::support::within(handle.inspect(|_| -> u32 { panic!("bad query") })).await.unwrap_err();
    assert!(matches!(err, RequestError::InspectPanicked(ref m) if m == "bad query"));
    assert_eq!(handle.steps(), 3);
    handle.interrupt("unstick").await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();
    let inputs = crate::support::within(handle.inspect(|m| m.context().inputs.clone())).await.unwrap();
    assert_eq!(inputs, ["go", "queued"]);
}
