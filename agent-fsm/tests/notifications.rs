//! Notifications as a UI reads them: by kind, with the state itself for a
//! subscription that asked for it (and only then), and serializable, every
//! kind of notification read back equal to itself.

use std::sync::Arc;
use std::time::Duration;

use agent_fsm::runtime::{
    self, EffectContext, EffectFailure, Effects, ExecutorConfig, MachineHandle, Notification, StateCopy, Subscription,
    Topics,
};
use agent_fsm::{Status, Step, Unhandled, UnhandledReason};

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde)]
mod chat {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle {
            turns: u32,
        },
        Streaming {
            turns: u32,
            text: String,
        },
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Ask(String),
        Delta(String),
        Done,
        Stray,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Action {
        Nothing,
        Stream(String),
        Show(usize),
        Said(u32),
    }

    transitions! {
        Idle { turns } + Ask(question) => Streaming { turns, text: String::new() } / Stream(question),
        Streaming { text } + Delta(delta) => { text.push_str(&delta); } Streaming / Show(text.len()),
        Streaming { turns } + Done => Idle { turns: turns + 1 } / Said(turns + 1),
    }
}

use chat::{ActionKind, Event, EventKind, Machine, State, StateKind};

type Note = Notification<Machine, usize>;

/// Streams the question back word by word, then `Done`; publishes how much
/// text has been shown.
struct Echo;

impl Effects<Machine> for Echo {
    type Output = usize;

    fn perform(&mut self, action: chat::Action, cx: &mut EffectContext<'_, Machine, usize>) {
        match action {
            chat::Action::Stream(question) => {
                let mut events: Vec<Event> = question.split(' ').map(|w| Event::Delta(format!("{w} "))).collect();
                events.push(Event::Done);
                cx.stream(futures::stream::iter(events), |_| None);
            }
            chat::Action::Show(len) => cx.output(len),
            chat::Action::Said(_) | chat::Action::Nothing => {}
        }
    }
}

fn spawn() -> MachineHandle<Machine, usize> {
    runtime::spawn(Machine::new(0), Echo, ExecutorConfig::new().notification_capacity(1024))
}

fn drain(subscription: &mut Subscription<Machine, usize>) -> Vec<Note> {
    std::iter::from_fn(|| subscription.try_recv().ok()).collect()
}

async fn bounded<T>(what: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), what).await.expect("no hang")
}

#[tokio::test(start_paused = true)]
async fn a_subscriber_rebuilds_the_state_from_notifications_alone() {
    let handle = spawn();
    let mut watcher = handle.subscribe_with_states(Topics::TRANSITIONS);
    let mut plain = handle.subscribe();
    assert!(watcher.topics().contains(Topics::STATES));
    assert!(!plain.topics().contains(Topics::STATES), "the default subscription gets no states");

    // What the UI keeps: the last state it was sent, nothing of its own.
    let mut shown: Option<State> = None;
    let mut changes = 0;
    for question in ["what is a kind", "and a step"] {
        bounded(handle.send(Event::Ask(question.into()))).await.unwrap();
        bounded(handle.wait_idle()).await.unwrap();
        for n in drain(&mut watcher) {
            match n {
                Notification::State(state) => {
                    changes += 1;
                    shown = Some(state.into_inner());
                }
                Notification::Transition(_) => {}
                other => panic!("not of its topics: {other:?}"),
            }
        }
        assert_eq!(shown.as_ref(), Some(&bounded(handle.state()).await.unwrap()), "after {question:?}");
    }
    assert_eq!(shown, Some(State::Idle { turns: 2 }));
    // One state per step a row accepted: an ask, a delta per word, a done.
    assert_eq!(changes, (1 + 4 + 1) + (1 + 3 + 1));
    // A refused event moves nothing: no state is sent for it.
    bounded(handle.send(Event::Stray)).await.unwrap();
    bounded(handle.wait_idle()).await.unwrap();
    assert!(drain(&mut watcher).is_empty());

    let all = drain(&mut plain);
    assert!(!all.iter().any(|n| matches!(n, Notification::State(_))), "{all:?}");
    assert!(all.iter().any(|n| matches!(n, Notification::Unhandled(u) if u.event == EventKind::Stray)));

    // Once the last subscription with states is gone, none is copied.
    drop(watcher);
    let mut later = handle.subscribe_to(Topics::ALL);
    bounded(handle.send(Event::Ask("again".into()))).await.unwrap();
    bounded(handle.wait_idle()).await.unwrap();
    let after = drain(&mut later);
    assert!(after.iter().any(|n| matches!(n, Notification::Transition(_))));
    assert!(!after.iter().any(|n| matches!(n, Notification::State(_))), "{after:?}");
    bounded(handle.shutdown()).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_state_follows_the_transitions_of_its_step_and_precedes_its_action() {
    let handle = spawn();
    let mut all = handle.subscribe_with_states(Topics::ALL);
    bounded(handle.send(Event::Ask("hi".into()))).await.unwrap();
    bounded(handle.wait_idle()).await.unwrap();
    let seen = drain(&mut all);
    let kinds: Vec<&str> = seen
        .iter()
        .map(|n| match n {
            Notification::Transition(_) => "transition",
            Notification::State(_) => "state",
            Notification::Action { .. } => "action",
            Notification::Output(_) => "output",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "transition",
            "state",
            "action", // Ask
            "transition",
            "state",
            "action",
            "output", // Delta
            "transition",
            "state",
            "action", // Done
        ]
    );
    let Notification::State(first) = &seen[1] else { unreachable!("checked above") };
    assert_eq!(**first, State::Streaming { turns: 0, text: String::new() });
    assert!(matches!(
        seen[0],
        Notification::Transition(Step {
            from: StateKind::Idle,
            to: StateKind::Streaming,
            event: Some(EventKind::Ask),
            ..
        })
    ));
    assert!(matches!(seen[2], Notification::Action { action: ActionKind::Stream, performed: true }));
    bounded(handle.shutdown()).await.unwrap();
}

/// One notification of every kind, as the worker builds them.
fn every_notification() -> Vec<Note> {
    vec![
        Notification::Transition(Step {
            from: StateKind::Idle,
            event: Some(EventKind::Ask),
            to: StateKind::Streaming,
            action: Some(ActionKind::Stream),
            row: 0,
        }),
        Notification::Transition(Step {
            from: StateKind::Streaming,
            event: None,
            to: StateKind::Idle,
            action: None,
            row: 2,
        }),
        Notification::Unhandled(Unhandled {
            state: Status::In(StateKind::Idle),
            event: EventKind::Stray,
            reason: UnhandledReason::NoRow,
        }),
        Notification::Unhandled(Unhandled {
            state: Status::Poisoned,
            event: EventKind::Done,
            reason: UnhandledReason::Poisoned,
        }),
        Notification::State(StateCopy::new(&State::Streaming { turns: 3, text: "half a re".into() })),
        Notification::Action { action: ActionKind::Show, performed: false },
        Notification::Action { action: ActionKind::Show, performed: true },
        Notification::Output(42),
        Notification::EffectFailed { key: Some("fetch".into()), failure: EffectFailure::Panicked("boom".into()) },
        Notification::EffectFailed { key: None, failure: EffectFailure::TimedOut },
        Notification::EffectFailed { key: None, failure: EffectFailure::Cancelled },
        Notification::Interrupted { cause: Arc::from("user pressed stop") },
        Notification::Lagged(7),
    ]
}

#[test]
fn every_notification_survives_a_serde_round_trip() {
    for notification in every_notification() {
        let json = serde_json::to_string(&notification).expect("serializes");
        let back: Note = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, notification, "{json}");
    }
}

#[test]
fn notifications_serialize_kinds_by_their_snake_case_names_and_the_state_as_itself() {
    let all = every_notification();
    let (transition, lagged) = (&all[0], &all[all.len() - 1]);
    assert_eq!(
        serde_json::to_value(transition).unwrap(),
        serde_json::json!({"transition": {"from": "idle", "event": "ask", "to": "streaming", "action": "stream", "row": 0}})
    );
    assert_eq!(serde_json::to_value(lagged).unwrap(), serde_json::json!({"lagged": 7}));
    let state = Notification::<Machine, usize>::State(StateCopy::new(&State::Idle { turns: 1 }));
    assert_eq!(
        serde_json::to_value(&state).unwrap(),
        serde_json::json!({"state": serde_json::to_value(State::Idle { turns: 1 }).unwrap()})
    );
}

#[test]
fn notifications_equal_their_clones_and_no_other() {
    let all = every_notification();
    for (i, a) in all.iter().enumerate() {
        assert_eq!(a.clone(), *a);
        for (j, b) in all.iter().enumerate() {
            assert_eq!(i == j, a == b, "{a:?} against {b:?}");
        }
    }
    let debug = format!("{:?}", all[4]);
    assert_eq!(debug, r#"State(Streaming { turns: 3, text: "half a re" })"#);
    let Notification::State(copy) = &all[4] else { unreachable!("the fifth is a state") };
    assert_eq!(copy.clone().into_inner(), State::Streaming { turns: 3, text: "half a re".into() });
}
