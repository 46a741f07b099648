//! What `call` answers for each thing that can happen to an event, asserted
//! by kind: the machine moved, a row kept the state, the table ignores the
//! pair, no row accepts it, every guard refused it, the machine had
//! finished, or the event's row poisoned the machine; and that a call its
//! caller gave up on still delivers its event.

mod support;

use std::time::Duration;

use agent_fsm::Status;
use agent_fsm::runtime::{self, EffectContext, ExecutorConfig, MachineHandle, Outcome, RequestError, WorkerError};

/// Leaves a row early without a panic, as a user's `?` or `return` would:
/// the machine is left without a state.
macro_rules! bail {
    () => {
        return Default::default()
    };
}

// The row's code after `bail!()` never runs, which rustc notes.
#[allow(unreachable_pub, unreachable_code)]
#[agent_fsm::state_machine(fallback = Nothing, serde)]
mod desk {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Busy {
            count: u32,
        },
        #[terminal]
        Closed,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Open,
        Tick,
        Again,
        Reply(u32),
        Stray,
        Noise,
        Close,
        Bail,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
        Greet,
        Count(u32),
        Restart,
        Answer(u32),
        Bye,
    }

    transitions! {
        Idle + Open => Busy { count: 0 } / Greet,
        Busy { count } + Tick => { *count += 1; } Busy / Count(*count),
        Busy { count } + Again => Busy { count } / Restart,
        Busy + Reply(n) [*n == 7] => Busy { count: 0 } / Answer(n),
        Busy + Noise => ignore,
        Busy + Bail => { bail!(); } Idle / Nothing,
        Busy + Close => Closed / Bye,
    }
}

use desk::{ActionKind, Event, Machine, StateKind};

type Handle = MachineHandle<Machine>;

fn spawn() -> Handle {
    let fx = runtime::from_fn(|_: desk::Action, _: &mut EffectContext<'_, Machine, ()>| {});
    runtime::spawn(Machine::new(), fx, ExecutorConfig::new())
}

/// `call`, bounded: none of these may hang.
async fn call(handle: &Handle, event: Event) -> Result<runtime::OutcomeOf<Machine>, RequestError<Machine>> {
    let delivered = tokio::time::timeout(Duration::from_secs(5), handle.call(event)).await.expect("the call returns");
    delivered.map(|d| d.outcome)
}

#[tokio::test(start_paused = true)]
async fn a_transition_answers_from_to_and_action() {
    let handle = spawn();
    let delivered = crate::support::within(handle.call(Event::Open)).await.unwrap();
    assert_eq!(
        (delivered.state(), delivered.action(), delivered.performed),
        (Some(StateKind::Busy), Some(ActionKind::Greet), true)
    );
    let outcome = delivered.outcome;
    assert_eq!(outcome, Outcome::Moved { from: StateKind::Idle, to: StateKind::Busy, action: ActionKind::Greet });
    assert!(outcome.accepted());
    assert_eq!((outcome.state(), outcome.action()), (Some(StateKind::Busy), Some(ActionKind::Greet)));
}

#[tokio::test(start_paused = true)]
async fn a_row_that_keeps_its_state_answers_stayed() {
    let handle = spawn();
    call(&handle, Event::Open).await.unwrap();
    // In place, and a self-transition that rebuilds the state: both stay.
    assert_eq!(
        call(&handle, Event::Tick).await.unwrap(),
        Outcome::Stayed { state: StateKind::Busy, action: ActionKind::Count }
    );
    assert_eq!(
        call(&handle, Event::Again).await.unwrap(),
        Outcome::Stayed { state: StateKind::Busy, action: ActionKind::Restart }
    );
}

#[tokio::test(start_paused = true)]
async fn a_pair_the_table_ignores_answers_ignored_with_the_fallback() {
    let handle = spawn();
    call(&handle, Event::Open).await.unwrap();
    let outcome = call(&handle, Event::Noise).await.unwrap();
    assert_eq!(outcome, Outcome::Ignored { state: StateKind::Busy, action: ActionKind::Nothing });
    assert!(!outcome.accepted());
}

#[tokio::test(start_paused = true)]
async fn a_pair_no_row_accepts_answers_no_row_with_the_fallback() {
    let handle = spawn();
    assert_eq!(
        call(&handle, Event::Stray).await.unwrap(),
        Outcome::NoRow { state: StateKind::Idle, action: ActionKind::Nothing }
    );
    // The same pair of kinds whatever the payload: `Reply` in `Idle`.
    assert_eq!(
        call(&handle, Event::Reply(7)).await.unwrap(),
        Outcome::NoRow { state: StateKind::Idle, action: ActionKind::Nothing }
    );
}

#[tokio::test(start_paused = true)]
async fn a_reply_every_guard_refuses_answers_refused() {
    let handle = spawn();
    call(&handle, Event::Open).await.unwrap();
    // A reply with the wrong ticket is not "delivered": the guard refused it.
    assert_eq!(
        call(&handle, Event::Reply(3)).await.unwrap(),
        Outcome::Refused { state: StateKind::Busy, action: ActionKind::Nothing }
    );
    assert_eq!(
        call(&handle, Event::Reply(7)).await.unwrap(),
        Outcome::Stayed { state: StateKind::Busy, action: ActionKind::Answer }
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_after_the_machine_finished_answers_finished() {
    let handle = spawn();
    call(&handle, Event::Open).await.unwrap();
    assert_eq!(
        call(&handle, Event::Close).await.unwrap(),
        Outcome::Moved { from: StateKind::Busy, to: StateKind::Closed, action: ActionKind::Bye }
    );
    assert_eq!(crate::support::within(handle.wait_finished()).await.unwrap(), StateKind::Closed);
    assert_eq!(handle.status(), Status::In(StateKind::Closed));
    let outcome = call(&handle, Event::Open).await.unwrap();
    assert_eq!(outcome, Outcome::Finished { state: StateKind::Closed });
    assert_eq!(outcome.action(), None);
}

#[tokio::test(start_paused = true)]
async fn a_call_queued_behind_the_final_event_answers_finished() {
    let handle = spawn();
    call(&handle, Event::Open).await.unwrap();
    // Both queued before the worker runs: the second reaches a finished machine.
    let (close, late) = tokio::join!(handle.call(Event::Close), handle.call(Event::Tick));
    assert_eq!(close.unwrap().outcome.state(), Some(StateKind::Closed));
    let late = late.unwrap();
    assert_eq!(late.outcome, Outcome::Finished { state: StateKind::Closed });
    assert!(!late.performed);
}

#[tokio::test(start_paused = true)]
async fn the_call_whose_row_poisons_the_machine_answers_poisoned() {
    let handle = spawn();
    call(&handle, Event::Open).await.unwrap();
    assert_eq!(handle.status(), Status::In(StateKind::Busy));
    assert_eq!((handle.status().to_string(), handle.status().state()), ("Busy".to_owned(), Some(StateKind::Busy)));
    let outcome = call(&handle, Event::Bail).await.unwrap();
    assert_eq!(outcome, Outcome::Poisoned);
    assert_eq!(handle.status(), Status::Poisoned);
    assert_eq!(handle.status().to_string(), "<poisoned>");
    assert_eq!((outcome.state(), outcome.action()), (None, None));
    // The worker failed: later calls say why.
    let err = call(&handle, Event::Tick).await.expect_err("the worker failed");
    assert!(
        matches!(&err, RequestError::Failed(cause) if **cause == WorkerError::MachinePoisoned { event: desk::EventKind::Bail }),
        "{err:?}"
    );
}

#[test]
fn kinds_list_and_name_every_variant() {
    use agent_fsm::{Kind, Kinded};
    assert_eq!(StateKind::ALL, [StateKind::Idle, StateKind::Busy, StateKind::Closed]);
    assert_eq!(desk::State::Busy { count: 3 }.kind(), StateKind::Busy);
    assert_eq!(Kinded::kind(&Event::Reply(1)), desk::EventKind::Reply);
    assert_eq!(ActionKind::Count.name(), "Count");
    assert_eq!(Kind::index(ActionKind::Bye), 5);
    let names: Vec<_> = desk::EventKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(names, desk::Event::NAMES);
}

#[test]
fn kinds_serialize_as_snake_case_names() {
    assert_eq!(serde_json::to_string(&ActionKind::Greet).unwrap(), "\"greet\"");
    let kind: StateKind = serde_json::from_str("\"busy\"").unwrap();
    assert_eq!(kind, StateKind::Busy);
    assert!(serde_json::from_str::<StateKind>("\"nowhere\"").is_err());
}

/// A `call` whose caller gives up waiting (a timeout) has its event
/// delivered all the same, as `call`'s docs say: only the answer is lost.
#[tokio::test(start_paused = true)]
async fn a_call_given_up_on_still_delivers_its_event() {
    // `Greet` pauses for a second: input waits behind it.
    let fx = runtime::from_fn(|action: desk::Action, cx: &mut EffectContext<'_, Machine, ()>| {
        if action == desk::Action::Greet {
            cx.pause(Duration::from_secs(1), Event::Tick);
        }
    });
    let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new());
    call(&handle, Event::Open).await.unwrap();
    let given_up = tokio::time::timeout(Duration::from_millis(10), handle.call(Event::Tick)).await;
    assert!(given_up.is_err(), "the call was answered while the pause held it back");
    crate::support::within(handle.wait_idle()).await.unwrap();
    // The pause's `Tick` and the given-up call's.
    let state = crate::support::within(handle.state()).await.unwrap();
    assert_eq!(state, desk::State::Busy { count: 2 });
}
