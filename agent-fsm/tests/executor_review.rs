//! Bursts and the history's counted self-loops, seen from outside: an
//! event an action sends, a task it starts or an idle waiter it asks for
//! in the middle of a burst is seen before the next queued event, and the
//! history of bursts of self-loops (across a refused event, a status
//! refresh, a change of state, calls and a pause) reads back hop by hop
//! with the right steps, times and evictions, for small capacities too.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Waker};
use std::time::Duration;

use agent_fsm::runtime::{self, EffectContext, ExecutorConfig, History, MachineHandle, RequestError};
use agent_fsm::state_machine;
use tokio::time::{Instant, timeout};

#[allow(unreachable_pub)] // the generated items are `pub` in a private module
#[state_machine(fallback = Nothing)]
mod looper {
    #[states]
    #[derive(Debug)]
    pub enum State {
        #[initial]
        Here,
        There,
    }
    #[events]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Event {
        Tick,
        Mark,
        Go,
        /// No row takes it: refused.
        Stray,
    }
    #[actions]
    #[derive(Debug)]
    pub enum Action {
        Count,
        Nothing,
    }
    transitions! {
        Here + Tick => Here / Count,
        Here + Mark => Here / Nothing,
        Here + Go => There / Nothing,
        There + Tick => There / Count,
        There + Mark => There / Nothing,
        There + Go => Here / Nothing,
    }
}

use looper::{Event, EventKind, Machine, StateKind};

type Handle = MachineHandle<Machine, ()>;

/// Events queued before the worker first runs: several bursts' worth of
/// `try_recv`s, fewer than the inbox holds.
const QUEUED: u32 = 20;

/// The `Count` action whose effects do something to the running worker.
const AT: u32 = 5;

/// Spawns the machine with effects that call `at` on the `AT`th `Count`,
/// and queues `QUEUED` ticks before the worker runs (no request queued:
/// the worker takes them as one burst).
fn spawn_with(
    config: ExecutorConfig<Machine>,
    at: impl Fn(&Handle, &mut EffectContext<'_, Machine, ()>) + Send + 'static,
) -> Handle {
    let counted = AtomicU32::new(0);
    let slot: Arc<OnceLock<Handle>> = Arc::new(OnceLock::new());
    let inner = Arc::clone(&slot);
    let effects = runtime::from_fn(move |action, cx: &mut EffectContext<'_, Machine, ()>| {
        if matches!(action, looper::Action::Count) && counted.fetch_add(1, Ordering::SeqCst) + 1 == AT {
            at(inner.get().expect("the handle is set before the worker runs"), cx);
        }
    });
    let handle = runtime::spawn(Machine::new(), effects, config);
    assert!(slot.set(handle.clone()).is_ok());
    for _ in 0..QUEUED {
        handle.try_send(Event::Tick).unwrap();
    }
    handle
}

/// The events the machine handled, in order.
async fn delivered(handle: &Handle) -> Vec<Event> {
    let history = crate::support::within(handle.history()).await.unwrap();
    history.events().expect("events are recorded").iter().map(|record| record.event.clone()).collect()
}

/// `QUEUED` ticks with a `Mark` right after the `AT`th.
fn ticks_with_mark_after_at() -> Vec<Event> {
    let mut expected = vec![Event::Tick; QUEUED as usize];
    expected.insert(AT as usize, Event::Mark);
    expected
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_event_an_action_sends_in_the_middle_of_a_burst_comes_before_the_next_queued_event() {
    let handle = spawn_with(ExecutorConfig::new().record_events(), |_, cx| cx.send(Event::Mark));
    // No idle waiter: the worker runs the queue as a burst.
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(handle.steps(), u64::from(QUEUED + 1));
    assert_eq!(delivered(&handle).await, ticks_with_mark_after_at());
    crate::support::within(handle.shutdown()).await.unwrap();
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_task_started_in_the_middle_of_a_burst_holds_the_queued_events_until_its_own() {
    let handle = spawn_with(ExecutorConfig::new().record_events(), |_, cx| {
        cx.spawn_task(
            "slow",
            async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Event::Mark
            },
            |_, _| Event::Mark,
        );
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(handle.steps(), u64::from(AT), "queued events taken while the task was in flight");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(delivered(&handle).await, ticks_with_mark_after_at());
    crate::support::within(handle.shutdown()).await.unwrap();
}

type StepsWhenIdle = Pin<Box<dyn Future<Output = Result<u64, RequestError<Machine>>> + Send>>;

/// `wait_idle` asked by an action's effects (its request queued at once)
/// while the burst still has events queued: answered once they are all
/// handled, neither before nor never.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_idle_waiter_asked_in_the_middle_of_a_burst_is_answered_once_the_inbox_is_empty() {
    let waiting: Arc<Mutex<Option<StepsWhenIdle>>> = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&waiting);
    let handle = spawn_with(ExecutorConfig::new(), move |handle, _| {
        let handle = handle.clone();
        let mut idle: StepsWhenIdle = Box::pin(async move {
            crate::support::within(handle.wait_idle()).await?;
            Ok(handle.steps())
        });
        // As far as its first await: the request is queued.
        assert!(idle.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
        *slot.lock().unwrap() = Some(idle);
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    let idle = waiting.lock().unwrap().take().expect("the AT-th action asked");
    let steps = timeout(Duration::from_secs(10), idle).await.expect("the idle waiter was answered").unwrap();
    assert_eq!(steps, u64::from(QUEUED), "answered before the inbox was empty");
    crate::support::within(handle.shutdown()).await.unwrap();
}

/// One hop as a reader expects it: step, from, event, to, start, duration.
type Hop = (u64, StateKind, Option<EventKind>, StateKind, Instant, Duration);

/// The hops of `history`, as [`Hop`]s, and how many were evicted.
fn hops(history: &History<Machine>) -> (Vec<Hop>, u64) {
    let hops = history.transitions().map(|r| (r.step, r.from, r.event, r.to, r.start, r.duration)).collect();
    (hops, history.evicted())
}

/// Bursts of identical self-loops, split by a refused event, a status
/// refresh (64 steps), a change of state, calls and a pause, read back
/// from the running worker and from the stopped one: every hop with its
/// own step, the start and stay it had, the latest `capacity` kept and
/// the rest counted evicted, for capacities down to 0.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn bursts_of_self_loops_read_back_hop_by_hop_at_every_capacity() {
    for capacity in [0, 1, 2, 3, 5, 200] {
        let t0 = Instant::now();
        let config = ExecutorConfig::new().history_capacity(capacity).inbox_capacity(256);
        let handle = runtime::spawn(Machine::new(), (), config);
        // Burst one, at t0: 70 ticks (past the 64th step's clock refresh),
        // a refused event, 3 ticks, a change of state, 2 ticks there.
        let mut burst = vec![Event::Tick; 70];
        burst.push(Event::Stray);
        burst.extend([Event::Tick, Event::Tick, Event::Tick, Event::Go, Event::Tick, Event::Tick]);
        for event in &burst {
            handle.try_send(event.clone()).unwrap();
        }
        let mut all: Vec<Hop> = Vec::new();
        for (index, event) in burst.iter().enumerate() {
            let step = index as u64 + 1;
            let (from, to) =
                if index < 74 { (StateKind::Here, StateKind::Here) } else { (StateKind::There, StateKind::There) };
            match event {
                Event::Stray => {}
                Event::Go => {
                    all.push((step, StateKind::Here, Some(EventKind::Go), StateKind::There, t0, Duration::ZERO))
                }
                _ => all.push((step, from, Some(EventKind::Tick), to, t0, Duration::ZERO)),
            }
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
        let t1 = Instant::now();
        // Two calls at t1, then three queued ticks as one more burst.
        for _ in 0..2 {
            crate::support::within(handle.call(Event::Tick)).await.unwrap();
        }
        for _ in 0..3 {
            handle.try_send(Event::Tick).unwrap();
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        for step in 78..=82 {
            all.push((step, StateKind::There, Some(EventKind::Tick), StateKind::There, t0, t1 - t0));
        }
        let kept = all.len().min(capacity);
        let expected = (all[all.len() - kept..].to_vec(), (all.len() - kept) as u64);

        let running = crate::support::within(handle.history()).await.unwrap();
        assert_eq!(hops(&running), expected, "capacity {capacity}: the running worker's history");
        assert_eq!(running.steps(), 82);
        // Read twice: the first read unfolded the log, the second sees it so.
        let again = handle.with_history(hops).await.unwrap();
        assert_eq!(again, expected, "capacity {capacity}: read again");
        crate::support::within(handle.shutdown()).await.unwrap();
        let parked = crate::support::within(handle.history()).await.unwrap();
        assert_eq!(hops(&parked), expected, "capacity {capacity}: the stopped worker's history");
        assert_eq!(
            format!("{parked:?}").matches("TransitionRecord").count(),
            kept,
            "capacity {capacity}: Debug shows the hops kept"
        );
    }
}

/// A subscription taken by an action's effects in the middle of a burst
/// gets every hop after that step, none before, none missed.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_subscription_taken_in_the_middle_of_a_burst_gets_every_later_hop() {
    use agent_fsm::runtime::{Notification, Subscription};
    let taken: Arc<Mutex<Option<Subscription<Machine, ()>>>> = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&taken);
    let handle = spawn_with(ExecutorConfig::new(), move |handle, _| {
        *slot.lock().unwrap() = Some(handle.subscribe());
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(handle.steps(), u64::from(QUEUED));
    let mut subscription = taken.lock().unwrap().take().expect("the AT-th action subscribed");
    crate::support::within(handle.shutdown()).await.unwrap();
    let (mut transitions, mut lagged) = (0, 0);
    while let Some(notification) = timeout(Duration::from_secs(10), subscription.recv()).await.expect("the feed ends") {
        match notification {
            Notification::Transition(_) => transitions += 1,
            Notification::Lagged(missed) => lagged += missed,
            _ => {}
        }
    }
    assert_eq!((transitions, lagged), (QUEUED - AT, 0), "(hops after the subscription, notifications missed)");
}

/// A history read by an action's effects in the middle of a burst (the
/// read unfolds the log between two self-loops of one run) shows the hops
/// up to that step; a read after the burst shows every hop, the run
/// continued after the first read included, for capacities down to 0.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_history_read_in_the_middle_of_a_run_of_self_loops_leaves_the_rest_exact() {
    type Read = Pin<Box<dyn Future<Output = Result<(Vec<Hop>, u64), RequestError<Machine>>> + Send>>;
    for capacity in [0, 1, 2, 3, 4, 7, 100] {
        let t0 = Instant::now();
        let read: Arc<Mutex<Option<Read>>> = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&read);
        let handle = spawn_with(ExecutorConfig::new().history_capacity(capacity), move |handle, _| {
            let handle = handle.clone();
            let mut read: Read = Box::pin(async move { handle.with_history(hops).await });
            assert!(read.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
            *slot.lock().unwrap() = Some(read);
        });
        tokio::time::sleep(Duration::from_millis(1)).await;
        let tick =
            |step: u32| (u64::from(step), StateKind::Here, Some(EventKind::Tick), StateKind::Here, t0, Duration::ZERO);
        let latest = |last: u32| {
            let kept = (last as usize).min(capacity) as u32;
            ((last - kept + 1..=last).map(tick).collect::<Vec<_>>(), u64::from(last - kept))
        };
        let first = read.lock().unwrap().take().expect("the AT-th action read the history");
        let first = timeout(Duration::from_secs(10), first).await.expect("the read is answered").unwrap();
        assert_eq!(first, latest(AT), "capacity {capacity}: the read in the middle of the burst");
        let after = handle.with_history(hops).await.unwrap();
        assert_eq!(after, latest(QUEUED), "capacity {capacity}: the read after the burst");
        crate::support::within(handle.shutdown()).await.unwrap();
    }
}

/// On a multi-threaded runtime, idle waiters asked while other threads
/// keep the inbox full, in the middle of bursts at any point: each is
/// answered (none lost to a burst that went to sleep past it), and one
/// asked after the last send returns sees every event handled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_waiters_racing_bursts_on_other_threads_are_all_answered() {
    const ROUNDS: u64 = 20;
    const SENT: u64 = 300;
    let handle = runtime::spawn(Machine::new(), (), ExecutorConfig::new().inbox_capacity(64));
    for round in 1..=ROUNDS {
        let sender = handle.clone();
        let sending = tokio::spawn(async move {
            for _ in 0..SENT {
                sender.send(Event::Tick).await.unwrap();
            }
        });
        let waiter = handle.clone();
        let waiting = tokio::spawn(async move {
            for _ in 0..10 {
                timeout(Duration::from_secs(10), waiter.wait_idle()).await.expect("answered").unwrap();
                tokio::task::yield_now().await;
            }
        });
        timeout(Duration::from_secs(30), sending).await.expect("the sends finish").unwrap();
        timeout(Duration::from_secs(30), waiting).await.expect("the waiters are answered").unwrap();
        timeout(Duration::from_secs(10), handle.wait_idle()).await.expect("answered").unwrap();
        assert_eq!(handle.steps(), round * SENT, "idle before every sent event was handled");
    }
    crate::support::within(handle.shutdown()).await.unwrap();
}
