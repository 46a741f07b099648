//! An interrupt under a concurrency limit: the tasks spawned to survive it
//! and still waiting for a slot start once the interrupt has freed the
//! slots, rather than waiting forever for a running task's end that
//! never comes (the agent would then hold its input back for good).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_fsm::runtime::{self, EffectContext, ExecutorConfig, TaskOptions};
use tokio::sync::oneshot;

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
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Go,
        /// The tool an interrupt cancels.
        Quick,
        /// The tool that survives an interrupt.
        Kept,
        Interrupted(String),
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Action {
        Nothing,
        RunTools,
    }

    transitions! {
        Idle + Go => Working / RunTools,
        Working + Quick => Working / Nothing,
        Idle + Quick => Idle / Nothing,
        * + Kept => Idle / Nothing,
        * + Interrupted(_) => Idle / Nothing,
    }
}

use desk::{Action, Event, EventKind, Machine, StateKind};

/// Fails the test instead of letting it hang.
async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), future).await.expect("no answer within a minute")
}

/// With a limit of one task, an interrupt that finds the running task
/// already finished (its result not yet taken) leaves the slot free: the
/// queued task that survives the interrupt starts and its result comes.
#[tokio::test(start_paused = true)]
async fn a_surviving_queued_task_starts_in_the_slot_an_interrupt_freed() {
    let (release, gate) = oneshot::channel::<()>();
    let gate = Arc::new(Mutex::new(Some(gate)));
    let kept_ran = Arc::new(AtomicBool::new(false));
    let ran = Arc::clone(&kept_ran);
    let effects = runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
        if action != Action::RunTools {
            return;
        }
        let gate = gate.lock().unwrap().take();
        cx.spawn_task(
            "quick",
            async move {
                if let Some(gate) = gate {
                    let _ = gate.await;
                }
                Event::Quick
            },
            |_, _| Event::Quick,
        );
        let ran = Arc::clone(&ran);
        let kept = async move {
            ran.store(true, Ordering::SeqCst);
            Event::Kept
        };
        cx.spawn_task_with("kept", kept, |_, _| Event::Kept, TaskOptions::new().survive_interrupt());
    });
    let config = ExecutorConfig::new()
        .concurrency_limit(1)
        .interrupt_event(EventKind::Interrupted, |cause| Event::Interrupted(cause.to_owned()));
    let handle = runtime::spawn(Machine::new(), effects, config);
    within(handle.call(Event::Go)).await.unwrap();
    // The first task ends and the interrupt is queued before the worker
    // runs again: it finds the task finished, its slot free.
    release.send(()).unwrap();
    within(handle.interrupt("stop")).await.unwrap();
    within(handle.wait_idle()).await.unwrap();
    assert!(kept_ran.load(Ordering::SeqCst), "the surviving task ran");
    assert_eq!(handle.status().state(), Some(StateKind::Idle));
    within(handle.shutdown()).await.unwrap();
}
