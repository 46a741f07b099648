//! Shutdown as a protocol: from every state of the agent in `support/`,
//! shutdown cancels what is in flight (every pending call still gets a
//! result), delivers the shutdown event, delivers what was queued without
//! performing it, and leaves no task running, checked with the
//! `TaskTracker`. Also: the cancellation token, repeated shutdown, and a
//! dropped worker future.

mod support;

use std::time::Duration;

use agent_fsm::Kind;
use agent_fsm::Named;
use agent_fsm::runtime::{self, MachineHandle, Notification, RequestError, SendError};
use support::run::input;
use support::{Agent, End, Reply, Scripted, config};
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Drives a fresh agent into `state`, returning it with its tracker.
async fn agent_in(state: &str) -> (MachineHandle<Agent, String>, Scripted, TaskTracker) {
    let script = Scripted::new([match state {
        "CallingLlm" => Reply { deltas: vec!["partial".to_owned()], end: End::Hang },
        "ExecutingTools" => Reply::tools(&["a:10", "h1:hang", "h2:hang"]),
        "Error" => Reply::error(),
        _ => Reply::text(&["hi"]),
    }]);
    let tracker = TaskTracker::new();
    let handle = runtime::spawn(Agent::new(3), script.clone(), config().tracker(tracker.clone()));
    if state != "Waiting" {
        handle.send(input("go")).await.unwrap();
        sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(handle.status().to_string(), state);
    (handle, script, tracker)
}

/// Shuts down, checks that nothing is left running, and returns the hops
/// the machine took during shutdown as (event, target state).
async fn shutdown_cleanly(
    handle: &MachineHandle<Agent, String>,
    tracker: &TaskTracker,
) -> Vec<(Option<&'static str>, &'static str)> {
    let mut notifications = handle.subscribe();
    assert_eq!(handle.shutdown().await.unwrap(), support::StateKind::Done);
    // The notifications tell what the machine received during shutdown.
    let mut hops = Vec::new();
    while let Some(n) = notifications.recv().await {
        if let Notification::Transition(step) = n {
            hops.push((step.event.map(Kind::name), step.to.name()));
        }
    }
    assert_eq!(hops.last(), Some(&(Some("Shutdown"), "Done")));
    // So does the history, which outlives the worker, and its event log
    // reproduces the final machine.
    let history = crate::support::within(handle.history()).await.unwrap();
    let recorded: Vec<_> = history.transitions().map(|t| (t.event.map(Kind::name), t.to.name())).collect();
    assert!(recorded.ends_with(&hops), "{recorded:?} does not end with {hops:?}");
    let mut fresh = Agent::new(3);
    runtime::replay(&mut fresh, history.events().unwrap()).unwrap();
    assert_eq!(fresh, crate::support::within(handle.inspect(Agent::clone)).await.unwrap());
    // No task outlives the worker: the tracker empties without any time
    // passing.
    let now = Instant::now();
    tracker.close();
    tracker.wait().await;
    assert!(tracker.is_empty());
    assert_eq!(now.elapsed(), Duration::ZERO);
    hops
}

#[tokio::test(start_paused = true)]
async fn shutdown_from_waiting() {
    let (handle, _, tracker) = agent_in("Waiting").await;
    handle.send(input("x")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();
    shutdown_cleanly(&handle, &tracker).await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_while_streaming() {
    let (handle, script, tracker) = agent_in("CallingLlm").await;
    shutdown_cleanly(&handle, &tracker).await;
    // The cancelled stream's failure callback returned nothing.
    assert_eq!(script.produced().stream_failure_events, 0);
}

#[tokio::test(start_paused = true)]
async fn shutdown_while_tools_run_gives_every_pending_call_a_result() {
    let (handle, script, tracker) = agent_in("ExecutingTools").await;
    let hops = shutdown_cleanly(&handle, &tracker).await;
    // h1 and h2 were cancelled and delivered before the shutdown event.
    assert_eq!(
        hops,
        [(Some("ToolDone"), "ExecutingTools"), (Some("ToolDone"), "CallingLlm"), (Some("Shutdown"), "Done")]
    );
    let produced = script.produced();
    assert_eq!(produced.tool_events.len(), 3);
    assert!(produced.tool_events.values().all(|n| *n == 1));
    // The batch completed during cancellation; its SendLlmRequest was not
    // performed.
    assert_eq!(produced.llm_requests, 1);
}

#[tokio::test(start_paused = true)]
async fn shutdown_while_a_retry_timer_is_pending() {
    let (handle, script, tracker) = agent_in("Error").await;
    shutdown_cleanly(&handle, &tracker).await;
    sleep(Duration::from_secs(10)).await;
    assert_eq!(script.produced().llm_requests, 1, "the retry never fired");
}

#[tokio::test(start_paused = true)]
async fn events_queued_at_shutdown_are_delivered_but_not_performed() {
    let (handle, script, tracker) = agent_in("ExecutingTools").await;
    handle.send(input("queued 1")).await.unwrap();
    handle.send(input("queued 2")).await.unwrap();
    let mut notifications = handle.subscribe();
    crate::support::within(handle.shutdown()).await.unwrap();
    let mut unperformed = Vec::new();
    while let Some(n) = notifications.recv().await {
        match n {
            Notification::Unhandled(u) => unperformed.push(u.event.name()),
            Notification::Action { performed: false, action } => unperformed.push(action.name()),
            _ => {}
        }
    }
    // Two cancellations (WaitForInput, then SendLlmRequest), then the two
    // queued inputs, refused by the terminal state, not performed.
    assert_eq!(
        unperformed,
        ["WaitForInput", "SendLlmRequest", "UserInput", "WaitForInput", "UserInput", "WaitForInput"]
    );
    assert_eq!(script.produced().llm_requests, 1);
    tracker.close();
    tracker.wait().await;
}

#[tokio::test(start_paused = true)]
async fn the_configured_token_shuts_the_machine_down() {
    let token = CancellationToken::new();
    let script = Scripted::new([Reply::tools(&["h:hang"])]);
    let handle = runtime::spawn(Agent::new(3), script.clone(), config().cancel_on(token.clone()));
    handle.send(input("go")).await.unwrap();
    sleep(Duration::from_millis(50)).await;
    token.cancel();
    assert_eq!(handle.wait_finished().await.unwrap(), support::StateKind::Done);
    assert_eq!(script.produced().tool_events.get("h:hang"), Some(&1));
}

#[tokio::test(start_paused = true)]
async fn shutdown_is_idempotent_and_later_calls_say_closed() {
    let (handle, _, tracker) = agent_in("Waiting").await;
    let other = handle.clone();
    assert_eq!(handle.shutdown().await.unwrap(), support::StateKind::Done);
    assert_eq!(other.shutdown().await.unwrap(), support::StateKind::Done);
    assert!(matches!(other.send(input("late")).await, Err(SendError::Closed(e)) if e.name() == "UserInput"));
    assert!(matches!(other.interrupt("late").await, Err(RequestError::Closed)));
    assert!(other.subscribe().recv().await.is_none());
    tracker.close();
    tracker.wait().await;
}

#[tokio::test(start_paused = true)]
async fn queries_queued_behind_a_shutdown_read_the_final_machine() {
    let (handle, _, tracker) = agent_in("ExecutingTools").await;
    // Both queued before the worker runs again: it stops on the shutdown
    // and never takes the query itself.
    let (finished, state, history) = tokio::join!(handle.shutdown(), handle.state(), handle.history());
    assert_eq!(finished.unwrap(), support::StateKind::Done);
    assert_eq!(state.unwrap(), support::State::Done);
    assert_eq!(history.unwrap().current().0.to_string(), "Done");
    // Other requests find the worker gone.
    assert!(matches!(handle.wait_idle().await, Err(RequestError::Closed)));
    tracker.close();
    tracker.wait().await;
}

#[tokio::test(start_paused = true)]
async fn a_shutdown_without_shutdown_event_keeps_the_state() {
    let script = Scripted::new([]);
    let handle = runtime::spawn(Agent::new(3), script, runtime::ExecutorConfig::new());
    assert_eq!(handle.shutdown().await.unwrap(), support::StateKind::Waiting);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_worker_future_aborts_its_tasks() {
    let tracker = TaskTracker::new();
    let script = Scripted::new([Reply::tools(&["h:hang"])]);
    let (handle, worker) = runtime::pair(Agent::new(3), script, config().tracker(tracker.clone()));
    let worker = tokio::spawn(worker);
    handle.send(input("go")).await.unwrap();
    sleep(Duration::from_millis(50)).await;
    assert_eq!(tracker.len(), 1, "the hanging tool");
    worker.abort();
    assert!(worker.await.unwrap_err().is_cancelled());
    assert!(matches!(handle.wait_finished().await, Err(RequestError::Closed)));
    // Dropped mid-run, it left nothing to read.
    assert!(matches!(handle.state().await, Err(RequestError::Closed)));
    tracker.close();
    tracker.wait().await;
    assert!(tracker.is_empty());
}
