//! The runtime's promises under a demanding user: a tokio runtime dropped
//! under a running agent, an inbox of one shared by many senders, a
//! concurrency limit of 0, zero timeouts, panicking callbacks and
//! observers, long chains of sent events, and waits racing new input.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_fsm::runtime::{EffectContext, ExecutorConfig, Outcome, RequestError, SendError, from_fn, spawn};
use agent_fsm::{Observer, StepOf};
use tokio::time::timeout;
use tokio_util::task::TaskTracker;

#[agent_fsm::state_machine(fallback = Nothing)]
mod bench {
    #[states]
    #[carry(seen: Vec<String>)]
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum State {
        #[initial]
        Ready,
        Working {
            left: u32,
        },
        #[terminal]
        Done,
    }
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        Start(u32),
        ToolDone(String),
        Input(String),
        Chain(u32),
        Stop,
        Interrupted,
    }
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
        RunTools(u32),
        Next(u32),
    }
    transitions! {
        Ready + Start(n) [*n > 0] => Working { left: n } / RunTools(n),
        Working { left } + ToolDone(name) [*left > 1] => { seen.push(name); *left -= 1; } Working / Nothing,
        Working + ToolDone(name) => { seen.push(name); } Ready / Nothing,
        Working + Interrupted => Ready / Nothing,
        Ready + Interrupted => Ready / Nothing,
        Ready + Input(text) => { seen.push(text); } Ready / Nothing,
        Ready + Chain(n) [*n > 0] => { seen.push(n.to_string()); } Ready / Next(n - 1),
        Ready + Chain(_) => Ready / Nothing,
        Ready + Stop => Done / Nothing,
    }
}
use bench::{Action, Event, Machine, State};

const LIMIT: Duration = Duration::from_secs(3600);

/// Tasks that sleep `ms` each (or never end, for `u64::MAX`).
fn effects(ms: u64) -> impl agent_fsm::runtime::Effects<Machine, Output = ()> {
    from_fn(move |action, cx: &mut EffectContext<'_, Machine, ()>| match action {
        Action::RunTools(n) => {
            for i in 0..n {
                let key = format!("t{i}");
                cx.spawn_task(
                    key.clone(),
                    async move {
                        if ms == u64::MAX {
                            std::future::pending::<()>().await;
                        }
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        Event::ToolDone(key)
                    },
                    |key, why| Event::ToolDone(format!("{key}:{why}")),
                );
            }
        }
        Action::Next(n) => cx.send(Event::Chain(n)),
        Action::Nothing => {}
    })
}

fn seen(state: &State) -> Vec<String> {
    match state {
        State::Ready { seen } | State::Working { seen, .. } | State::Done { seen } => seen.clone(),
    }
}

#[test]
fn a_dropped_tokio_runtime_closes_every_handle() {
    let first = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let handle = first.block_on(async {
        let handle = spawn(Machine::new(), effects(u64::MAX), ExecutorConfig::new());
        handle.call(Event::Start(2)).await.unwrap();
        handle
    });
    drop(first);
    let second = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    second.block_on(async {
        let idle = timeout(LIMIT, handle.wait_idle()).await.expect("wait_idle hung");
        assert!(matches!(idle, Err(RequestError::Closed)), "{idle:?}");
        let state = timeout(LIMIT, handle.state()).await.expect("state hung");
        assert!(matches!(state, Err(RequestError::Closed)), "{state:?}");
        let finished = timeout(LIMIT, handle.wait_finished()).await.expect("wait_finished hung");
        assert!(matches!(finished, Err(RequestError::Closed)), "{finished:?}");
        assert!(matches!(handle.send(Event::Stop).await, Err(SendError::Closed(_))));
        let call = timeout(LIMIT, handle.call(Event::Stop)).await.expect("call hung");
        assert!(call.is_err(), "{call:?}");
        let interrupt = timeout(LIMIT, handle.interrupt("late")).await.expect("interrupt hung");
        assert!(interrupt.is_err(), "{interrupt:?}");
        let shutdown = timeout(LIMIT, handle.shutdown()).await.expect("shutdown hung");
        assert!(shutdown.is_err(), "{shutdown:?}");
    });
}

#[tokio::test(start_paused = true)]
async fn an_inbox_of_one_shared_by_many_senders_loses_nothing() {
    let handle = spawn(Machine::new(), effects(1), ExecutorConfig::new().inbox_capacity(1));
    let mut senders = Vec::new();
    for s in 0..20 {
        let h = handle.clone();
        senders.push(tokio::spawn(async move {
            for i in 0..25 {
                h.send(Event::Input(format!("{s}:{i}"))).await.unwrap();
            }
            drop(h);
        }));
    }
    for s in senders {
        s.await.unwrap();
    }
    timeout(LIMIT, handle.wait_idle()).await.unwrap().unwrap();
    let seen = seen(&handle.state().await.unwrap());
    assert_eq!(seen.len(), 500);
    for s in 0..20 {
        let mine: Vec<_> = seen.iter().filter(|x| x.starts_with(&format!("{s}:"))).cloned().collect();
        let want: Vec<_> = (0..25).map(|i| format!("{s}:{i}")).collect();
        assert_eq!(mine, want);
    }
}

#[tokio::test(start_paused = true)]
async fn a_concurrency_limit_of_zero_still_runs_every_task() {
    let handle = spawn(Machine::new(), effects(10), ExecutorConfig::new().concurrency_limit(0));
    handle.send(Event::Start(5)).await.unwrap();
    timeout(LIMIT, handle.wait_idle()).await.unwrap().unwrap();
    let seen = seen(&handle.state().await.unwrap());
    assert_eq!(seen, ["t0", "t1", "t2", "t3", "t4"]);
}

#[tokio::test(start_paused = true)]
async fn a_zero_task_timeout_answers_each_task_once() {
    let config = ExecutorConfig::new().task_timeout(Duration::ZERO).concurrency_limit(1);
    let handle = spawn(Machine::new(), effects(u64::MAX), config);
    handle.send(Event::Start(3)).await.unwrap();
    timeout(LIMIT, handle.wait_idle()).await.unwrap().unwrap();
    let seen = seen(&handle.state().await.unwrap());
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(handle.status().to_string(), "Ready");
}

#[tokio::test(start_paused = true)]
async fn a_long_chain_of_sent_events_finishes_and_an_interrupt_cuts_it() {
    let handle = spawn(Machine::new(), effects(1), ExecutorConfig::new());
    handle.send(Event::Chain(20_000)).await.unwrap();
    timeout(LIMIT, handle.wait_idle()).await.unwrap().unwrap();
    assert_eq!(seen(&handle.state().await.unwrap()).len(), 20_000);

    let config = ExecutorConfig::new().interrupt_event(bench::EventKind::Interrupted, |_| Event::Interrupted);
    let handle = spawn(Machine::new(), effects(1), config);
    // Answered once the chain's first step is taken: the chain runs.
    timeout(LIMIT, handle.call(Event::Chain(1_000_000))).await.unwrap().unwrap();
    timeout(LIMIT, handle.interrupt("enough")).await.unwrap().unwrap();
    timeout(LIMIT, handle.wait_idle()).await.unwrap().unwrap();
    assert!(seen(&handle.state().await.unwrap()).len() < 1_000_000);
}

#[tokio::test(start_paused = true)]
async fn wait_idle_racing_sends_sees_everything_sent_before_it() {
    let handle = spawn(Machine::new(), effects(5), ExecutorConfig::new().inbox_capacity(2));
    let h = handle.clone();
    let sender = tokio::spawn(async move {
        for i in 0..50 {
            h.send(Event::Start(2)).await.unwrap();
            h.send(Event::Input(i.to_string())).await.unwrap();
            timeout(LIMIT, h.wait_idle()).await.unwrap().unwrap();
            let seen = seen(&h.state().await.unwrap());
            assert_eq!(seen.last(), Some(&i.to_string()), "{seen:?}");
        }
    });
    for _ in 0..100 {
        timeout(LIMIT, handle.wait_idle()).await.unwrap().unwrap();
        tokio::task::yield_now().await;
    }
    sender.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_panicking_on_failure_during_an_interrupt_fails_the_agent_and_leaks_no_task() {
    let tracker = TaskTracker::new();
    let config = ExecutorConfig::new()
        .interrupt_event(bench::EventKind::Interrupted, |_| Event::Interrupted)
        .tracker(tracker.clone());
    let fx = from_fn(move |action, cx: &mut EffectContext<'_, Machine, ()>| {
        if let Action::RunTools(n) = action {
            for i in 0..n {
                cx.spawn_task(format!("t{i}"), std::future::pending::<Event>(), |_, _| panic!("on_failure boom"));
            }
        }
    });
    let handle = spawn(Machine::new(), fx, config);
    handle.send(Event::Start(3)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1)).await;
    let interrupt = timeout(LIMIT, handle.interrupt("stop")).await.expect("interrupt hung");
    assert!(matches!(interrupt, Err(RequestError::Failed(_))), "{interrupt:?}");
    assert!(matches!(timeout(LIMIT, handle.state()).await.unwrap(), Err(RequestError::Failed(_))));
    assert!(matches!(timeout(LIMIT, handle.wait_finished()).await.unwrap(), Err(RequestError::Failed(_))));
    tracker.close();
    timeout(LIMIT, tracker.wait()).await.expect("tasks outlived a failed agent");
}

struct Panicky(Arc<AtomicUsize>);
impl Observer<Machine> for Panicky {
    fn on_transition(&mut self, _: &StepOf<Machine>) {
        if self.0.fetch_add(1, Ordering::SeqCst) == 2 {
            panic!("observer boom");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_observer_mid_work_fails_the_agent_and_leaks_no_task() {
    let tracker = TaskTracker::new();
    let count = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&count);
    let config = ExecutorConfig::new().observer(move || Panicky(Arc::clone(&c))).tracker(tracker.clone());
    let handle = spawn(Machine::new(), effects(10), config);
    handle.send(Event::Start(1)).await.unwrap();
    handle.send(Event::Start(5)).await.unwrap();
    let idle = timeout(LIMIT, handle.wait_idle()).await.expect("wait_idle hung");
    assert!(matches!(idle, Err(RequestError::Failed(_))), "{idle:?}");
    assert!(matches!(handle.send(Event::Stop).await, Err(SendError::Failed(..))));
    tracker.close();
    timeout(LIMIT, tracker.wait()).await.expect("tasks outlived a failed agent");
}

#[tokio::test(start_paused = true)]
async fn terminal_mid_burst_answers_later_calls_and_sends() {
    let handle = spawn(Machine::new(), effects(1), ExecutorConfig::new().inbox_capacity(4));
    for i in 0..3 {
        handle.send(Event::Input(i.to_string())).await.unwrap();
    }
    handle.send(Event::Stop).await.unwrap();
    // The inbox is full: the call waits, and the worker closes the inbox
    // on reaching `Done`, before it records how it ended.
    let late = timeout(LIMIT, handle.call(Event::Input("late".into()))).await.expect("call hung");
    let late = late.expect("a call refused by a finished machine reads `Finished`");
    assert!(matches!(late.outcome, Outcome::Finished { state: bench::StateKind::Done }), "{late:?}");
    assert!(!late.performed);
    let after = handle.send(Event::Input("after".into())).await;
    assert!(matches!(after, Err(SendError::Closed(_))), "{after:?}");
    let state = handle.state().await.unwrap();
    assert_eq!(seen(&state), ["0", "1", "2"]);
    assert!(matches!(state, State::Done { .. }));
    assert!(timeout(LIMIT, handle.wait_idle()).await.unwrap().is_err());
}

#[tokio::test(start_paused = true)]
async fn a_lagging_subscriber_and_a_dropped_one_do_not_stall_the_agent() {
    let handle = spawn(Machine::new(), effects(1), ExecutorConfig::new().notification_capacity(1));
    let mut lagging = handle.subscribe();
    let dropped = handle.subscribe();
    drop(dropped);
    for i in 0..200 {
        handle.send(Event::Input(i.to_string())).await.unwrap();
    }
    timeout(LIMIT, handle.wait_idle()).await.unwrap().unwrap();
    assert_eq!(seen(&handle.state().await.unwrap()).len(), 200);
    handle.send(Event::Stop).await.unwrap();
    timeout(LIMIT, handle.wait_finished()).await.unwrap().unwrap();
    // The lagging subscriber still reaches the end.
    let mut got = 0;
    while timeout(LIMIT, lagging.recv()).await.expect("recv hung").is_some() {
        got += 1;
    }
    assert!(got >= 1);
}

#[tokio::test(start_paused = true)]
async fn timers_of_zero_and_huge_delays() {
    let fx = from_fn(|action, cx: &mut EffectContext<'_, Machine, ()>| {
        if let Action::RunTools(_) = action {
            cx.pause(Duration::MAX, Event::ToolDone("never".into()));
            cx.deadline(Duration::MAX, Event::ToolDone("never".into()));
            cx.pause(Duration::ZERO, Event::ToolDone("zero".into()));
        }
    });
    let handle = spawn(Machine::new(), fx, ExecutorConfig::new());
    handle.send(Event::Start(1)).await.unwrap();
    timeout(LIMIT, handle.wait_idle()).await.unwrap().unwrap();
    assert_eq!(handle.state().await.unwrap(), State::Ready { seen: vec!["zero".into()] });
}

#[tokio::test(start_paused = true)]
async fn handles_cloned_and_dropped_from_many_tasks_then_shutdown_races_calls() {
    let handle = spawn(Machine::new(), effects(3), ExecutorConfig::new().inbox_capacity(1));
    let mut jobs = Vec::new();
    for i in 0..50 {
        let h = handle.clone();
        jobs.push(tokio::spawn(async move {
            let c = h.clone();
            drop(h);
            let r = c.call(Event::Input(i.to_string())).await;
            (i, r.is_ok())
        }));
    }
    let shut = timeout(LIMIT, handle.shutdown()).await.expect("shutdown hung");
    assert!(shut.is_ok(), "{shut:?}");
    for j in jobs {
        let (i, ok) = timeout(LIMIT, j).await.expect("a call hung past shutdown").unwrap();
        assert!(ok, "call {i} read an error from a machine shut down normally");
    }
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_racing_shutdown_mid_work_leaves_nothing_running() {
    let tracker = TaskTracker::new();
    let config = ExecutorConfig::new()
        .interrupt_event(bench::EventKind::Interrupted, |_| Event::Interrupted)
        .tracker(tracker.clone());
    let handle = spawn(Machine::new(), effects(u64::MAX), config);
    handle.call(Event::Start(3)).await.unwrap();
    let h = handle.clone();
    let interrupt = tokio::spawn(async move { h.interrupt("race").await });
    let shut = timeout(LIMIT, handle.shutdown()).await.expect("shutdown hung");
    assert!(shut.is_ok(), "{shut:?}");
    let _ = timeout(LIMIT, interrupt).await.expect("interrupt hung").unwrap();
    tracker.close();
    timeout(LIMIT, tracker.wait()).await.expect("tasks outlived shutdown");
}
