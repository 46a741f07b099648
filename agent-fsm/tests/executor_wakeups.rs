//! How the worker sleeps and wakes: it yields to other tasks under a loop
//! of sends or a flood, fails typed without a runtime or without timers,
//! reads as finished once its future is dropped, is woken through the last
//! waker it slept with, and serves requests queued as it goes to sleep or
//! racing events on two threads.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_fsm::StateMachine;
use agent_fsm::runtime::{self, RequestError, WorkerError};
use support::run::start;
use support::{Agent, Event, Scripted, config};

/// `send` takes a fast path while the inbox has room, but still spends the
/// task's tokio budget: a loop of sends yields to other tasks long before
/// a large inbox fills.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_loop_of_sends_still_yields_to_other_tasks() {
    let handle = runtime::spawn(Agent::new(3), (), config().inbox_capacity(1000));
    let other_ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&other_ran);
    tokio::spawn(async move { flag.store(true, std::sync::atomic::Ordering::SeqCst) });
    for _ in 0..900 {
        handle.send(Event::Interrupted).await.unwrap();
    }
    assert!(other_ran.load(std::sync::atomic::Ordering::SeqCst), "900 sends never yielded");
    crate::support::within(handle.wait_idle()).await.unwrap();
    assert_eq!(handle.steps(), 900);
    crate::support::within(handle.shutdown()).await.unwrap();
}

/// The worker takes most inbox events without spending tokio's budget, but
/// not all: a worker with a flood of queued events still yields to the
/// other tasks of its thread long before it has drained them.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_flooded_worker_still_yields_to_other_tasks() {
    use std::sync::atomic::{AtomicU64, Ordering};
    const FLOOD: u64 = 4000;
    let handle = runtime::spawn(Agent::new(3), (), config().inbox_capacity(5000));
    // Queued before the worker first runs.
    for _ in 0..FLOOD {
        handle.try_send(Event::Interrupted).unwrap();
    }
    // Queued behind the worker: records how far the worker got before it
    // yielded.
    let seen = Arc::new(AtomicU64::new(u64::MAX));
    let (probe_seen, probe_handle) = (Arc::clone(&seen), handle.clone());
    let probe = tokio::spawn(async move { probe_seen.store(probe_handle.steps(), Ordering::SeqCst) });
    probe.await.unwrap();
    let seen = seen.load(Ordering::SeqCst);
    assert!(seen > 0 && seen < FLOOD, "the other task ran after {seen} of {FLOOD} events");
    crate::support::within(handle.wait_idle()).await.unwrap();
    assert_eq!(handle.steps(), FLOOD);
    crate::support::within(handle.shutdown()).await.unwrap();
}

#[test]
fn a_worker_polled_outside_tokio_fails_with_no_runtime() {
    let (handle, worker) = runtime::pair(Agent::new(3), (), runtime::ExecutorConfig::new());
    std::thread::spawn(move || futures::executor::block_on(worker)).join().unwrap();
    let err = futures::executor::block_on(handle.wait_finished()).unwrap_err();
    assert!(matches!(err, RequestError::Failed(ref e) if **e == WorkerError::NoRuntime), "{err:?}");
}

#[test]
fn a_worker_on_a_runtime_without_timers_fails_with_no_timers() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let err = rt.block_on(async {
        let handle = runtime::spawn(Agent::new(3), (), runtime::ExecutorConfig::new());
        // No timeout here: this runtime has no timers to run one.
        handle.wait_finished().await.unwrap_err()
    });
    let RequestError::Failed(cause) = err else { panic!("expected a failure, got {err:?}") };
    assert_eq!(*cause, WorkerError::NoTimers);
    assert!(cause.to_string().contains("enable_time"), "{cause}");
}

#[tokio::test(start_paused = true)]
async fn a_dropped_worker_future_reads_as_finished() {
    let (handle, worker) = runtime::pair(Agent::new(3), (), runtime::ExecutorConfig::new());
    assert!(!handle.is_finished());
    drop(worker);
    assert!(crate::support::within(handle.wait_finished()).await.is_err());
    assert!(handle.is_finished());
}

/// A waker that counts how often it was woken.
#[derive(Default)]
struct CountingWaker(std::sync::atomic::AtomicUsize);

impl CountingWaker {
    fn count(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl std::task::Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn control_requests_wake_the_worker_through_the_waker_it_last_slept_with() {
    use std::task::{Context, Waker};

    let (handle, worker) = runtime::pair(Agent::new(3), (), runtime::ExecutorConfig::new());
    let mut worker = Box::pin(worker);
    let (a, b) = (Arc::new(CountingWaker::default()), Arc::new(CountingWaker::default()));
    let (wake_a, wake_b) = (Waker::from(Arc::clone(&a)), Waker::from(Arc::clone(&b)));
    let mut sleeps_with = |waker: &Waker| worker.as_mut().poll(&mut Context::from_waker(waker)).is_pending();
    // A query from another task.
    let ask = || {
        let asking = handle.clone();
        tokio::spawn(async move { asking.inspect(|m| m.status().to_string()).await })
    };
    // Lets the querying task run until `woken` (it has queued its request).
    let settle = async |woken: &dyn Fn() -> bool| {
        for _ in 0..10 {
            if woken() {
                break;
            }
            tokio::task::yield_now().await;
        }
    };
    let initial = handle.status().to_string();

    assert!(sleeps_with(&wake_a));
    let query = ask();
    settle(&|| a.count() == 1).await;
    assert_eq!((a.count(), b.count()), (1, 0), "the request woke the worker through its waker");
    assert!(sleeps_with(&wake_a), "the worker served the request and slept again");
    assert_eq!(query.await.unwrap().unwrap(), initial);

    // Polled again with the same waker and no request in between: the
    // registration it kept still wakes it.
    assert!(sleeps_with(&wake_a));
    let query = ask();
    settle(&|| a.count() == 2).await;
    assert_eq!((a.count(), b.count()), (2, 0));
    assert!(sleeps_with(&wake_a));
    assert_eq!(query.await.unwrap().unwrap(), initial);

    // Polled by another task: the next request wakes that one.
    assert!(sleeps_with(&wake_b));
    let query = ask();
    settle(&|| b.count() == 1).await;
    assert_eq!((a.count(), b.count()), (2, 1), "the waker the worker last slept with was woken");
    assert!(sleeps_with(&wake_b));
    assert_eq!(query.await.unwrap().unwrap(), initial);
}

/// A query from a handle, pinned for polling by hand.
type Query = std::pin::Pin<Box<dyn Future<Output = Result<&'static str, RequestError<Agent>>> + Send>>;

/// A subscriber's waker that queues a query the first time it is woken.
struct QueryOnWake {
    query: Mutex<Option<Query>>,
    woken: std::sync::atomic::AtomicUsize,
}

impl std::task::Wake for QueryOnWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.woken.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0
            && let Some(query) = self.query.lock().unwrap().as_mut()
        {
            let queued = query.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
            assert!(queued.is_pending(), "the worker is busy: the query waits");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_queued_while_the_worker_goes_to_sleep_is_served() {
    use std::task::{Context, Waker};

    let (handle, worker) = runtime::pair(Agent::new(3), (), runtime::ExecutorConfig::new());
    let mut worker = Box::pin(worker);
    let counting = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counting));
    let mut subscription = handle.subscribe();
    assert!(worker.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());

    // The subscriber is woken by the worker's last flush on its way to
    // sleep, after its last look at the control queue: it queues a query
    // then, while the worker's waker is taken by the query below.
    let asking = handle.clone();
    let on_wake = Arc::new(QueryOnWake {
        query: Mutex::new(Some(Box::pin(async move { asking.inspect(|m| agent_fsm::Named::name(m.state())).await }))),
        woken: std::sync::atomic::AtomicUsize::new(0),
    });
    {
        let subscriber = Waker::from(Arc::clone(&on_wake));
        let mut next = std::pin::pin!(subscription.recv());
        assert!(next.as_mut().poll(&mut Context::from_waker(&subscriber)).is_pending());
    }
    // An event (refused in `Waiting`: notifications to flush), and a query
    // that takes the worker's waker.
    handle.try_send(Event::Interrupted).unwrap();
    let first_asking = handle.clone();
    let mut first: Query = Box::pin(async move { first_asking.inspect(|m| agent_fsm::Named::name(m.state())).await });
    assert!(first.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
    let woken_before = counting.count();

    assert!(worker.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
    assert!(first.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_ready());
    assert_eq!(on_wake.woken.load(std::sync::atomic::Ordering::SeqCst), 1, "the flush woke the subscriber");
    let mut second = on_wake.query.lock().unwrap().take().unwrap();
    let answered = second.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_ready();
    // Served on the worker's last look, or the worker is woken for it.
    assert!(answered || counting.count() > woken_before, "the second query is stranded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_racing_events_on_two_threads_are_all_answered() {
    // Every query is a control request that must wake a worker about to
    // sleep (or asleep) after an event. A query left waiting is picked up
    // when the next event wakes the worker, so only a wake-up missed near
    // the end hangs here; the two tests above pin the protocol down.
    const ROUNDS: u64 = 2_000;
    let handle = start(&Scripted::new([]), config());
    let asking = handle.clone();
    let queries = tokio::spawn(async move {
        for _ in 0..ROUNDS {
            assert_eq!(asking.inspect(|m| m.status().to_string()).await.unwrap(), "Waiting");
        }
    });
    let calls = async {
        for _ in 0..ROUNDS {
            // Ignored in `Waiting`: the state stays.
            crate::support::within(handle.call(Event::Interrupted)).await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(60), async { tokio::join!(queries, calls).0.unwrap() })
        .await
        .expect("a query or an event was never answered");
    assert_eq!(handle.steps(), ROUNDS);
    assert_eq!(handle.status().to_string(), "Waiting");
    crate::support::within(handle.shutdown()).await.unwrap();
}
