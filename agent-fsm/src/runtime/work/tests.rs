//! Unit tests of the work in flight: the order tasks finish and start in,
//! cancellation by key, and the slots cancelled tasks keep.

use super::{Produced, Work};
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio_util::task::TaskTracker;

fn event(produced: Produced<&'static str>) -> &'static str {
    match produced {
        Produced::Event(event) => event,
        _ => panic!("a task failed"),
    }
}

/// Results the worker finds together come in the order their tasks
/// finished, not the order they were spawned in; one cancelled after
/// it finished keeps its result.
#[tokio::test]
async fn finished_tasks_are_delivered_in_the_order_they_finished() {
    let mut work: Work<&'static str> = Work::new(Handle::current(), TaskTracker::new(), 4);
    let (b_done, b_finished) = oneshot::channel::<()>();
    let (c_done, c_finished) = oneshot::channel::<()>();
    // `a` waits for `b`, and `b` for `c`: they finish c, b, a.
    let failed = |_, _| "failed";
    work.spawn_task(
        "a".into(),
        Box::pin(async move {
            let _ = b_finished.await;
            "a"
        }),
        None,
        Box::new(failed),
    );
    work.spawn_task(
        "b".into(),
        Box::pin(async move {
            let _ = c_finished.await;
            let _ = b_done.send(());
            "b"
        }),
        None,
        Box::new(failed),
    );
    work.spawn_task(
        "c".into(),
        Box::pin(async move {
            let _ = c_done.send(());
            "c"
        }),
        None,
        Box::new(failed),
    );
    // All three end before the worker looks.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let mut order = Vec::new();
    for _ in 0..2 {
        order.push(event(poll_fn(|cx| work.poll_next(cx)).await));
    }
    assert_eq!(order, ["c", "b"]);
    assert_eq!(work.cancel("a").into_iter().map(event).collect::<Vec<_>>(), ["a"]);
    assert!(!work.busy());
}

/// Cancelling tasks one by one keeps only the aborted tasks that have
/// not stopped yet, not every one cancelled since the agent started.
#[tokio::test(start_paused = true)]
async fn cancelled_tasks_that_stopped_are_let_go() {
    let mut work: Work<u32> = Work::new(Handle::current(), TaskTracker::new(), 4);
    for round in 0..100 {
        work.spawn_task("tool".to_owned(), Box::pin(std::future::pending()), None, Box::new(|_, _| 0));
        assert_eq!(work.cancel("tool").len(), 1, "round {round}: the task was running");
        // The runtime stops the aborted task.
        tokio::task::yield_now().await;
    }
    assert!(work.aborted.len() <= 2, "{} aborted handles kept", work.aborted.len());
}

fn failure(produced: Produced<&'static str>) -> Option<super::EffectFailure> {
    match produced {
        Produced::TaskFailed { failure, .. } | Produced::StreamFailed { failure, .. } => Some(failure),
        Produced::Event(_) => None,
    }
}

/// A retry that abandons "the LLM stream" cancels every stream and task
/// under that key: an older stream that delivered its last item but is
/// still open would otherwise go on delivering into the next attempt.
#[tokio::test]
async fn cancel_takes_every_task_and_stream_with_the_key() {
    let mut work: Work<&'static str> = Work::new(Handle::current(), TaskTracker::new(), 1);
    for _ in 0..2 {
        work.open_stream(
            Some("llm".into()),
            Box::pin(futures::stream::pending()),
            None,
            Box::new(|_| Some("stream cancelled")),
        );
    }
    work.open_stream(Some("other".into()), Box::pin(futures::stream::pending()), None, Box::new(|_| None));
    // With a limit of 1, one runs and one waits.
    for _ in 0..2 {
        work.spawn_task("llm".into(), Box::pin(std::future::pending()), None, Box::new(|_, _| "task cancelled"));
    }
    let cancelled = work.cancel("llm");
    assert_eq!(cancelled.len(), 4);
    assert!(cancelled.into_iter().all(|p| failure(p) == Some(super::EffectFailure::Cancelled)));
    assert!(work.cancel("llm").is_empty(), "nothing is left under the key");
    assert_eq!(work.cancel("other").len(), 1, "other keys are left alone");
    assert!(!work.busy());
}

/// A task busy without an `.await` until released, so that tokio's
/// abort (which takes effect at a task's next `.await`) cannot stop
/// it before then. Dropping the spinner releases the task, or the
/// runtime would wait for it forever when a test ends early.
struct Spinner {
    entered: Arc<AtomicBool>,
    release: Arc<AtomicBool>,
    stopped: Arc<AtomicBool>,
}

impl Spinner {
    /// Spawns the busy task under `key` in `work`.
    fn spawn(work: &mut Work<&'static str>, key: &str) -> Self {
        let spinner = Self { entered: Arc::default(), release: Arc::default(), stopped: Arc::default() };
        let (entered, release, stopped) =
            (Arc::clone(&spinner.entered), Arc::clone(&spinner.release), Arc::clone(&spinner.stopped));
        work.spawn_task(
            key.to_owned(),
            Box::pin(async move {
                entered.store(true, Ordering::SeqCst);
                while !release.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                stopped.store(true, Ordering::SeqCst);
                // The abort takes effect here.
                tokio::task::yield_now().await;
                "busy"
            }),
            None,
            Box::new(|_, _| "busy cancelled"),
        );
        spinner
    }

    /// Waits until the task is spinning on another worker thread.
    async fn entered(&self) {
        while !self.entered.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
    }

    fn release(&self) {
        self.release.store(true, Ordering::SeqCst);
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.release();
    }
}

/// A cancelled task that has not stopped yet keeps its concurrency
/// slot: the next task starts only once it has stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_keeps_its_slot_until_it_stops() {
    let mut work: Work<&'static str> = Work::new(Handle::current(), TaskTracker::new(), 1);
    let busy = Spinner::spawn(&mut work, "busy");
    busy.entered().await;
    let cancelled: Vec<_> = work.cancel("busy").into_iter().map(failure).collect();
    assert_eq!(cancelled, [Some(super::EffectFailure::Cancelled)]);
    let stopped = Arc::clone(&busy.stopped);
    work.spawn_task(
        "next".into(),
        Box::pin(
            async move { if stopped.load(Ordering::SeqCst) { "next after busy stopped" } else { "next beside busy" } },
        ),
        None,
        Box::new(|_, _| "next failed"),
    );
    // Had `next` been started beside `busy`, the free worker would run
    // it before these later probes (tasks spawned from outside the
    // runtime are taken in order).
    for _ in 0..3 {
        tokio::spawn(async {}).await.expect("the probe runs");
    }
    busy.release();
    assert_eq!(event(poll_fn(|cx| work.poll_next(cx)).await), "next after busy stopped");
}

/// A task spawned while another waits for a cancelled one to stop
/// goes behind it: tasks start in spawn order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_start_in_spawn_order_after_a_cancelled_one_stops() {
    let mut work: Work<&'static str> = Work::new(Handle::current(), TaskTracker::new(), 1);
    let busy = Spinner::spawn(&mut work, "busy");
    busy.entered().await;
    assert_eq!(work.cancel("busy").len(), 1);
    let started = Arc::new(Mutex::new(Vec::new()));
    let task = |name: &'static str| {
        let started = Arc::clone(&started);
        Box::pin(async move {
            started.lock().expect("not poisoned").push(name);
            name
        })
    };
    work.spawn_task("b".into(), task("b"), None, Box::new(|_, _| "b failed"));
    busy.release();
    while !work.aborted.iter().all(tokio::task::JoinHandle::is_finished) {
        tokio::task::yield_now().await;
    }
    // A slot is free now, but `b` was there first.
    work.spawn_task("c".into(), task("c"), None, Box::new(|_, _| "c failed"));
    let delivered = [event(poll_fn(|cx| work.poll_next(cx)).await), event(poll_fn(|cx| work.poll_next(cx)).await)];
    assert_eq!(delivered, ["b", "c"]);
    assert_eq!(*started.lock().expect("not poisoned"), ["b", "c"]);
}
