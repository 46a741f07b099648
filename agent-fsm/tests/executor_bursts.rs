//! A burst of inbox events: the worker takes queued events one after the
//! other without its full look at every source, yet a control request, a
//! cancellation, a failure, a terminal state or a subscriber owed a read
//! in the middle of the burst is seen before the next event, as it would
//! be between two separate inputs, and an idle waiter is still answered.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Waker};
use std::time::Duration;

use agent_fsm::runtime::{self, EffectContext, ExecutorConfig, MachineHandle, Performing, RequestError, WorkerError};
use agent_fsm::state_machine;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

mod support;

#[allow(unreachable_pub)] // the generated items are `pub` in a private module
#[state_machine(fallback = Count)]
mod counter {
    #[states]
    #[derive(Debug)]
    pub enum State {
        #[initial]
        Counting { ticks: u32 },
        #[terminal]
        Stopped,
    }
    #[events]
    #[derive(Debug, Clone)]
    pub enum Event {
        Tick,
        Boom,
        Stop,
    }
    #[actions]
    #[derive(Debug)]
    pub enum Action {
        Count,
    }
    transitions! {
        Counting { ticks } + Tick => { *ticks += 1; } Counting / Count,
        Counting { ticks } + Boom => { assert!(*ticks == u32::MAX, "boom after {ticks} ticks"); } Counting / Count,
        Counting + Stop => Stopped / Count,
        Stopped + Tick => ignore,
        Stopped + Boom => ignore,
        Stopped + Stop => ignore,
    }
}

use counter::{ActionKind, Event, EventKind, Machine};

type Handle = MachineHandle<Machine, ()>;

/// How many events each test queues before the worker first runs: more
/// than one burst's eight `try_recv`s, fewer than the inbox holds.
const QUEUED: u32 = 20;

/// The step whose action does something to the running worker.
const AT: u32 = 5;

/// Effects that count the actions performed and, when the `AT`th is,
/// call `at` with the agent's handle.
fn effects(
    performed: Arc<AtomicU32>,
    handle: Arc<OnceLock<Handle>>,
    at: impl Fn(&Handle) + Send + 'static,
) -> impl runtime::Effects<Machine, Output = ()> {
    runtime::from_fn(move |_, _: &mut EffectContext<'_, Machine, ()>| {
        if performed.fetch_add(1, Ordering::SeqCst) + 1 == AT {
            at(handle.get().expect("the handle is set before the worker runs"));
        }
    })
}

/// Spawns the counter with `at` run at the `AT`th action, queues
/// `events` before the worker runs, and waits for it to finish.
async fn run(
    config: ExecutorConfig<Machine>,
    events: impl IntoIterator<Item = Event>,
    at: impl Fn(&Handle) + Send + 'static,
) -> (u32, Result<counter::StateKind, RequestError<Machine>>, Handle) {
    let performed = Arc::new(AtomicU32::new(0));
    let slot = Arc::new(OnceLock::new());
    let handle = runtime::spawn(Machine::new(0), effects(Arc::clone(&performed), Arc::clone(&slot), at), config);
    assert!(slot.set(handle.clone()).is_ok());
    // `try_send` never yields: every event is queued before the worker's
    // first poll, which takes them as one burst.
    for event in events {
        handle.try_send(event).unwrap();
    }
    let end = timeout(Duration::from_secs(10), handle.wait_finished()).await.expect("the worker finishes");
    (performed.load(Ordering::SeqCst), end, handle)
}

/// Polls `future` once, as far as its first await: enough for a handle's
/// request to be queued, from code that cannot await (an action's effects).
fn poll_once(future: impl Future) {
    let _ = pin!(future).poll(&mut Context::from_waker(Waker::noop()));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_shutdown_requested_in_the_middle_of_a_burst_is_served_before_the_next_event() {
    let ticks = (0..QUEUED).map(|_| Event::Tick);
    let (performed, end, handle) = run(ExecutorConfig::new(), ticks, |handle| poll_once(handle.shutdown())).await;
    assert_eq!(end.unwrap(), counter::StateKind::Counting);
    // The rest of the burst was drained without performing its actions.
    assert_eq!(performed, AT, "actions performed after the shutdown was requested");
    let ticks = handle.inspect(|machine| match machine.state() {
        counter::State::Counting { ticks } => *ticks,
        counter::State::Stopped => u32::MAX,
    });
    assert_eq!(crate::support::within(ticks).await.unwrap(), QUEUED, "accepted events are still delivered");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_query_requested_in_the_middle_of_a_burst_reads_the_machine_at_that_step() {
    let seen = Arc::new(AtomicU32::new(u32::MAX));
    let record = Arc::clone(&seen);
    let ticks = (0..QUEUED).map(|_| Event::Tick);
    let (performed, end, _) = run(ExecutorConfig::new(), ticks, move |handle| {
        let record = Arc::clone(&record);
        poll_once(handle.inspect(move |machine| {
            if let counter::State::Counting { ticks } = machine.state() {
                record.store(*ticks, Ordering::SeqCst);
            }
        }));
        poll_once(handle.shutdown());
    })
    .await;
    assert!(end.is_ok());
    assert_eq!(performed, AT);
    assert_eq!(seen.load(Ordering::SeqCst), AT, "the query ran at another step");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_token_cancelled_in_the_middle_of_a_burst_stops_it_before_the_next_event() {
    let token = CancellationToken::new();
    let cancel = token.clone();
    let ticks = (0..QUEUED).map(|_| Event::Tick);
    let (performed, end, _) = run(ExecutorConfig::new().cancel_on(token), ticks, move |_| cancel.cancel()).await;
    assert_eq!(end.unwrap(), counter::StateKind::Counting);
    assert_eq!(performed, AT, "actions performed after the token was cancelled");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_panic_in_the_middle_of_a_burst_names_its_own_event_and_ends_the_burst() {
    // Ticks, one `Boom` whose row panics, then more ticks.
    let events = (0..QUEUED).map(|i| if i == AT + 2 { Event::Boom } else { Event::Tick });
    let (performed, end, handle) = run(ExecutorConfig::new(), events, |_| {}).await;
    let Err(RequestError::Failed(error)) = end else { panic!("the worker did not fail: {end:?}") };
    assert!(matches!(*error, WorkerError::MachinePanicked { event: EventKind::Boom, .. }), "{error:?}");
    assert_eq!(performed, AT + 2, "actions performed after the failed step");
    assert_eq!(handle.steps(), u64::from(AT + 3), "steps delivered up to the failed one");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_panic_of_the_effects_in_the_middle_of_a_burst_names_the_action_not_the_event() {
    let ticks = (0..QUEUED).map(|_| Event::Tick);
    let (performed, end, handle) = run(ExecutorConfig::new(), ticks, |_| panic!("effects gave up")).await;
    let Err(RequestError::Failed(error)) = end else { panic!("the worker did not fail: {end:?}") };
    assert!(
        matches!(
            &*error,
            WorkerError::EffectsPanicked { performing: Performing::Action(ActionKind::Count), key: None, message }
                if message.contains("effects gave up")
        ),
        "{error:?}"
    );
    assert_eq!(performed, AT, "actions performed after the failed step");
    assert_eq!(handle.steps(), u64::from(AT), "steps delivered up to the failed one");
}

/// An idle waiter that arrives with a burst queued is answered once the
/// inbox is empty, not left waiting for the next event.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_idle_waiter_queued_before_a_burst_is_answered_when_the_inbox_empties() {
    let handle = runtime::spawn(Machine::new(0), (), ExecutorConfig::new());
    for _ in 0..QUEUED {
        handle.try_send(Event::Tick).unwrap();
    }
    // Its request is the worker's first input; the burst follows.
    timeout(Duration::from_secs(10), handle.wait_idle()).await.expect("the idle waiter was answered").unwrap();
    assert_eq!(handle.steps(), u64::from(QUEUED));
    crate::support::within(handle.shutdown()).await.unwrap();
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_terminal_state_reached_in_the_middle_of_a_burst_ends_it_before_the_next_event() {
    // The `AT`th event stops the machine; the rest are drained.
    let events = (0..QUEUED).map(|i| if i == AT - 1 { Event::Stop } else { Event::Tick });
    let (performed, end, handle) = run(ExecutorConfig::new(), events, |_| {}).await;
    assert_eq!(end.unwrap(), counter::StateKind::Stopped);
    assert_eq!(performed, AT, "actions performed after the terminal state");
    assert_eq!(handle.steps(), u64::from(QUEUED), "accepted events are still delivered");
}

/// Every `STATUS_EVERY` (64) steps a burst hands its notifications over;
/// when that wakes a subscriber, the burst stops for it to read before the
/// next batch, so one that keeps up never lags, however long the burst.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_burst_stops_for_a_subscriber_it_woke_before_the_next_batch() {
    const EVENTS: u32 = 300;
    // Two notifications per step (the hop and the action): one batch of
    // 64 steps fills the log, a second one would push the first out.
    let config = ExecutorConfig::new().inbox_capacity(EVENTS as usize).notification_capacity(128);
    let handle = runtime::spawn(Machine::new(0), (), config);
    let reader = support::parked_reader(&handle).await;
    for _ in 0..EVENTS {
        handle.try_send(Event::Tick).unwrap();
    }
    // No request is queued: the worker takes the events as one burst.
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(handle.steps(), u64::from(EVENTS));
    crate::support::within(handle.shutdown()).await.unwrap();
    assert_eq!(reader.await.unwrap(), (EVENTS as usize, 0), "(transitions read, notifications missed)");
}

/// Calls queued together are taken as a burst too (the worker goes on to
/// the next one without its full look at every source), and a control
/// request made by the `AT`th call's action is still served before the
/// next call: that call and the rest are answered as drained, not
/// performed.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_shutdown_requested_in_the_middle_of_a_burst_of_calls_is_served_before_the_next_call() {
    let performed = Arc::new(AtomicU32::new(0));
    let slot = Arc::new(OnceLock::new());
    let at = |handle: &Handle| poll_once(handle.shutdown());
    let handle =
        runtime::spawn(Machine::new(0), effects(Arc::clone(&performed), Arc::clone(&slot), at), ExecutorConfig::new());
    assert!(slot.set(handle.clone()).is_ok());
    // Each call is queued by its first poll, before the worker first runs.
    let mut calls: Vec<_> = (0..QUEUED).map(|_| Box::pin(handle.call(Event::Tick))).collect();
    for call in &mut calls {
        assert!(call.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
    }
    let mut answers = Vec::new();
    for call in calls {
        answers.push(crate::support::within(call).await.unwrap());
    }
    assert_eq!(performed.load(Ordering::SeqCst), AT, "actions performed after the shutdown was requested");
    let flags: Vec<bool> = answers.iter().map(|answer| answer.performed).collect();
    let expected: Vec<bool> = (0..QUEUED).map(|i| i < AT).collect();
    assert_eq!(flags, expected, "which calls' actions were performed");
    assert!(answers.iter().all(|answer| answer.state() == Some(counter::StateKind::Counting)));
    let end = crate::support::within(handle.wait_finished()).await;
    assert_eq!(end.unwrap(), counter::StateKind::Counting);
}
