//! Interrupts that cannot strand an agent: an interrupt cancels the work in
//! flight without performing what its cancellation events ask for, so it
//! is only allowed with an interrupt event the table handles in every
//! state the machine can rest in. Tested on one machine with an interrupt
//! event, the same machine without one, and configurations the worker
//! refuses before its first step.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agent_fsm::runtime::{
    self, ConfigError, EffectContext, ExecutorConfig, MachineHandle, Outcome, RequestError, SendError, WorkerError,
};

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing)]
mod desk {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        /// Waits for input.
        #[initial]
        Idle,
        /// Waits for its tools.
        Working,
        /// Waits for the model's summary of the tools' results.
        Summarizing,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Go,
        ToolDone { ok: bool },
        Summary,
        Interrupted(String),
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Action {
        Nothing,
        RunTool,
        Summarize,
    }

    transitions! {
        Idle + Go => Working / RunTool,
        // A cancelled tool moves the machine on too, to a state whose work
        // (the summary) only the action starts: the trap an interrupt
        // without an event fell into.
        Working + ToolDone { .. } => Summarizing / Summarize,
        Summarizing + Summary => Idle / Nothing,
        * + Interrupted(_) => Idle / Nothing,
    }
}

use desk::{Action, Event, EventKind, Machine, StateKind};

/// Effects whose tool takes an hour and whose summary comes at once;
/// counts the actions performed.
fn effects(performed: Arc<AtomicU32>) -> impl runtime::Effects<Machine, Output = ()> {
    runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
        performed.fetch_add(1, Ordering::SeqCst);
        match action {
            Action::RunTool => cx.spawn_task(
                "tool",
                async {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Event::ToolDone { ok: true }
                },
                |_, _| Event::ToolDone { ok: false },
            ),
            Action::Summarize => cx.send(Event::Summary),
            Action::Nothing => {}
        }
    })
}

fn with_interrupt_event() -> ExecutorConfig<Machine> {
    ExecutorConfig::new().interrupt_event(EventKind::Interrupted, |cause| Event::Interrupted(cause.to_owned()))
}

/// The agent is not stranded: nothing is in flight (`wait_idle` answers
/// within a minute of paused time), it rests in the state that waits for
/// input, and input moves it on.
async fn assert_not_stranded(handle: &MachineHandle<Machine, ()>) {
    tokio::time::timeout(Duration::from_secs(60), handle.wait_idle())
        .await
        .expect("nothing left in flight")
        .expect("the worker runs");
    assert_eq!(handle.status().state(), Some(StateKind::Idle));
    let go = crate::support::within(handle.call(Event::Go)).await.expect("the worker runs");
    assert_eq!(
        go.outcome,
        Outcome::Moved { from: StateKind::Idle, to: StateKind::Working, action: desk::ActionKind::RunTool }
    );
}

/// With an interrupt event, the cancelled tool's failure moves the
/// machine to `Summarizing` without its summary being asked for; the
/// interrupt event then lands it in `Idle`, where it waits for input.
#[tokio::test(start_paused = true)]
async fn an_interrupt_lands_the_machine_where_it_waits_for_input() {
    let performed = Arc::new(AtomicU32::new(0));
    let handle = runtime::spawn(Machine::new(), effects(Arc::clone(&performed)), with_interrupt_event());
    crate::support::within(handle.call(Event::Go)).await.unwrap();
    handle.interrupt("stop").await.unwrap();
    let history = crate::support::within(handle.history()).await.unwrap();
    let hops: Vec<_> = history.transitions().map(|t| (t.from, t.to)).collect();
    assert_eq!(
        hops,
        [
            (StateKind::Idle, StateKind::Working),
            (StateKind::Working, StateKind::Summarizing),
            (StateKind::Summarizing, StateKind::Idle)
        ]
    );
    // `RunTool` and the interrupt row's `Nothing`: `Summarize` was not performed.
    assert_eq!(performed.load(Ordering::SeqCst), 2);
    assert_not_stranded(&handle).await;
    crate::support::within(handle.shutdown()).await.unwrap();
}

/// Without an interrupt event, an interrupt is refused and cancels
/// nothing: the tool runs to its end and the machine goes on as it would
/// have.
#[tokio::test(start_paused = true)]
async fn without_an_interrupt_event_an_interrupt_is_refused_and_cancels_nothing() {
    let performed = Arc::new(AtomicU32::new(0));
    let handle = runtime::spawn(Machine::new(), effects(Arc::clone(&performed)), ExecutorConfig::new());
    crate::support::within(handle.call(Event::Go)).await.unwrap();
    assert_eq!(handle.interrupt("stop").await, Err(RequestError::NoInterruptEvent));
    assert_eq!(handle.status().state(), Some(StateKind::Working), "the tool still runs");
    tokio::time::sleep(Duration::from_secs(3600)).await;
    crate::support::within(handle.wait_idle()).await.unwrap();
    let history = crate::support::within(handle.history()).await.unwrap();
    let hops: Vec<_> = history.transitions().map(|t| (t.from, t.to)).collect();
    assert_eq!(
        hops,
        [
            (StateKind::Idle, StateKind::Working),
            (StateKind::Working, StateKind::Summarizing),
            (StateKind::Summarizing, StateKind::Idle)
        ]
    );
    assert_eq!(performed.load(Ordering::SeqCst), 3, "the summary was asked for");
    assert!(history.interrupts().next().is_none());
    assert_not_stranded(&handle).await;
    crate::support::within(handle.shutdown()).await.unwrap();
}

/// An interrupt event some resting state has no row for is refused
/// before the worker's first step: no event is handled, no action
/// performed, and every handle call reports the configuration error.
#[tokio::test(start_paused = true)]
async fn an_interrupt_event_without_rows_everywhere_is_refused_before_the_first_step() {
    let performed = Arc::new(AtomicU32::new(0));
    // `Go` only has a row in `Idle`.
    let config = ExecutorConfig::new().interrupt_event(EventKind::Go, |_| Event::Go);
    let handle = runtime::spawn(Machine::new(), effects(Arc::clone(&performed)), config);
    let expected = WorkerError::Config(ConfigError::InterruptEventUnhandled {
        event: EventKind::Go,
        states: vec![StateKind::Working, StateKind::Summarizing],
    });
    match crate::support::within(handle.call(Event::Go)).await {
        Err(RequestError::Failed(error)) => assert_eq!(*error, expected),
        other => panic!("expected the configuration error, got {other:?}"),
    }
    match handle.send(Event::Go).await {
        Err(SendError::Failed(Event::Go, error)) => assert_eq!(*error, expected),
        other => panic!("expected the configuration error, got {other:?}"),
    }
    assert_eq!(
        expected.to_string(),
        "the executor's configuration does not fit the machine",
        "the details are in the source"
    );
    let source = std::error::Error::source(&expected).map(ToString::to_string);
    assert_eq!(
        source.as_deref(),
        Some(
            "the interrupt event `Go` has no unguarded row (nor `=> ignore`) in `Working` and `Summarizing`: an \
             interrupt there would leave the agent waiting with nothing in flight; add the rows (a `*` row covers \
             every state)"
        )
    );
    assert_eq!(handle.steps(), 0);
    assert_eq!(performed.load(Ordering::SeqCst), 0);
    assert!(matches!(handle.interrupt("stop").await, Err(RequestError::Failed(e)) if *e == expected));
}

/// A closure that builds an event of another kind than configured fails
/// the worker at the interrupt, rather than delivering it.
#[tokio::test(start_paused = true)]
async fn an_interrupt_event_of_another_kind_fails_the_worker() {
    let config = ExecutorConfig::new().interrupt_event(EventKind::Interrupted, |_| Event::Summary);
    let handle = runtime::spawn(Machine::new(), effects(Arc::default()), config);
    crate::support::within(handle.call(Event::Go)).await.unwrap();
    let expected = WorkerError::Config(ConfigError::InterruptEventMismatch {
        configured: EventKind::Interrupted,
        built: EventKind::Summary,
    });
    match handle.interrupt("stop").await {
        Err(RequestError::Failed(error)) => assert_eq!(*error, expected),
        other => panic!("expected the configuration error, got {other:?}"),
    }
}

/// Every state counts but terminal and transient ones; an `=> ignore`
/// counts as the table's answer, a guarded row does not.
#[tokio::test(start_paused = true)]
async fn ignores_count_and_guarded_rows_do_not() {
    // Only the table is read: most events are never sent.
    #[allow(unreachable_pub, dead_code)]
    #[agent_fsm::state_machine(fallback = Nothing)]
    mod door {
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            #[initial]
            Closed,
            Open,
            Locked,
            #[transient]
            Checking,
            #[terminal]
            Gone,
        }

        #[events]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            Push(bool),
            Stop,
            Leave,
        }

        #[actions]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            Nothing,
        }

        transitions! {
            Closed + Push(_) => Checking,
            Checking => Open / Nothing,
            Open + Push(_) => Closed / Nothing,
            Open + Leave => Locked / Nothing,
            Locked + Push(force) [*force] => Closed / Nothing,
            Closed + Leave => Gone / Nothing,
            Closed + Stop => ignore,
            Open + Stop => Closed / Nothing,
            Locked + Stop [false] => Closed / Nothing,
        }
    }
    let config = ExecutorConfig::new().interrupt_event(door::EventKind::Stop, |_| door::Event::Stop);
    let handle = runtime::spawn(door::Machine::new(), (), config);
    let expected = WorkerError::Config(ConfigError::InterruptEventUnhandled {
        event: door::EventKind::Stop,
        states: vec![door::StateKind::Locked],
    });
    let finished =
        tokio::time::timeout(Duration::from_secs(60), handle.wait_finished()).await.expect("refused at once");
    assert!(matches!(finished, Err(RequestError::Failed(e)) if *e == expected));
}
