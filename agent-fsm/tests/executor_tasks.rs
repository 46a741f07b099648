//! Tasks and streams the executor runs for the agent in `support/`: the
//! concurrency limit, retries through the machine's own path, task and
//! stream timeouts, a panicking tool, errors inside a stream, a stream
//! that panics when dropped, and timers and streams cancelled with the
//! state that started them. Paused tokio time throughout.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_fsm::StateMachine;
use agent_fsm::runtime::{self, EffectContext, EffectFailure, Effects, Notification};
use support::run::{event_log, input, start};
use support::{Action, ActionKind, Agent, End, Event, Reply, Scripted, StateKind, config};
use tokio::time::{Instant, sleep};

async fn time_in_tools(limit: usize) -> Duration {
    let script = Scripted::new([Reply::tools(&["a:100", "b:100", "c:100", "d:100"]), Reply::text(&["done"])]);
    let handle = start(&script, config().concurrency_limit(limit));
    handle.send(input("go")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();
    assert_eq!(handle.status().to_string(), "Waiting");
    let batches = crate::support::within(handle.inspect(|m| m.context().tool_batches.clone())).await.unwrap();
    assert_eq!(batches.len(), 1);
    assert!(batches[0].iter().all(|(_, ok)| *ok), "{batches:?}");
    crate::support::within(handle.history()).await.unwrap().time_in(StateKind::ExecutingTools)
}

#[tokio::test(start_paused = true)]
async fn four_100ms_tools_take_100ms_with_limit_4_and_400ms_with_limit_1() {
    assert_eq!(time_in_tools(4).await, Duration::from_millis(100));
    assert_eq!(time_in_tools(1).await, Duration::from_millis(400));
    assert_eq!(time_in_tools(2).await, Duration::from_millis(200));
}

#[tokio::test(start_paused = true)]
async fn llm_error_retries_after_backoff_and_gives_up_through_the_machine() {
    let script = Scripted::new([Reply::error(), Reply::error(), Reply::error()]);
    let handle = start(&script, config());
    let mut notifications = handle.subscribe();
    handle.send(input("hi")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();

    // Three attempts (max_attempts = 3), two retries, then the table's
    // give-up row back to Waiting with DisplayError.
    let produced = script.produced();
    assert_eq!(produced.llm_requests, 3);
    assert_eq!(produced.retries_scheduled, 2);
    assert_eq!(handle.status().to_string(), "Waiting");
    let history = crate::support::within(handle.history()).await.unwrap();
    let error_stays: Vec<Duration> =
        history.transitions().filter(|t| t.from == StateKind::Error).map(|t| t.duration).collect();
    assert_eq!(error_stays, vec![script.policy.delay(1), script.policy.delay(2)]);
    let last = history.transitions().last().unwrap();
    assert_eq!(
        (last.from, last.to, last.action),
        (StateKind::CallingLlm, StateKind::Waiting, Some(ActionKind::DisplayError))
    );

    let mut outputs = Vec::new();
    while let Ok(n) = notifications.try_recv() {
        if let Notification::Output(text) = n {
            outputs.push(text);
        }
    }
    assert_eq!(outputs.last().map(String::as_str), Some("error: the LLM failed"));
}

#[tokio::test(start_paused = true)]
async fn a_panicking_tool_yields_an_error_outcome_and_the_agent_continues() {
    let script = Scripted::new([Reply::tools(&["a:10", "p:panic"]), Reply::text(&["recovered"])]);
    let handle = start(&script, config());
    handle.send(input("go")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();

    let batches = crate::support::within(handle.inspect(|m| m.context().tool_batches.clone())).await.unwrap();
    assert_eq!(batches, [vec![("p:panic".to_owned(), false), ("a:10".to_owned(), true)]]);
    let failures = script.produced().tool_failures;
    assert!(
        matches!(&failures[..], [(id, EffectFailure::Panicked(msg))] if id == "p:panic" && msg.contains("panicked")),
        "{failures:?}"
    );
    assert_eq!(handle.status().to_string(), "Waiting");
    let delivered = crate::support::within(handle.call(input("again"))).await.unwrap();
    assert_eq!(
        (delivered.action(), delivered.state()),
        (Some(support::ActionKind::SendLlmRequest), Some(support::StateKind::CallingLlm))
    );
    crate::support::within(handle.wait_idle()).await.unwrap();
    let transcript = crate::support::within(handle.inspect(|m| m.context().transcript.clone())).await.unwrap();
    assert_eq!(transcript, ["calling tools", "recovered", "ok"]);
}

#[tokio::test(start_paused = true)]
async fn a_task_timeout_fails_that_task_only() {
    let script = Scripted::new([Reply::tools(&["h:hang", "a:10"])]);
    let handle = start(&script, config().task_timeout(Duration::from_millis(50)));
    handle.send(input("go")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();
    let batches = crate::support::within(handle.inspect(|m| m.context().tool_batches.clone())).await.unwrap();
    assert_eq!(batches, [vec![("a:10".to_owned(), true), ("h:hang".to_owned(), false)]]);
    assert_eq!(script.produced().tool_failures, [("h:hang".to_owned(), EffectFailure::TimedOut)]);
    assert_eq!(
        crate::support::within(handle.history()).await.unwrap().time_in(StateKind::ExecutingTools),
        Duration::from_millis(50)
    );
}

/// A task's result is judged by when it came, not by whether it was ready
/// at the poll that saw the deadline: one that finishes at the deadline's
/// very instant is late, as a stream item is (a task that blocks its thread
/// past the deadline and then returns is the case this rule is for).
#[tokio::test(start_paused = true)]
async fn a_task_done_at_its_deadline_has_timed_out() {
    let script = Scripted::new([Reply::tools(&["a:49", "b:50"])]);
    let handle = start(&script, config().task_timeout(Duration::from_millis(50)));
    handle.send(input("go")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();
    let batches = crate::support::within(handle.inspect(|m| m.context().tool_batches.clone())).await.unwrap();
    assert_eq!(batches, [vec![("a:49".to_owned(), true), ("b:50".to_owned(), false)]]);
    assert_eq!(script.produced().tool_failures, [("b:50".to_owned(), EffectFailure::TimedOut)]);
}

#[tokio::test(start_paused = true)]
async fn a_stream_timeout_becomes_an_llm_error_and_the_machine_retries() {
    let hang = Reply { deltas: vec!["par".to_owned()], end: End::Hang };
    let script = Scripted::new([hang, Reply::text(&["fine"])]);
    let handle =
        start(&script, config().action_timeout(support::ActionKind::SendLlmRequest, Duration::from_millis(100)));
    handle.send(input("go")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();
    assert_eq!(script.produced().stream_failure_events, 1);
    assert_eq!(script.produced().llm_requests, 2);
    let transcript = crate::support::within(handle.inspect(|m| m.context().transcript.clone())).await.unwrap();
    assert_eq!(transcript, ["fine"]);
}

/// An LLM whose first reply reports an error and then goes on (a provider
/// that sends an error chunk, then more): its last items come while the
/// retry's stream runs. With `cancel`, the retry cancels the old stream by
/// key first.
struct ErrorThenMore {
    cancel: bool,
    /// What each `cancel_task` returned, and each failure the cancelled
    /// streams reported.
    seen: Arc<Mutex<(Vec<bool>, Vec<EffectFailure>)>>,
}

impl Effects<Agent> for ErrorThenMore {
    type Output = String;

    fn perform(&mut self, action: Action, cx: &mut EffectContext<'_, Agent, String>) {
        use futures::StreamExt;
        let timed = |items: Vec<(u64, Event)>| {
            futures::stream::iter(items).then(|(ms, event)| async move {
                sleep(Duration::from_millis(ms)).await;
                event
            })
        };
        let seen = Arc::clone(&self.seen);
        let on_failure = move |failure| {
            seen.lock().unwrap().1.push(failure);
            None
        };
        match action {
            Action::SendLlmRequest { attempt: 1 } => {
                let first = timed(vec![
                    (10, Event::Delta("x".to_owned())),
                    (10, Event::LlmError),
                    // 250 ms after the error, into the second attempt.
                    (250, Event::Delta("STALE".to_owned())),
                    (10, Event::Completed { tool_calls: Vec::new() }),
                ]);
                cx.stream_keyed("llm", first, on_failure);
            }
            Action::SendLlmRequest { .. } => {
                let second = timed(vec![
                    (100, Event::Delta("good".to_owned())),
                    (100, Event::Completed { tool_calls: Vec::new() }),
                ]);
                cx.stream_keyed("llm", second, on_failure);
            }
            Action::ScheduleRetry { .. } => {
                if self.cancel {
                    let cancelled = cx.cancel_task("llm");
                    let again = cx.cancel_task("llm");
                    self.seen.lock().unwrap().0.extend([cancelled, again]);
                }
                cx.pause(Duration::from_millis(200), Event::RetryFired);
            }
            _ => {}
        }
    }
}

/// The transcript after one question answered by [`ErrorThenMore`], and
/// what it saw.
async fn retry_after_an_error_item(cancel: bool) -> (Vec<String>, (Vec<bool>, Vec<EffectFailure>)) {
    let effects = ErrorThenMore { cancel, seen: Arc::default() };
    let seen = Arc::clone(&effects.seen);
    let handle = runtime::spawn(Agent::new(3), effects, config());
    handle.send(input("go")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();
    assert_eq!(handle.status().to_string(), "Waiting");
    let transcript = crate::support::within(handle.inspect(|m| m.context().transcript.clone())).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    (transcript, seen)
}

/// A stream whose `Drop` panics: user code the worker must survive.
struct DropPanics {
    items: std::collections::VecDeque<Event>,
    /// Ends after its items; otherwise stays open.
    ends: bool,
}

impl futures::Stream for DropPanics {
    type Item = Event;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Event>> {
        match self.items.pop_front() {
            Some(item) => std::task::Poll::Ready(Some(item)),
            None if self.ends => std::task::Poll::Ready(None),
            None => std::task::Poll::Pending,
        }
    }
}

impl Drop for DropPanics {
    fn drop(&mut self) {
        panic!("the stream's drop broke");
    }
}

/// Scripted effects whose first LLM request opens a `DropPanics` stream,
/// recording the failures its `on_failure` hears of.
struct FirstStreamPanicsOnDrop {
    inner: Scripted,
    ends: bool,
    armed: bool,
    failures: Arc<Mutex<Vec<EffectFailure>>>,
}

impl Effects<Agent> for FirstStreamPanicsOnDrop {
    type Output = String;

    fn perform(&mut self, action: Action, cx: &mut EffectContext<'_, Agent, String>) {
        if self.armed && matches!(action, Action::SendLlmRequest { .. }) {
            self.armed = false;
            let failures = Arc::clone(&self.failures);
            let stream = DropPanics { items: [Event::Delta("x".to_owned())].into(), ends: self.ends };
            cx.stream(stream, move |failure| {
                let cancelled = failure == EffectFailure::Cancelled;
                failures.lock().unwrap().push(failure);
                (!cancelled).then_some(Event::LlmError)
            });
            return;
        }
        self.inner.perform(action, cx);
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_panics_when_dropped_does_not_stop_the_agent() {
    for ends in [false, true] {
        let script = Scripted::new([Reply::text(&["fine"])]);
        let failures = Arc::new(Mutex::new(Vec::new()));
        let fx = FirstStreamPanicsOnDrop { inner: script.clone(), ends, armed: true, failures: Arc::clone(&failures) };
        let handle = runtime::spawn(Agent::new(3), fx, config());
        crate::support::within(handle.call(input("hi"))).await.unwrap();
        sleep(Duration::from_millis(10)).await;
        if ends {
            // Its end panicked: the stream's failure, as a panic while
            // polling it is, and the machine takes its error path (a retry
            // that reads the scripted reply).
            crate::support::within(handle.wait_idle()).await.unwrap();
            assert_eq!(*failures.lock().unwrap(), [EffectFailure::Panicked("the stream's drop broke".to_owned())]);
            assert_eq!(script.produced().llm_requests, 1, "the retry");
        } else {
            // Dropped by the interrupt: the cancellation stands.
            handle.interrupt("esc").await.unwrap();
            assert_eq!(*failures.lock().unwrap(), [EffectFailure::Cancelled]);
            crate::support::within(handle.call(input("again"))).await.unwrap();
            crate::support::within(handle.wait_idle()).await.unwrap();
            assert_eq!(script.produced().llm_requests, 1, "the next turn");
        }
        assert_eq!(handle.status().to_string(), "Waiting", "ends: {ends}");
        let transcript = crate::support::within(handle.inspect(|m| m.context().transcript.clone())).await.unwrap();
        assert_eq!(transcript.last().map(String::as_str), Some("fine"), "ends: {ends}");
        // Stopped by the shutdown, not failed.
        assert_eq!(handle.shutdown().await.unwrap(), support::StateKind::Done, "ends: {ends}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_cancelled_by_key_delivers_nothing_more() {
    // Left open, the failed attempt's stream is read to its end, whatever
    // the machine's state: its late items land in the retry.
    let (transcript, _) = retry_after_an_error_item(false).await;
    assert_eq!(transcript, ["STALE"], "the late items of the first stream reach the retry");

    // Cancelled by key when the retry is scheduled, it is dropped at once:
    // the retry reads its own stream only.
    let (transcript, (cancelled, failures)) = retry_after_an_error_item(true).await;
    assert_eq!(transcript, ["good"]);
    assert_eq!(cancelled, [true, false], "found once, then gone");
    assert_eq!(failures, [EffectFailure::Cancelled], "its on_failure hears of the cancellation");
}

/// Scripted effects that, on `ScheduleRetry`, also send `Interrupted`, so
/// the machine leaves `Error` before the retry timer fires.
struct LeaveErrorAtOnce(Scripted);

impl Effects<Agent> for LeaveErrorAtOnce {
    type Output = String;

    fn perform(&mut self, action: Action, cx: &mut EffectContext<'_, Agent, String>) {
        let leave = matches!(action, Action::ScheduleRetry { .. });
        self.0.perform(action, cx);
        if leave {
            cx.send(Event::Interrupted);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_timer_is_dropped_when_its_state_is_left() {
    let script = Scripted::new([Reply::error()]);
    let handle = runtime::spawn(Agent::new(3), LeaveErrorAtOnce(script.clone()), config());
    let started = Instant::now();
    handle.send(input("go")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();
    // Idle as soon as the stream ended: the retry timer did not hold the
    // worker busy, and never fired.
    assert_eq!(started.elapsed(), Duration::from_millis(20));
    assert_eq!(script.produced().retries_scheduled, 1);
    sleep(Duration::from_secs(10)).await;
    crate::support::within(handle.wait_idle()).await.unwrap();
    let log = event_log(&handle).await;
    assert!(!log.contains(&Event::RetryFired), "{log:?}");
    assert_eq!(handle.status().to_string(), "Waiting");
}
