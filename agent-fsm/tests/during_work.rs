//! Input and interrupts during effect work: events the table marks
//! `#[during_work]` (or the configuration lists) reach the machine as they
//! arrive, between the results of the tools in flight; the others still
//! wait for the work to end, in the order received. A task spawned to
//! survive interrupts runs on through one. On paused tokio time, each test
//! under a timeout, so that a worker that never delivers fails instead of
//! hanging.

mod support;

use std::future::Future;
use std::time::Duration;

use agent_fsm::runtime::{self, EffectContext, ExecutorConfig, MachineHandle, TaskOptions};
use agent_fsm::{StateMachine, state_machine};
use tokio::time::{Instant, sleep, timeout};

#[state_machine(fallback = Nothing, name = Desk)]
mod desk {
    #[states]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) enum State {
        #[initial]
        Idle,
        Working,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) enum Event {
        /// Run tools that take these many milliseconds.
        Start(Vec<u64>),
        /// What the user typed.
        #[during_work]
        Message(String),
        /// Not marked: waits for the work to end.
        Budget(u32),
        /// A tool's result: how long it took.
        ToolDone(u64),
        /// The user interrupted.
        Interrupted,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) enum Action {
        Nothing,
        RunTools(Vec<u64>),
        Queue(String),
    }

    transitions! {
        Idle + Start(tools) => Working / RunTools(tools),
        Idle + Message(text) => Idle / Queue(text),
        Idle + Budget(_) => Idle / Nothing,
        Working + Message(text) => Working / Queue(text),
        Working + Budget(_) => Working / Nothing,
        Working + ToolDone(_) => Working / Nothing,
        Working + Start(_) => Idle / Nothing,
        * + Interrupted => Idle / Nothing,
    }
}

use desk::{Desk, Event, EventKind};

/// Each tool of `RunTools` is a task that sleeps its time and reports it;
/// those of an odd time are spawned to survive interrupts.
fn effects() -> impl runtime::Effects<Desk, Output = ()> {
    runtime::from_fn(|action, cx: &mut EffectContext<'_, Desk, ()>| {
        if let desk::Action::RunTools(tools) = action {
            for ms in tools {
                let options = if ms % 2 == 1 { TaskOptions::new().survive_interrupt() } else { TaskOptions::new() };
                cx.spawn_task_with(
                    format!("tool-{ms}"),
                    async move {
                        sleep(Duration::from_millis(ms)).await;
                        Event::ToolDone(ms)
                    },
                    |_, _| Event::ToolDone(0),
                    options,
                );
            }
        }
    })
}

fn spawn(config: ExecutorConfig<Desk>) -> MachineHandle<Desk> {
    runtime::spawn(
        Desk::new(),
        effects(),
        config.record_events().interrupt_event(EventKind::Interrupted, |_| Event::Interrupted),
    )
}

/// Every event the machine received, in order.
async fn received(handle: &MachineHandle<Desk>) -> Vec<Event> {
    let history = crate::support::within(handle.history()).await.expect("the worker is running");
    history.events().expect("events are recorded").iter().map(|r| r.event.clone()).collect()
}

/// Runs `test` under a deadline far beyond what it needs on paused time.
async fn bounded(test: impl Future<Output = ()>) {
    timeout(Duration::from_secs(60), test).await.expect("the worker delivered everything in time");
}

fn message(text: &str) -> Event {
    Event::Message(text.to_owned())
}

#[test]
fn the_table_marks_its_during_work_events() {
    assert_eq!(Desk::DURING_WORK, [EventKind::Message]);
}

/// A user message sent while three tools run reaches the machine before
/// the last tool's result, in order with the results, and its `call`
/// returns while the last tool still runs.
#[tokio::test(start_paused = true)]
async fn a_message_sent_while_three_tools_run_comes_before_the_last_result() {
    bounded(async {
        let handle = spawn(ExecutorConfig::new());
        let started = Instant::now();
        handle.send(Event::Start(vec![100, 200, 300])).await.expect("sent");
        sleep(Duration::from_millis(250)).await;
        let delivered = crate::support::within(handle.call(message("also check the docs"))).await.expect("delivered");
        assert!(delivered.performed, "{delivered:?}");
        assert_eq!(started.elapsed(), Duration::from_millis(250), "the call waited for the tools");
        crate::support::within(handle.wait_idle()).await.expect("the worker is running");
        assert_eq!(
            received(&handle).await,
            [
                Event::Start(vec![100, 200, 300]),
                Event::ToolDone(100),
                Event::ToolDone(200),
                message("also check the docs"),
                Event::ToolDone(300),
            ]
        );
    })
    .await;
}

/// An event the table does not mark still waits for the work to end; a
/// marked one sent after it does not wait behind it.
#[tokio::test(start_paused = true)]
async fn other_events_wait_for_the_work_and_keep_their_order() {
    bounded(async {
        let handle = spawn(ExecutorConfig::new());
        handle.send(Event::Start(vec![100, 200, 300])).await.expect("sent");
        sleep(Duration::from_millis(50)).await;
        handle.send(Event::Budget(1)).await.expect("sent");
        handle.send(Event::Budget(2)).await.expect("sent");
        sleep(Duration::from_millis(100)).await;
        handle.send(message("first")).await.expect("sent");
        handle.send(Event::Budget(3)).await.expect("sent");
        handle.send(message("second")).await.expect("sent");
        crate::support::within(handle.wait_idle()).await.expect("the worker is running");
        assert_eq!(
            received(&handle).await,
            [
                Event::Start(vec![100, 200, 300]),
                Event::ToolDone(100),
                message("first"),
                message("second"),
                Event::ToolDone(200),
                Event::ToolDone(300),
                Event::Budget(1),
                Event::Budget(2),
                Event::Budget(3),
            ]
        );
    })
    .await;
}

/// The configuration can add events the table does not mark.
#[tokio::test(start_paused = true)]
async fn the_configuration_lists_more_events() {
    bounded(async {
        let handle = spawn(ExecutorConfig::new().during_work(EventKind::Budget));
        handle.send(Event::Start(vec![100, 200])).await.expect("sent");
        sleep(Duration::from_millis(150)).await;
        handle.send(Event::Budget(7)).await.expect("sent");
        crate::support::within(handle.wait_idle()).await.expect("the worker is running");
        assert_eq!(
            received(&handle).await,
            [Event::Start(vec![100, 200]), Event::ToolDone(100), Event::Budget(7), Event::ToolDone(200)]
        );
    })
    .await;
}

/// Events held back while the work ran are still delivered, in order,
/// when an interrupt ends the work.
#[tokio::test(start_paused = true)]
async fn held_events_are_delivered_after_an_interrupt() {
    bounded(async {
        let handle = spawn(ExecutorConfig::new());
        handle.send(Event::Start(vec![1_000])).await.expect("sent");
        sleep(Duration::from_millis(10)).await;
        handle.send(Event::Budget(1)).await.expect("sent");
        handle.send(message("now")).await.expect("sent");
        sleep(Duration::from_millis(10)).await;
        handle.interrupt("stop").await.expect("interrupted");
        crate::support::within(handle.wait_idle()).await.expect("the worker is running");
        assert_eq!(
            received(&handle).await,
            [Event::Start(vec![1_000]), message("now"), Event::ToolDone(0), Event::Interrupted, Event::Budget(1)]
        );
    })
    .await;
}

/// An interrupt cancels the tasks that did not ask to survive it; the one
/// that did runs on, and its result comes after the interrupt.
#[tokio::test(start_paused = true)]
async fn a_task_spawned_to_survive_interrupts_runs_on_through_one() {
    bounded(async {
        let handle = spawn(ExecutorConfig::new());
        let started = Instant::now();
        handle.send(Event::Start(vec![301, 200])).await.expect("sent");
        sleep(Duration::from_millis(10)).await;
        handle.interrupt("stop").await.expect("interrupted");
        crate::support::within(handle.wait_idle()).await.expect("the worker is running");
        assert_eq!(started.elapsed(), Duration::from_millis(301), "idle once the surviving task is done");
        assert_eq!(
            received(&handle).await,
            [Event::Start(vec![301, 200]), Event::ToolDone(0), Event::Interrupted, Event::ToolDone(301)]
        );
    })
    .await;
}

/// A shutdown cancels every task, those spawned to survive interrupts too.
#[tokio::test(start_paused = true)]
async fn a_shutdown_cancels_a_task_that_survives_interrupts() {
    bounded(async {
        let handle = spawn(ExecutorConfig::new());
        let started = Instant::now();
        handle.send(Event::Start(vec![301])).await.expect("sent");
        sleep(Duration::from_millis(10)).await;
        crate::support::within(handle.shutdown()).await.expect("stopped");
        assert_eq!(started.elapsed(), Duration::from_millis(10), "the shutdown waited for the task");
        assert_eq!(received(&handle).await, [Event::Start(vec![301]), Event::ToolDone(0)]);
    })
    .await;
}

/// Events held back while the work ran are delivered when it ends, with
/// no one waiting for the agent to be idle: a `call` held back returns then.
#[tokio::test(start_paused = true)]
async fn a_call_held_back_returns_when_the_work_ends() {
    bounded(async {
        let handle = spawn(ExecutorConfig::new());
        let started = Instant::now();
        handle.send(Event::Start(vec![100])).await.expect("sent");
        sleep(Duration::from_millis(10)).await;
        crate::support::within(handle.call(Event::Budget(1))).await.expect("delivered");
        assert_eq!(started.elapsed(), Duration::from_millis(100), "the call waited for the tool");
    })
    .await;
}

/// At most an inbox's capacity is held back: past that, senders wait on a
/// full inbox as they do for a machine that takes nothing during work.
#[tokio::test(start_paused = true)]
async fn at_most_an_inbox_of_events_is_held_back() {
    bounded(async {
        let handle = spawn(ExecutorConfig::new().inbox_capacity(1));
        handle.send(Event::Start(vec![100])).await.expect("sent");
        sleep(Duration::from_millis(10)).await;
        handle.send(Event::Budget(1)).await.expect("sent");
        sleep(Duration::from_millis(10)).await;
        handle.try_send(Event::Budget(2)).expect("one held back, the inbox has room for one");
        sleep(Duration::from_millis(10)).await;
        assert!(handle.try_send(Event::Budget(3)).is_err(), "the inbox is full: nothing more is held back");
    })
    .await;
}

/// An interrupt cancels a queued task that did not ask to survive it, and
/// leaves the running one that did.
#[tokio::test(start_paused = true)]
async fn an_interrupt_cancels_queued_tasks_that_do_not_survive_it() {
    bounded(async {
        let handle = spawn(ExecutorConfig::new().concurrency_limit(1));
        handle.send(Event::Start(vec![301, 200])).await.expect("sent");
        sleep(Duration::from_millis(10)).await;
        handle.interrupt("stop").await.expect("interrupted");
        crate::support::within(handle.wait_idle()).await.expect("the worker is running");
        assert_eq!(
            received(&handle).await,
            [Event::Start(vec![301, 200]), Event::ToolDone(0), Event::Interrupted, Event::ToolDone(301)]
        );
    })
    .await;
}

/// A shutdown cancels queued tasks too, those that survive interrupts
/// included: each owes its event.
#[tokio::test(start_paused = true)]
async fn a_shutdown_cancels_queued_tasks_that_survive_interrupts() {
    bounded(async {
        let handle = spawn(ExecutorConfig::new().concurrency_limit(1));
        handle.send(Event::Start(vec![200, 301])).await.expect("sent");
        sleep(Duration::from_millis(10)).await;
        crate::support::within(handle.shutdown()).await.expect("stopped");
        assert_eq!(received(&handle).await, [Event::Start(vec![200, 301]), Event::ToolDone(0), Event::ToolDone(0)]);
    })
    .await;
}

/// A machine that takes nothing during work.
#[state_machine(fallback = Nothing, name = Plain)]
mod plain {
    #[states]
    #[derive(Debug)]
    pub(crate) enum State {
        #[initial]
        Idle,
        Working,
    }

    #[events]
    #[derive(Debug)]
    pub(crate) enum Event {
        Start,
        Note,
        Done,
    }

    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
        Work,
    }

    transitions! {
        Idle + Start => Working / Work,
        Idle + Note => Idle / Nothing,
        Working + Note => Working / Nothing,
        Working + Done => Idle / Nothing,
    }
}

/// Without events taken during work, the worker leaves the inbox alone
/// while work is in flight: it fills, and senders wait on it.
#[tokio::test(start_paused = true)]
async fn a_machine_that_takes_nothing_during_work_leaves_the_inbox_alone() {
    bounded(async {
        let effects = runtime::from_fn(|action, cx: &mut EffectContext<'_, plain::Plain, ()>| {
            if let plain::Action::Work = action {
                cx.spawn_task(
                    "work",
                    async {
                        sleep(Duration::from_millis(100)).await;
                        plain::Event::Done
                    },
                    |_, _| plain::Event::Done,
                );
            }
        });
        let handle = runtime::spawn(plain::Plain::new(), effects, ExecutorConfig::new().inbox_capacity(1));
        handle.send(plain::Event::Start).await.expect("sent");
        sleep(Duration::from_millis(10)).await;
        handle.try_send(plain::Event::Note).expect("the inbox has room for one");
        sleep(Duration::from_millis(10)).await;
        assert!(handle.try_send(plain::Event::Note).is_err(), "the inbox was read during the work");
        crate::support::within(handle.wait_idle()).await.expect("the worker is running");
    })
    .await;
}
