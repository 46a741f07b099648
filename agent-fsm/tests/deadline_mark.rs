//! Events the table marks `#[deadline]`: `cx.timer` arms a deadline for
//! them (input let through while it is pending) and a pause for the rest
//! (input held back until it fires), and a `cx.pause` of a marked event is
//! taken as a deadline, with a warning. On paused tokio time, each test
//! under a timeout, so that a worker that never delivers fails instead of
//! hanging.

mod support;

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_fsm::runtime::{self, EffectContext, ExecutorConfig, MachineHandle, Outcome};
use agent_fsm::{StateMachine, state_machine};
use tokio::time::{Instant, sleep, timeout};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

#[state_machine(fallback = Nothing, name = Desk)]
mod desk {
    #[states]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) enum State {
        #[initial]
        Idle,
        Waiting,
        Backoff,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) enum Event {
        /// Ask a human, with a reply window armed by `cx.timer`.
        Ask,
        /// Ask a human, with the reply window armed by `cx.pause`.
        AskPaused,
        /// Something failed: retry after a backoff.
        Fail,
        /// The human's reply.
        Reply,
        /// The reply window closed.
        #[deadline]
        Timeout,
        /// The backoff is over.
        RetryFired,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) enum Action {
        Nothing,
        AskHuman,
        AskHumanPaused,
        ScheduleRetry,
        Answered,
        TimedOut,
        Retried,
    }

    transitions! {
        Idle + Ask => Waiting / AskHuman,
        Idle + AskPaused => Waiting / AskHumanPaused,
        Idle + Fail => Backoff / ScheduleRetry,
        Idle + Reply => Idle / Nothing,
        Waiting + Reply => Idle / Answered,
        Waiting + Timeout => Idle / TimedOut,
        Backoff + RetryFired => Idle / Retried,
        Backoff + Reply => Backoff / Nothing,
    }
}

use desk::{Action, ActionKind, Desk, Event, EventKind, StateKind};

/// The window and the backoff are both 30 s.
const DELAY: Duration = Duration::from_secs(30);

fn spawn() -> MachineHandle<Desk> {
    let effects = runtime::from_fn(|action: Action, cx: &mut EffectContext<'_, Desk, ()>| match action {
        Action::AskHuman => cx.timer(DELAY, Event::Timeout),
        Action::AskHumanPaused => cx.pause(DELAY, Event::Timeout),
        Action::ScheduleRetry => cx.timer(DELAY, Event::RetryFired),
        _ => {}
    });
    runtime::spawn(Desk::new(), effects, ExecutorConfig::new().record_events())
}

/// Every event the machine received, in order.
async fn received(handle: &MachineHandle<Desk>) -> Vec<Event> {
    let history = crate::support::within(handle.history()).await.expect("the worker is running");
    history.events().expect("events are recorded").iter().map(|r| r.event.clone()).collect()
}

/// Runs `test` under a limit far beyond what it needs on paused time.
async fn bounded(test: impl Future<Output = ()>) {
    timeout(Duration::from_secs(600), test).await.expect("the worker delivered everything in time");
}

/// Sends `first`, then one second later calls with `Reply`, and returns
/// the reply's outcome and how long after `first` it was answered; then
/// lets a minute pass, so that a timer still pending would fire.
async fn reply_one_second_after(
    handle: &MachineHandle<Desk>,
    first: Event,
) -> (Outcome<StateKind, ActionKind>, Duration) {
    let start = Instant::now();
    handle.send(first).await.expect("sent");
    sleep(Duration::from_secs(1)).await;
    let delivered = crate::support::within(handle.call(Event::Reply)).await.expect("delivered");
    let answered = start.elapsed();
    sleep(Duration::from_secs(60)).await;
    (delivered.outcome, answered)
}

#[test]
fn the_table_lists_its_deadlines() {
    assert_eq!(Desk::DEADLINES, [EventKind::Timeout]);
}

/// `cx.timer` of the marked `Timeout`: the reply sent one second in is
/// applied at once, leaves `Waiting` and so cancels the timer, whose
/// `Timeout` never comes.
#[tokio::test(start_paused = true)]
async fn a_reply_beats_a_timer_of_a_marked_event() {
    bounded(async {
        let handle = spawn();
        let (outcome, answered) = reply_one_second_after(&handle, Event::Ask).await;
        assert_eq!(answered, Duration::from_secs(1), "the reply was held back");
        assert_eq!(
            outcome,
            Outcome::Moved { from: StateKind::Waiting, to: StateKind::Idle, action: ActionKind::Answered }
        );
        assert_eq!(received(&handle).await, [Event::Ask, Event::Reply]);
        crate::support::within(handle.shutdown()).await.expect("the worker is running");
    })
    .await;
}

/// `cx.timer` of the unmarked `RetryFired`: a pause, so the reply waits
/// until it fires and then finds the machine back in `Idle`.
#[tokio::test(start_paused = true)]
async fn a_timer_of_an_unmarked_event_holds_input_back_until_it_fires() {
    bounded(async {
        let handle = spawn();
        let (outcome, answered) = reply_one_second_after(&handle, Event::Fail).await;
        assert_eq!(answered, DELAY, "the reply was let through before the backoff ended");
        assert_eq!(outcome, Outcome::Stayed { state: StateKind::Idle, action: ActionKind::Nothing });
        assert_eq!(received(&handle).await, [Event::Fail, Event::RetryFired, Event::Reply]);
        crate::support::within(handle.shutdown()).await.expect("the worker is running");
    })
    .await;
}

/// `cx.pause` of the marked `Timeout`: the table's word wins, the reply
/// goes through at once, and a warning says the pause was taken as a
/// deadline.
#[tokio::test(start_paused = true)]
async fn a_pause_of_a_marked_event_lets_input_through_with_a_warning() {
    let warnings = Warnings::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(warnings.clone()));
    bounded(async {
        let handle = spawn();
        let (outcome, answered) = reply_one_second_after(&handle, Event::AskPaused).await;
        assert_eq!(answered, Duration::from_secs(1), "the pause held the reply back");
        assert_eq!(
            outcome,
            Outcome::Moved { from: StateKind::Waiting, to: StateKind::Idle, action: ActionKind::Answered }
        );
        assert_eq!(received(&handle).await, [Event::AskPaused, Event::Reply]);
        crate::support::within(handle.shutdown()).await.expect("the worker is running");
    })
    .await;
    let warnings = warnings.0.lock().unwrap_or_else(PoisonError::into_inner);
    assert!(
        warnings.iter().any(|w| w.contains("`#[deadline]`") && w.contains("event=Timeout")),
        "no warning naming the event: {warnings:?}"
    );
}

/// The text and fields of every `WARN` event, one line each.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut line = Line(String::new());
            event.record(&mut line);
            self.0.lock().unwrap_or_else(PoisonError::into_inner).push(line.0);
        }
    }
}

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push_str(&format!(" {}={value}", field.name()));
    }
}
