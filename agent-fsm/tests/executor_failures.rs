//! Failures of the worker and of user code: typed, comparable errors;
//! effects, observers and an event's `Clone` that panic where the worker
//! calls or drops them; `cancel_task` on a task that already failed; a row
//! left early without a panic; and what a failed worker reports.

mod support;

use std::sync::Arc;

use agent_fsm::runtime::{EffectFailure, RequestError, TryRecvError, WorkerError};
use support::Agent;

#[test]
fn effect_failures_and_request_errors_are_comparable_errors() {
    fn describe(error: &dyn std::error::Error) -> String {
        error.to_string()
    }
    assert_eq!(describe(&EffectFailure::TimedOut), "timed out");
    assert_eq!(describe(&EffectFailure::Cancelled), "cancelled");
    assert_eq!(describe(&EffectFailure::Panicked("boom".to_owned())), "panicked: boom");
    assert_eq!(RequestError::<Agent>::Closed, RequestError::Closed);
    assert_ne!(RequestError::<Agent>::Closed, RequestError::Poisoned);
    let failed = RequestError::<Agent>::Failed(Arc::new(WorkerError::NoRuntime));
    assert_eq!(failed, RequestError::Failed(Arc::new(WorkerError::NoRuntime)));
    assert_eq!(describe(&TryRecvError::Empty), "no notification is ready");
}

mod user_code {
    //! Streams that are always ready, and user code (effects, observers,
    //! an event's `Clone`) that panics where the worker calls or drops it.

    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use agent_fsm::runtime::{self, EffectContext, ExecutorConfig, Performing, RequestError, WorkerError};

    #[allow(unreachable_pub)]
    #[agent_fsm::state_machine(fallback = Nothing)]
    pub mod streams {
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            #[initial]
            Idle,
            Busy,
        }

        #[events]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            Go,
            Second,
            Item(u32),
        }

        #[actions]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            Nothing,
            Start,
            OpenSecond,
            Got(u32),
        }

        transitions! {
            Idle + Go => Busy / Start,
            Busy + Second => Busy / OpenSecond,
            Busy + Item(n) => Busy / Got(n),
            Busy + Go => Idle / Nothing,
        }
    }

    /// A payload whose `Clone` panics.
    #[allow(unreachable_pub)]
    #[derive(Debug)]
    pub struct Brittle;

    impl Clone for Brittle {
        fn clone(&self) -> Self {
            panic!("Brittle cannot be cloned")
        }
    }

    #[allow(unreachable_pub)]
    #[agent_fsm::state_machine(fallback = Nothing)]
    pub mod brittle {
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            #[initial]
            Idle,
        }

        #[events]
        #[derive(Debug, Clone)]
        pub enum Event {
            Poke(super::Brittle),
        }

        #[actions]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            Nothing,
        }

        transitions! {
            Idle + Poke(_) => Idle / Nothing,
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[tokio::test(start_paused = true)]
    async fn an_always_ready_stream_neither_starves_another_nor_hides_its_deadline() {
        use streams::{Action, Event, Machine};
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&log);
        let fx = runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| match action {
            Action::Start => {
                cx.stream(futures::stream::repeat(Event::Item(0)), |_| None);
                cx.send(Event::Second);
            }
            Action::OpenSecond => {
                let failures = Arc::clone(&seen);
                let second =
                    futures::StreamExt::chain(futures::stream::iter([Event::Item(7)]), futures::stream::pending());
                cx.stream(second, move |failure| {
                    failures.lock().unwrap().push(format!("second: {failure:?}"));
                    None
                });
            }
            Action::Got(7) => seen.lock().unwrap().push("got 7".to_owned()),
            _ => {}
        });
        let config = ExecutorConfig::new().action_timeout(streams::ActionKind::OpenSecond, ms(10));
        let handle = runtime::spawn(Machine::new(), fx, config);
        handle.send(Event::Go).await.unwrap();
        // The first stream never rests, so time only moves when told to.
        for _ in 0..20 {
            tokio::time::advance(ms(5)).await;
            tokio::task::yield_now().await;
        }
        let seen_by_100ms = log.lock().unwrap().clone();
        assert_eq!(seen_by_100ms, ["got 7", "second: TimedOut"]);
        crate::support::within(handle.shutdown()).await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_whose_action_panics_in_the_effects_reports_the_failure() {
        use streams::{Action, ActionKind, Event, Machine};
        let fx = runtime::from_fn(|_: Action, _: &mut EffectContext<'_, Machine, ()>| panic!("effects always panic"));
        let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new());
        let Err(RequestError::Failed(error)) = crate::support::within(handle.call(Event::Go)).await else {
            panic!("the call must report the failure");
        };
        assert!(
            matches!(&*error, WorkerError::EffectsPanicked { performing: Performing::Action(ActionKind::Start), .. }),
            "{error:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_panicking_clone_for_the_event_log_fails_the_worker_without_unwinding_it() {
        use brittle::{Action, Event, EventKind, Machine};
        let fx = runtime::from_fn(|_: Action, _: &mut EffectContext<'_, Machine, ()>| {});
        let (handle, worker) = runtime::pair(Machine::new(), fx, ExecutorConfig::new().record_events());
        let worker = tokio::spawn(worker);
        let Err(RequestError::Failed(error)) = crate::support::within(handle.call(Event::Poke(Brittle))).await else {
            panic!("the call must report the failure");
        };
        assert_eq!(
            *error,
            WorkerError::EventClonePanicked { event: EventKind::Poke, message: "Brittle cannot be cloned".to_owned() }
        );
        assert!(crate::support::within(worker).await.is_ok(), "the worker future must not panic");
    }

    /// Panics when dropped.
    struct DropPanics;

    impl Drop for DropPanics {
        fn drop(&mut self) {
            panic!("dropped")
        }
    }

    struct PanickyObserver(#[allow(dead_code)] DropPanics);

    impl<M: agent_fsm::StateMachine> agent_fsm::Observer<M> for PanickyObserver {}

    #[tokio::test(start_paused = true)]
    async fn effects_and_an_observer_that_panic_when_dropped_do_not_unwind_the_worker() {
        use streams::{Action, Machine};
        let guard = DropPanics;
        let fx = runtime::from_fn(move |_: Action, _: &mut EffectContext<'_, Machine, ()>| {
            let _ = &guard;
        });
        let config = ExecutorConfig::new().observer(|| PanickyObserver(DropPanics));
        let (handle, worker) = runtime::pair(Machine::new(), fx, config);
        let worker = tokio::spawn(worker);
        handle.send(streams::Event::Go).await.unwrap();
        assert_eq!(handle.shutdown().await.unwrap(), streams::StateKind::Busy);
        assert!(crate::support::within(worker).await.is_ok(), "the worker future must not panic");
        // The outcome stands: the final state is readable.
        assert_eq!(handle.status().to_string(), "Busy");
    }
}

mod cancel_after_failure {
    //! `cancel_task` on a task that already failed on its own: the machine
    //! gets the real failure, and subscribers hear of it as of any other.

    use agent_fsm::runtime::{self, EffectContext, EffectFailure, ExecutorConfig, Notification, Topics};

    #[allow(unreachable_pub)]
    #[agent_fsm::state_machine(fallback = Nothing)]
    pub mod tool {
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            #[initial]
            Idle,
            Running,
        }

        #[events]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            Go,
            Tick(u32),
            Result(Result<String, String>),
        }

        #[actions]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            Nothing,
            Spawn,
            Work(u32),
            Got(Result<String, String>),
        }

        transitions! {
            Idle + Go => Running / Spawn,
            Running + Tick(n) => Running / Work(n),
            Running + Result(r) => Idle / Got(r),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_that_failed_before_its_cancel_is_published_as_failed() {
        use tool::{Action, Event, Machine};
        let fx = runtime::from_fn(|action: Action, cx: &mut EffectContext<'_, Machine, ()>| match action {
            Action::Spawn => {
                cx.spawn_task("t1", async move { panic!("tool blew up") }, |_key, why| {
                    Event::Result(Err(why.to_string()))
                });
                cx.send(Event::Tick(1));
            }
            // A chain of sends longer than 1,024 pauses once, which lets
            // the task run (and panic) before the worker looks at it; the
            // cancel then finds it finished.
            Action::Work(n) if n < 1100 => cx.send(Event::Tick(n + 1)),
            Action::Work(_) => assert!(cx.cancel_task("t1")),
            _ => {}
        });
        let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new().record_events());
        let mut faults = handle.subscribe_to(Topics::FAULTS);
        handle.send(Event::Go).await.unwrap();
        crate::support::within(handle.wait_idle()).await.unwrap();
        let history = crate::support::within(handle.history()).await.unwrap();
        crate::support::within(handle.shutdown()).await.unwrap();
        let results: Vec<_> = history
            .events()
            .unwrap()
            .iter()
            .filter_map(|r| match &r.event {
                Event::Result(x) => Some(x.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(results, [Err("panicked: tool blew up".to_owned())]);
        let mut seen = Vec::new();
        while let Some(notification) = faults.recv().await {
            if let Notification::EffectFailed { key, failure } = notification {
                seen.push((key, failure));
            }
        }
        assert_eq!(seen, [(Some("t1".to_owned()), EffectFailure::Panicked("tool blew up".into()))]);
    }
}

mod poisoned_without_a_panic {
    //! A row whose code leaves it early without panicking (a macro of the
    //! user's that returns) poisons the machine: the worker fails with a
    //! typed error, as for a panic, instead of running a machine that has
    //! no state.

    use agent_fsm::runtime::{self, EffectContext, ExecutorConfig, RequestError, WorkerError};

    /// Leaves the row the way a user's macro might.
    macro_rules! bail {
        () => {
            return Default::default()
        };
    }

    // The row's code after `bail!()` never runs, which rustc notes.
    #[allow(unreachable_pub, unreachable_code)]
    #[agent_fsm::state_machine(fallback = Nothing)]
    pub mod early {
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            #[initial]
            Idle,
            Busy,
            #[transient]
            Checking,
        }

        #[events]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            Go,
            Bail,
            Check,
        }

        #[actions]
        #[derive(Debug, Clone, PartialEq, Default)]
        pub enum Action {
            #[default]
            Nothing,
            Start,
        }

        transitions! {
            Idle + Go => Busy / Start,
            Busy + Bail => { bail!(); } Idle / Nothing,
            Busy + Check => Checking,
            Checking => { bail!(); } Idle / Start,
        }
    }
    use early::{Event, Machine};

    #[tokio::test(start_paused = true)]
    async fn the_worker_fails_with_a_typed_error() {
        let performed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = std::sync::Arc::clone(&performed);
        let fx = runtime::from_fn(move |action: early::Action, _: &mut EffectContext<'_, Machine, ()>| {
            log.lock().unwrap().push(action);
        });
        let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new());
        crate::support::within(handle.call(Event::Go)).await.unwrap();
        let poisoned = |e: &RequestError<Machine>| matches!(e, RequestError::Failed(cause) if **cause == WorkerError::MachinePoisoned { event: early::EventKind::Bail });
        // The step that poisons answers its call so; the worker has failed.
        let delivered = crate::support::within(handle.call(Event::Bail)).await.expect("the call is answered");
        assert_eq!(delivered.outcome, runtime::Outcome::Poisoned);
        assert!(poisoned(&crate::support::within(handle.wait_finished()).await.expect_err("failed")));
        let err = crate::support::within(handle.call(Event::Go)).await.expect_err("the worker failed");
        assert!(poisoned(&err), "{err:?}");
        assert!(handle.send(Event::Go).await.is_err());
        // The action the early return gave is not performed.
        assert_eq!(*performed.lock().unwrap(), [early::Action::Start]);
    }

    /// The same after a hop into a transient state, in the step itself.
    #[tokio::test(start_paused = true)]
    async fn after_a_hop_into_a_transient_state_too() {
        let fx = runtime::from_fn(|_: early::Action, _: &mut EffectContext<'_, Machine, ()>| {});
        let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new());
        crate::support::within(handle.call(Event::Go)).await.unwrap();
        let delivered = crate::support::within(handle.call(Event::Check)).await.expect("the call is answered");
        assert_eq!(delivered.outcome, runtime::Outcome::Poisoned);
        let err = crate::support::within(handle.wait_finished()).await.expect_err("the machine is poisoned");
        assert!(
            matches!(&err, RequestError::Failed(cause) if **cause == WorkerError::MachinePoisoned { event: early::EventKind::Check }),
            "{err:?}"
        );
    }
}

/// What a failed worker says about the failure: which task's callback
/// panicked, and a state name that no longer looks alive.
mod failure_reports {
    use agent_fsm::runtime::{self, EffectContext, ExecutorConfig, Performing, RequestError, WorkerError};

    #[allow(unreachable_pub)]
    #[agent_fsm::state_machine(fallback = Nothing)]
    pub mod touchy {
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            #[initial]
            Idle,
            Busy,
        }

        #[events]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            Go(u32),
            Back,
        }

        #[actions]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            Nothing,
            Work(u32),
        }

        transitions! {
            Idle + Go(n) [{ assert!(*n != 13, "unlucky {n}"); true }] => Busy / Work(n),
            Busy + Go(n) => { assert!(n != 13, "unlucky {n}"); } Idle / Nothing,
            Busy + Back => Idle / Nothing,
        }
    }

    use touchy::{Action, Event, Machine};

    fn failure(err: RequestError<Machine>) -> WorkerError<Machine> {
        match err {
            RequestError::Failed(cause) => (*cause).clone(),
            other => panic!("expected the worker to fail, got {other:?}"),
        }
    }

    /// A guard's panic leaves the state whole, but the worker has failed
    /// and will not touch the machine again: its name reads as poisoned.
    #[tokio::test(start_paused = true)]
    async fn a_panic_in_a_guard_reads_as_poisoned() {
        let handle = runtime::spawn(
            Machine::new(),
            runtime::from_fn(|_: Action, _: &mut EffectContext<'_, Machine, ()>| {}),
            ExecutorConfig::new(),
        );
        let err = crate::support::within(handle.call(Event::Go(13))).await.expect_err("the guard panics");
        assert!(matches!(failure(err), WorkerError::MachinePanicked { event: touchy::EventKind::Go, .. }));
        let _ = crate::support::within(handle.wait_finished()).await;
        assert_eq!(handle.status(), agent_fsm::Status::Poisoned);
    }

    /// A machine poisoned before it was spawned (a block panicked after
    /// its state was taken) fails the worker at once, with an error that
    /// says so rather than blaming the first event sent to it.
    #[tokio::test(start_paused = true)]
    async fn a_machine_poisoned_before_it_was_spawned_fails_at_start() {
        use agent_fsm::StateMachine;
        let mut machine = Machine::new();
        machine.handle_event(Event::Go(1));
        let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| machine.handle_event(Event::Go(13))));
        assert!(step.is_err() && machine.is_poisoned(), "the block's panic poisons the machine");
        let handle = runtime::spawn(
            machine,
            runtime::from_fn(|_: Action, _: &mut EffectContext<'_, Machine, ()>| {}),
            ExecutorConfig::new(),
        );
        let err =
            crate::support::within(handle.call(Event::Back)).await.expect_err("the worker never handles an event");
        assert_eq!(failure(err), WorkerError::SpawnedPoisoned);
        assert_eq!(handle.status(), agent_fsm::Status::Poisoned);
        assert!(
            matches!(crate::support::within(handle.history()).await, Err(RequestError::Failed(_))),
            "every later request fails too"
        );
    }

    /// A failure callback that panics is reported with its task's key:
    /// among several tasks, that is the one to look at.
    #[tokio::test(start_paused = true)]
    async fn a_panicking_failure_callback_names_its_task() {
        let fx = runtime::from_fn(|action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
            if let Action::Work(n) = action {
                cx.spawn_task("quiet", std::future::pending(), |_, _| Event::Back);
                cx.spawn_task(format!("tool-{n}"), async { panic!("tool blew up") }, |_, _| panic!("callback blew up"));
            }
        });
        let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new());
        handle.send(Event::Go(7)).await.unwrap();
        let err = crate::support::within(handle.wait_finished()).await.expect_err("the callback panics");
        let error = failure(err);
        assert_eq!(
            error,
            WorkerError::EffectsPanicked {
                performing: Performing::OnFailure,
                key: Some("tool-7".to_owned()),
                message: "callback blew up".to_owned()
            }
        );
        assert_eq!(
            error.to_string(),
            "the effects panicked while performing `on_failure` of `tool-7`: callback blew up"
        );
        assert_eq!(handle.status().to_string(), "Busy", "the machine itself did not fail");
    }
}
