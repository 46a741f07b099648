//! What the executor tells the outside about the agent in `support/`:
//! subscriptions by topic, attached observers (every hop and refusal in
//! order, a panicking one, one dropped before the agent reads finished),
//! a lagging subscriber, and status published before any reply and every
//! 64 events of a long burst.

mod support;

use std::sync::{Arc, Mutex, OnceLock};

use agent_fsm::Status;
use agent_fsm::runtime::{
    self, EffectContext, Effects, MachineHandle, Notification, Topics, TryRecvError, WorkerError,
};
use support::run::{failure, input, start};
use support::{Action, ActionKind, Agent, End, Event, EventKind, Reply, Scripted, StateKind, config};

#[tokio::test(start_paused = true)]
async fn a_subscription_to_some_topics_sees_exactly_those_notifications_in_order() {
    let script = Scripted::new([Reply::tools(&["a:10", "b:20"]), Reply::text(&["hello", " there"])]);
    let handle = start(&script, config());
    let mut everything = handle.subscribe();
    let mut hops_and_output = handle.subscribe_to(Topics::TRANSITIONS | Topics::OUTPUT);
    let mut actions = handle.subscribe_to(Topics::ACTIONS);
    assert_eq!(actions.topics(), Topics::ACTIONS);
    handle.send(input("go")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();
    crate::support::within(handle.shutdown()).await.unwrap();

    let all: Vec<_> = std::iter::from_fn(|| everything.try_recv().ok()).collect();
    let some: Vec<_> = std::iter::from_fn(|| hops_and_output.try_recv().ok()).collect();
    let acts: Vec<_> = std::iter::from_fn(|| actions.try_recv().ok()).collect();
    // Read to the end, which the worker reached: nothing more will come.
    assert_eq!(everything.try_recv(), Err(TryRecvError::Closed));
    // Each filtered subscription reads the full feed's notifications of
    // its topics, in the same order, none missing.
    let of =
        |keep: fn(&Notification<Agent, String>) -> bool| all.iter().filter(|n| keep(n)).cloned().collect::<Vec<_>>();
    assert_eq!(some, of(|n| matches!(n, Notification::Transition(_) | Notification::Output(_))));
    assert_eq!(acts, of(|n| matches!(n, Notification::Action { .. })));
    assert!(some.iter().any(|n| matches!(n, Notification::Output(_))), "{some:?}");
    assert!(acts.len() >= 4, "{acts:?}");
}

/// Shares one agent's [`agent_fsm::Recorder`] with the test.
struct Shared(SharedRecorder);

/// One agent's recorder, shared.
type SharedRecorder = Arc<Mutex<agent_fsm::Recorder<Agent>>>;

impl agent_fsm::Observer<Agent> for Shared {
    fn on_transition(&mut self, step: &agent_fsm::StepOf<Agent>) {
        self.0.lock().unwrap().on_transition(step);
    }

    fn on_unhandled(&mut self, unhandled: &agent_fsm::UnhandledOf<Agent>) {
        self.0.lock().unwrap().on_unhandled(unhandled);
    }
}

#[tokio::test(start_paused = true)]
async fn an_attached_observer_sees_every_hop_and_refusal_of_its_own_agent_in_order() {
    // One recorder per agent: the configuration builds an observer per spawn.
    let made: Arc<Mutex<Vec<SharedRecorder>>> = Arc::default();
    let registry = Arc::clone(&made);
    let config = config().observer(move || {
        let recorder = Arc::new(Mutex::new(agent_fsm::Recorder::default()));
        registry.lock().unwrap().push(Arc::clone(&recorder));
        Shared(recorder)
    });
    let script = Scripted::new([Reply::tools(&["a:10", "b:20"]), Reply::text(&["hello"])]);
    let first = start(&script, config.clone());
    let idle = start(&Scripted::new([]), config);
    let mut feed = first.subscribe_to(Topics::TRANSITIONS | Topics::UNHANDLED);
    first.send(Event::RetryFired).await.unwrap(); // no row in `Waiting`
    first.send(input("go")).await.unwrap();
    crate::support::within(first.wait_idle()).await.unwrap();
    crate::support::within(idle.wait_idle()).await.unwrap();

    let recorders = made.lock().unwrap().clone();
    assert_eq!(recorders.len(), 2, "one observer per spawned agent");
    let seen = recorders[0].lock().unwrap().clone();
    let (mut hops, mut refused) = (Vec::new(), Vec::new());
    while let Ok(n) = feed.try_recv() {
        match n {
            Notification::Transition(step) => hops.push(step),
            Notification::Unhandled(u) => refused.push(u),
            other => panic!("not subscribed to {other:?}"),
        }
    }
    // The same hops and refusals as the notification feed, in order.
    assert_eq!(seen.steps, hops);
    assert_eq!(seen.unhandled, refused);
    assert_eq!(refused.len(), 1);
    assert_eq!((refused[0].state, refused[0].event), (Status::In(StateKind::Waiting), EventKind::RetryFired));
    assert_eq!(seen.states().first().copied(), Some(StateKind::Waiting));
    assert!(seen.states().contains(&StateKind::ExecutingTools), "{:?}", seen.states());
    let history = crate::support::within(first.history()).await.unwrap();
    assert_eq!(seen.steps.len(), history.transitions().len());
    // The idle agent's observer heard nothing of the other agent.
    assert_eq!(*recorders[1].lock().unwrap(), agent_fsm::Recorder::default());
}

#[tokio::test(start_paused = true)]
async fn a_panicking_observer_fails_its_agent() {
    struct Broken;
    impl<M: agent_fsm::StateMachine> agent_fsm::Observer<M> for Broken {
        fn on_transition(&mut self, _: &agent_fsm::StepOf<M>) {
            panic!("observer is broken");
        }
    }
    let handle = start(&Scripted::new([Reply::text(&["x"])]), config().observer(|| Broken));
    handle.send(input("go")).await.unwrap();
    let cause = failure(&handle).await;
    assert!(
        matches!(&*cause, WorkerError::MachinePanicked { event: EventKind::UserInput, message } if message == "observer is broken"),
        "{cause:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_panicking_observer_constructor_fails_the_agent_at_start() {
    struct Never;
    impl<M: agent_fsm::StateMachine> agent_fsm::Observer<M> for Never {}
    let handle = start(
        &Scripted::new([]),
        config().observer(|| -> Never {
            panic!("no observer today");
        }),
    );
    let cause = failure(&handle).await;
    assert!(
        matches!(&*cause, WorkerError::ConfigPanicked { callback: "observer", message } if message == "no observer today"),
        "{cause:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_observer_is_dropped_before_the_agent_is_seen_finished() {
    type Slot = Arc<OnceLock<MachineHandle<Agent, String>>>;
    /// Notes, when dropped, whether its agent already looked finished.
    struct Flushing {
        handle: Slot,
        finished_at_drop: Arc<Mutex<Option<bool>>>,
    }
    impl<M: agent_fsm::StateMachine> agent_fsm::Observer<M> for Flushing {}
    impl Drop for Flushing {
        fn drop(&mut self) {
            *self.finished_at_drop.lock().unwrap() = self.handle.get().map(MachineHandle::is_finished);
        }
    }
    let slot: Slot = Arc::default();
    let finished_at_drop = Arc::new(Mutex::new(None));
    let (s, f) = (Arc::clone(&slot), Arc::clone(&finished_at_drop));
    let config = config().observer(move || Flushing { handle: Arc::clone(&s), finished_at_drop: Arc::clone(&f) });
    let handle = start(&Scripted::new([Reply::text(&["x"])]), config);
    assert!(slot.set(handle.clone()).is_ok());
    handle.send(input("go")).await.unwrap();
    crate::support::within(handle.shutdown()).await.unwrap();
    crate::support::within(handle.wait_finished()).await.unwrap();
    assert!(handle.is_finished());
    assert_eq!(*finished_at_drop.lock().unwrap(), Some(false), "dropped before the agent was seen finished");
}

#[tokio::test(start_paused = true)]
async fn a_slow_subscriber_sees_lagged_and_keeps_receiving() {
    let many: Vec<String> = (0..40).map(|i| format!("d{i} ")).collect();
    let script = Scripted::new([Reply { deltas: many, end: End::Completed(Vec::new()) }]);
    let handle = start(&script, config().notification_capacity(8));
    let mut slow = handle.subscribe();
    handle.send(input("go")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();

    let first = slow.recv().await.unwrap();
    assert!(matches!(first, Notification::Lagged(n) if n > 0), "{first:?}");
    let mut after = 0;
    while let Ok(n) = slow.try_recv() {
        assert!(!matches!(n, Notification::Lagged(_)));
        after += 1;
    }
    assert_eq!(after, 8);

    // The subscription is still alive and sees later events.
    handle.send(input("more")).await.unwrap();
    let next = slow.recv().await.unwrap();
    assert!(matches!(next, Notification::Transition(step) if step.event == Some(EventKind::UserInput)), "{next:?}");
    crate::support::within(handle.shutdown()).await.unwrap();
    while slow.recv().await.is_some() {}
}

/// The worker hands notifications and its status over once per burst, but
/// always before it answers anyone: on a multi-thread runtime the caller
/// runs as soon as the reply is sent, and must find them there already.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_and_status_are_published_before_any_reply() {
    let handle = start(&Scripted::new([]), config());
    let mut notifications = handle.subscribe();
    for round in 1..=200 {
        // Ignored in `Waiting`: one refusal and one action per event.
        let delivered = crate::support::within(handle.call(Event::Interrupted)).await.unwrap();
        assert_eq!(
            (delivered.action(), delivered.state()),
            (Some(support::ActionKind::WaitForInput), Some(support::StateKind::Waiting))
        );
        assert_eq!(handle.steps(), round);
        let first = notifications.try_recv();
        assert!(matches!(first, Ok(Notification::Unhandled(ref u)) if u.event == EventKind::Interrupted), "{first:?}");
        let second = notifications.try_recv();
        assert!(
            matches!(second, Ok(Notification::Action { action: ActionKind::WaitForInput, performed: true })),
            "{second:?}"
        );
        assert_eq!(notifications.try_recv(), Err(TryRecvError::Empty));
    }
    for _ in 0..100 {
        handle.send(Event::Interrupted).await.unwrap();
    }
    crate::support::within(handle.wait_idle()).await.unwrap();
    assert_eq!(handle.steps(), 300);
    let mut received = 0;
    while let Ok(notification) = notifications.try_recv() {
        assert!(!matches!(notification, Notification::Lagged(_)), "{notification:?}");
        received += 1;
    }
    assert_eq!(received, 200);
    crate::support::within(handle.shutdown()).await.unwrap();
    // The configured shutdown event's hop and action, then the end.
    let last = notifications.recv().await;
    assert!(matches!(last, Some(Notification::Transition(ref step)) if step.to == StateKind::Done), "{last:?}");
    let last = notifications.recv().await;
    assert!(matches!(last, Some(Notification::Action { action: ActionKind::Shutdown, .. })), "{last:?}");
    assert_eq!(notifications.recv().await, None);
}

/// Effects that read the handle's step count while performing each action.
struct StatusProbe {
    handle: Arc<OnceLock<MachineHandle<Agent, ()>>>,
    seen: Arc<Mutex<Vec<u64>>>,
}

impl Effects<Agent> for StatusProbe {
    type Output = ();

    fn perform(&mut self, _action: Action, _cx: &mut EffectContext<'_, Agent, ()>) {
        if let Some(handle) = self.handle.get() {
            self.seen.lock().unwrap().push(handle.steps());
        }
    }
}

/// A long burst still publishes its status every 64 events, not only when
/// the worker pauses.
#[tokio::test(start_paused = true)]
async fn a_long_burst_publishes_its_status_every_64_events() {
    let probe = StatusProbe { handle: Arc::default(), seen: Arc::default() };
    let (cell, seen) = (Arc::clone(&probe.handle), Arc::clone(&probe.seen));
    let handle = runtime::spawn(Agent::new(3), probe, config().inbox_capacity(1000));
    cell.set(handle.clone()).unwrap();
    // Queued before the worker first runs: one burst of 200 events.
    for _ in 0..200 {
        handle.try_send(Event::Interrupted).unwrap();
    }
    crate::support::within(handle.wait_idle()).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    // While performing event `n`, the last publication was at the last
    // multiple of 64 before it.
    let expected: Vec<u64> = (0..200).map(|i| i / 64 * 64).collect();
    assert_eq!(seen, expected);
    assert_eq!(handle.steps(), 200);
    crate::support::within(handle.shutdown()).await.unwrap();
}
