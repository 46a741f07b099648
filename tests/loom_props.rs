//! Properties of the Loom machine over random event sequences: shutdown
//! from every reachable state, determinism, no resting in the transient
//! state, and the fallback (state kept, `WaitForInput`, observer report and
//! a tracing warning) for every pair the table does not list.

use std::io;
use std::sync::{Arc, Mutex};

use agent_fsm::llm::ErrorKind;
use agent_fsm::{Recorder, StateMachine, Unhandled, UnhandledReason};
use agent_fsm_examples::loom::machine::{EventKind, StateKind};
use agent_fsm_examples::loom::{
    AgentAction, AgentConfig, AgentError, AgentEvent, AgentState, ConversationContext, ErrorOrigin, Loom, Message,
    ProviderError, StreamEvent, ToolCall, ToolError, ToolExecutionOutcome, ToolProgress, ToolProgressEvent,
};
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use serde_json::json;

// ------------------------------------------------------------- strategies

/// Call ids come from a small pool, so completions and progress reports
/// often (not always) match a pending call.
const IDS: [&str; 3] = ["c0", "c1", "c2"];
/// Two read-only tools and two of the default mutating ones.
const TOOLS: [&str; 4] = ["read_file", "grep", "edit_file", "bash"];

fn text() -> impl Strategy<Value = String> {
    "[a-z ]{0,8}"
}

fn id() -> impl Strategy<Value = String> {
    select(&IDS[..]).prop_map(str::to_owned)
}

fn tool_calls() -> impl Strategy<Value = Vec<ToolCall>> {
    // Distinct ids, in any order.
    subsequence(IDS.to_vec(), 0..=3)
        .prop_shuffle()
        .prop_flat_map(|ids| {
            let n = ids.len();
            (Just(ids), proptest::collection::vec(select(&TOOLS[..]), n))
        })
        .prop_map(|(ids, names)| {
            ids.into_iter()
                .zip(names)
                .map(|(id, name)| ToolCall {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    arguments: json!({ "arg": id }),
                })
                .collect()
        })
}

fn llm_error(message: String) -> ProviderError {
    ProviderError::new(ErrorKind::ServerError { status: 503, retry_after: None }, message)
}

fn llm_event() -> impl Strategy<Value = AgentEvent> {
    prop_oneof![
        2 => text().prop_map(|content| AgentEvent::LlmEvent(StreamEvent::TextDelta(content))),
        1 => (0usize..3, id(), select(&TOOLS[..]), text()).prop_map(|(index, call_id, tool, fragment)| {
            AgentEvent::LlmEvent(StreamEvent::ToolCallDelta {
                index,
                id: Some(call_id),
                name: Some(tool.to_owned()),
                arguments_fragment: fragment,
            })
        }),
        4 => (text(), tool_calls()).prop_map(|(content, tool_calls)| AgentEvent::LlmEvent(agent_fsm_examples::loom::reply(content, tool_calls))),
        1 => text().prop_map(|message| AgentEvent::LlmFailed(llm_error(message))),
    ]
}

fn outcome(call_id: String) -> impl Strategy<Value = ToolExecutionOutcome> {
    prop_oneof![
        3 => (Just(call_id.clone()), text()).prop_map(|(call_id, out)| {
            ToolExecutionOutcome::Success {
                call_id,
                output: json!(out),
            }
        }),
        1 => (Just(call_id), text()).prop_map(|(call_id, message)| {
            ToolExecutionOutcome::Error {
                call_id,
                error: ToolError { message },
            }
        }),
    ]
}

fn tool_completed() -> impl Strategy<Value = AgentEvent> {
    id().prop_flat_map(|call_id| {
        (Just(call_id.clone()), outcome(call_id))
            .prop_map(|(call_id, outcome)| AgentEvent::ToolCompleted { call_id, outcome })
    })
}

fn tool_progress() -> impl Strategy<Value = AgentEvent> {
    (id(), proptest::option::of(0.0f32..=1.0), proptest::option::of(text())).prop_map(|(call_id, fraction, message)| {
        AgentEvent::ToolProgress(ToolProgressEvent { call_id, progress: ToolProgress { fraction, message } })
    })
}

/// Any event, every kind; shutdown is rare so sequences get somewhere.
fn event() -> impl Strategy<Value = AgentEvent> {
    prop_oneof![
        10 => text().prop_map(|t| AgentEvent::UserInput(Message::user(t))),
        14 => llm_event(),
        3 => tool_progress(),
        18 => tool_completed(),
        5 => any::<bool>().prop_map(|action_taken| AgentEvent::PostToolsHookCompleted {
            action_taken
        }),
        6 => Just(AgentEvent::RetryTimeoutFired),
        2 => text().prop_map(|cause| AgentEvent::Interrupted { cause }),
        1 => Just(AgentEvent::ShutdownRequested),
    ]
}

fn events() -> impl Strategy<Value = Vec<AgentEvent>> {
    proptest::collection::vec(event(), 0..40)
}

/// One event of every kind, to probe each reachable state with.
fn probes() -> impl Strategy<Value = Vec<AgentEvent>> {
    (text(), llm_event(), tool_progress(), tool_completed(), any::<bool>(), text()).prop_map(
        |(t, llm, progress, completed, action_taken, cause)| {
            vec![
                AgentEvent::UserInput(Message::user(t)),
                llm,
                progress,
                completed,
                AgentEvent::PostToolsHookCompleted { action_taken },
                AgentEvent::RetryTimeoutFired,
                AgentEvent::Interrupted { cause },
                AgentEvent::ShutdownRequested,
            ]
        },
    )
}

fn config() -> impl Strategy<Value = AgentConfig> {
    (0u32..5, 1u32..10_000, proptest::bool::weighted(0.2)).prop_map(|(max_retries, max_tokens, no_mutating)| {
        let mut cfg = AgentConfig { max_retries, max_tokens, ..AgentConfig::default() };
        if no_mutating {
            cfg.mutating_tools.clear();
        }
        cfg
    })
}

// ---------------------------------------------------------------- helpers

fn proptest_config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        // Keep failures in the report, not in files next to the tests.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Whether the table has a row for (state, event).
fn listed(state: &str, event: &str) -> bool {
    Loom::DESCRIPTION.transitions.iter().any(|t| t.from == state && t.event == Some(event))
}

fn clone_machine(m: &Loom) -> Loom {
    Loom::with_state(m.state().clone(), m.context().clone())
}

/// A `MakeWriter` that appends formatted events to a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything written since the last call.
    fn take(&self) -> String {
        let bytes = std::mem::take(&mut *self.0.lock().unwrap());
        String::from_utf8(bytes).unwrap()
    }
}

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Runs `f` with a subscriber that writes every event (all levels) into
/// the returned buffer, on this thread only.
fn capturing<R>(f: impl FnOnce(&Captured) -> R) -> R {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    tracing::subscriber::with_default(subscriber, || f(&captured))
}

// ------------------------------------------------------------- properties

proptest! {
    #![proptest_config(proptest_config())]

    /// (1) From every reachable state, shutdown succeeds.
    #[test]
    fn shutdown_succeeds_from_every_reachable_state(cfg in config(), events in events()) {
        let mut m = Loom::new(cfg);
        for event in events.into_iter().map(Some).chain([None]) {
            let mut probe = clone_machine(&m);
            let from = probe.state().name();
            let mut rec = Recorder::default();
            let action = probe.handle_event_with(AgentEvent::ShutdownRequested, &mut rec);
            prop_assert_eq!(action, AgentAction::Shutdown);
            prop_assert_eq!(probe.state(), &AgentState::ShuttingDown);
            prop_assert!(probe.state().is_terminal());
            prop_assert_eq!(probe.state().conversation(), None);
            prop_assert!(rec.unhandled.is_empty());
            prop_assert_eq!(rec.steps.len(), 1);
            prop_assert_eq!((rec.steps[0].from.name(), rec.steps[0].to.name()), (from, "ShuttingDown"));
            if let Some(event) = event {
                m.handle_event(event);
            }
        }
    }

    /// (2) Same events, same actions, same final state (replay).
    #[test]
    fn same_events_give_same_actions(cfg in config(), events in events()) {
        let mut a = Loom::new(cfg.clone());
        let mut b = Loom::new(cfg);
        let actions_a: Vec<AgentAction> =
            events.iter().cloned().map(|e| a.handle_event(e)).collect();
        let actions_b: Vec<AgentAction> =
            events.iter().cloned().map(|e| b.handle_event(e)).collect();
        prop_assert_eq!(actions_a, actions_b);
        prop_assert_eq!(a.state(), b.state());
    }

    /// (3) No sequence panics; the machine never rests in the transient
    /// state; every reported hop is a row of the description and the hops
    /// chain from the old state to the new one.
    #[test]
    fn never_rests_in_the_transient_state(cfg in config(), events in events()) {
        let mut m = Loom::new(cfg);
        for event in events {
            let before = m.state().clone();
            let (from, event_kind) = (before.kind(), event.kind());
            let mut rec = Recorder::default();
            let action = m.handle_event_with(event, &mut rec);
            let state = m.state();

            prop_assert!(!state.is_transient());
            prop_assert_ne!(state.name(), "ProcessingLlmResponse");
            // The status the executor publishes names the same state.
            prop_assert_eq!(m.status().state().map(|k| k.name()), Some(state.name()));
            prop_assert_eq!(state.conversation().is_none(), state.name() == "ShuttingDown");
            // The conversation only grows.
            if let (Some(old), Some(new)) = (before.conversation(), state.conversation()) {
                prop_assert!(new.len() >= old.len());
                prop_assert_eq!(&new.messages()[..old.len()], old.messages());
            }

            if rec.steps.is_empty() {
                // Not accepted: reported once, nothing changed, fallback.
                prop_assert_eq!(rec.unhandled.len(), 1);
                prop_assert_eq!(&before, state);
                prop_assert_eq!(&action, &AgentAction::WaitForInput);
                prop_assert_eq!(
                    (rec.unhandled[0].state, rec.unhandled[0].event),
                    (agent_fsm::Status::In(from), event_kind)
                );
            } else {
                prop_assert!(rec.unhandled.is_empty());
                prop_assert_eq!(rec.steps[0].from, from);
                prop_assert_eq!(rec.steps[0].event, Some(event_kind));
                prop_assert_eq!(rec.steps.last().unwrap().to, state.kind());
                prop_assert_eq!(rec.steps.last().unwrap().action, Some(action.kind()));
                for pair in rec.steps.windows(2) {
                    prop_assert_eq!(pair[0].to, pair[1].from);
                    prop_assert!(Loom::DESCRIPTION.is_transient(pair[0].to.name()));
                    prop_assert_eq!(pair[1].event, None);
                }
                for step in &rec.steps {
                    let t = &Loom::DESCRIPTION.transitions[step.row];
                    prop_assert_eq!((t.from, t.event, t.to, t.action), step.names());
                }
            }
        }
    }

    /// (4) Every (reachable state, event) pair the table does not list keeps
    /// the state, returns `WaitForInput`, reports `NoRow` and warns; every
    /// listed pair is accepted.
    #[test]
    fn unlisted_pairs_fall_back_and_warn(
        cfg in config(),
        events in events(),
        probes in probes(),
    ) {
        capturing(|log| {
            let mut m = Loom::new(cfg);
            for event in events.into_iter().map(Some).chain([None]) {
                for probe in &probes {
                    let state_name = m.state().name();
                    let event_name = probe.name();
                    let mut p = clone_machine(&m);
                    let mut rec = Recorder::default();
                    log.take();
                    let action = p.handle_event_with(probe.clone(), &mut rec);
                    let text = log.take();
                    if listed(state_name, event_name) {
                        // Reachable states never refuse (Error is only
                        // entered with origin Llm).
                        assert!(rec.unhandled.is_empty(), "{rec:?} for {probe:?} in {:?}", m.state());
                        assert!(!rec.steps.is_empty());
                        assert!(!text.contains("WARN"), "{text}");
                    } else {
                        assert_eq!(p.state(), m.state());
                        assert_eq!(action, AgentAction::WaitForInput);
                        assert!(rec.steps.is_empty());
                        assert_eq!(
                            rec.unhandled,
                            vec![Unhandled {
                                state: agent_fsm::Status::In(m.state().kind()),
                                event: probe.kind(),
                                reason: UnhandledReason::NoRow,
                            }]
                        );
                        assert!(text.contains("WARN"), "{text:?}");
                        assert!(text.contains(state_name), "{text:?}");
                        assert!(text.contains(event_name), "{text:?}");
                        assert!(text.contains("no row"), "{text:?}");
                        // The warning says when the state is terminal.
                        assert_eq!(text.contains("the state is terminal"), p.state().is_terminal(), "{text:?}");
                        assert_eq!(text.lines().count(), 1, "{text:?}");
                    }
                }
                if let Some(event) = event {
                    m.handle_event(event);
                }
            }
        });
    }

    /// (4, refused) Rows exist for `Error + RetryTimeoutFired`, but only for
    /// origin `Llm`: any other origin is refused, with a warning saying so.
    #[test]
    fn refused_retry_warns_refused(
        retries in 0u32..10,
        origin in prop_oneof![Just(ErrorOrigin::Tool), Just(ErrorOrigin::Io)],
        message in text(),
        history in proptest::collection::vec(text(), 0..5),
    ) {
        let state = AgentState::Error {
            error: AgentError::Llm(llm_error(message)),
            retries,
            origin,
            conversation: ConversationContext::from_messages(
                history.into_iter().map(Message::user).collect(),
            ),
        };
        prop_assert!(listed("Error", "RetryTimeoutFired"));
        let mut m = Loom::with_state(state.clone(), AgentConfig::default());
        let mut rec = Recorder::default();
        let (action, text) = capturing(|log| {
            let action = m.handle_event_with(AgentEvent::RetryTimeoutFired, &mut rec);
            (action, log.take())
        });
        prop_assert_eq!(action, AgentAction::WaitForInput);
        prop_assert_eq!(m.state(), &state);
        prop_assert!(rec.steps.is_empty());
        prop_assert_eq!(
            rec.unhandled,
            vec![Unhandled {
                state: agent_fsm::Status::In(StateKind::Error),
                event: EventKind::RetryTimeoutFired,
                reason: UnhandledReason::Refused,
            }]
        );
        // Under the crate's own target, the machine named in a field.
        prop_assert!(text.contains("WARN agent_fsm: "), "{:?}", text);
        prop_assert!(text.contains("machine=\"Loom\""), "{:?}", text);
        prop_assert!(text.contains("Error"), "{:?}", text);
        prop_assert!(text.contains("RetryTimeoutFired"), "{:?}", text);
        prop_assert!(text.contains("refused"), "{:?}", text);
    }
}

/// The machine reports transitions to its observer and does not log them
/// (the executor does, in a span per transition): a successful step emits
/// no log line at all, so `handle_event` costs what a hand-written `match`
/// costs.
#[test]
fn successful_transitions_are_observed_not_logged() {
    let text = capturing(|log| {
        let mut m = Loom::new(AgentConfig::default());
        let mut seen = Vec::new();
        struct Steps<'a>(&'a mut Vec<(&'static str, &'static str)>);
        impl agent_fsm::Observer<Loom> for Steps<'_> {
            fn on_transition(&mut self, step: &agent_fsm::StepOf<Loom>) {
                self.0.push((step.from.name(), step.to.name()));
            }
        }
        m.handle_event_with(AgentEvent::UserInput(Message::user("hi")), &mut Steps(&mut seen));
        assert_eq!(seen, [("WaitingForUserInput", "CallingLlm")]);
        log.take()
    });
    assert!(text.is_empty(), "{text:?}");
}
