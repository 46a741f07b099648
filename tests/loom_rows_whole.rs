//! The Loom table as a whole, as the module docs of `src/loom.rs` promise:
//! unlisted pairs keep the state and return the fallback, a large
//! conversation is moved and not copied, the description lists every
//! tested row, an observer sees the transient hop, an interrupt ends the
//! turn from any waiting state, and repeated call ids are found.

#[path = "support/loom_rows.rs"]
mod loom_rows;

use std::sync::Arc;

use agent_fsm::{Recorder, Status, Unhandled, UnhandledReason};
use agent_fsm_examples::loom::machine::{EventKind, StateKind};
use agent_fsm_examples::loom::{
    AgentAction, AgentEvent, AgentState, ErrorOrigin, Executions, Loom, Message, StreamEvent,
};
use loom_rows::*;

// ----------------------------------------------------- unlisted pairs

#[test]
fn unlisted_pair_keeps_state_and_returns_fallback() {
    let before = calling(1, history());
    let mut m = Loom::with_state(before.clone(), cfg());
    let mut rec = Recorder::default();
    let action = m.handle_event_with(AgentEvent::UserInput(Message::user("again")), &mut rec);
    assert_eq!(action, AgentAction::WaitForInput);
    assert_eq!(m.state(), &before);
    assert_eq!(rec.steps, Vec::new());
    assert_eq!(
        rec.unhandled,
        vec![Unhandled {
            state: Status::In(StateKind::CallingLlm),
            event: EventKind::UserInput,
            reason: UnhandledReason::NoRow
        }]
    );

    let mut m = Loom::with_state(AgentState::ShuttingDown, cfg());
    let mut rec = Recorder::default();
    let action = m.handle_event_with(AgentEvent::UserInput(Message::user("late")), &mut rec);
    assert_eq!(action, AgentAction::WaitForInput);
    assert_eq!(m.state(), &AgentState::ShuttingDown);
    assert_eq!(
        rec.unhandled,
        vec![Unhandled {
            state: Status::In(StateKind::ShuttingDown),
            event: EventKind::UserInput,
            reason: UnhandledReason::NoRow
        }]
    );
}

// ------------------------------------------------------------- move, not copy

#[test]
fn large_conversation_is_moved_not_copied() {
    let messages: Vec<Message> = (0..10_000).map(|i| Message::user(format!("message number {i}"))).collect();
    let mut m = Loom::with_state(calling(0, messages), cfg());
    let shared = m.state().conversation().unwrap().shared();
    let text_of = |m: &Message| match m {
        Message::User { content } => content.as_ptr(),
        other => panic!("expected a user message, got {other:?}"),
    };
    let first_text = text_of(&shared[0]);

    // In place.
    m.handle_event(AgentEvent::LlmEvent(StreamEvent::TextDelta("x".to_owned())));
    assert!(Arc::ptr_eq(&shared, &m.state().conversation().unwrap().shared()));

    // CallingLlm -> Error -> CallingLlm: moved twice, and the request shares it.
    let action = m.handle_event(AgentEvent::LlmFailed(llm_error("503")));
    assert_eq!(action, AgentAction::ScheduleRetry { attempt: 1, retry_after: None });
    assert!(m.state().is_error());
    assert!(Arc::ptr_eq(&shared, &m.state().conversation().unwrap().shared()));
    let action = m.handle_event(AgentEvent::RetryTimeoutFired);
    assert!(Arc::ptr_eq(&shared, &m.state().conversation().unwrap().shared()));
    let AgentAction::SendLlmRequest(req) = action else { panic!("expected SendLlmRequest, got {action:?}") };
    assert!(Arc::ptr_eq(&shared, &req.messages));
    drop(req);

    // A row that appends (through the transient state): with no request
    // alive the list is appended in place, so the Arc and the messages'
    // own buffers are the same ones.
    let arc_addr = Arc::as_ptr(&shared);
    drop(shared);
    let action = m.handle_event(AgentEvent::LlmEvent(agent_fsm_examples::loom::reply("ok", Vec::new())));
    assert_eq!(action, AgentAction::WaitForInput);
    let now = m.state().conversation().unwrap();
    assert_eq!(now.len(), 10_001);
    assert_eq!(Arc::as_ptr(&now.shared()), arc_addr);
    assert_eq!(text_of(&now.messages()[0]), first_text);
}

// ------------------------------------------------------------ introspection

#[test]
fn description_lists_every_tested_row() {
    type Row = (&'static str, Option<&'static str>, Option<&'static str>, &'static str, Option<&'static str>);
    let expected: Vec<Row> = vec![
        ("WaitingForUserInput", Some("UserInput"), None, "CallingLlm", Some("SendLlmRequest")),
        ("CallingLlm", Some("LlmEvent"), None, "CallingLlm", Some("DisplayMessage")),
        ("CallingLlm", Some("LlmEvent"), None, "CallingLlm", Some("WaitForInput")),
        ("CallingLlm", Some("LlmEvent"), None, "CallingLlm", Some("WaitForInput")),
        (
            "CallingLlm",
            Some("LlmEvent"),
            Some("let Some(id) = repeated_id(&message.tool_calls)"),
            "WaitingForUserInput",
            Some("DisplayError"),
        ),
        ("CallingLlm", Some("LlmEvent"), None, "ProcessingLlmResponse", None),
        (
            "CallingLlm",
            Some("LlmFailed"),
            Some("error.is_retryable() && retries.saturating_add(1) < ctx.max_retries"),
            "Error",
            Some("ScheduleRetry"),
        ),
        ("CallingLlm", Some("LlmFailed"), None, "WaitingForUserInput", Some("DisplayError")),
        (
            "ProcessingLlmResponse",
            None,
            Some("!response.tool_calls.is_empty()"),
            "ExecutingTools",
            Some("ExecuteTools"),
        ),
        ("ProcessingLlmResponse", None, None, "WaitingForUserInput", Some("WaitForInput")),
        (
            "ExecutingTools",
            Some("ToolCompleted"),
            Some("executions.pending_count() > 1 && let Some(at) = executions.pending_at(call_id)"),
            "ExecutingTools",
            Some("WaitForInput"),
        ),
        (
            "ExecutingTools",
            Some("ToolCompleted"),
            Some(
                "let Some(at) = executions.pending_at(call_id) && executions.mutates_at(at, outcome, &ctx.mutating_tools)",
            ),
            "PostToolsHook",
            Some("RunPostToolsHook"),
        ),
        (
            "ExecutingTools",
            Some("ToolCompleted"),
            Some("let Some(at) = executions.pending_at(call_id)"),
            "CallingLlm",
            Some("SendLlmRequest"),
        ),
        ("ExecutingTools", Some("ToolCompleted"), None, "ExecutingTools", Some("DisplayError")),
        (
            "ExecutingTools",
            Some("ToolProgress"),
            Some("let Some(at) = executions.pending_at(&report.call_id)"),
            "ExecutingTools",
            Some("WaitForInput"),
        ),
        ("ExecutingTools", Some("ToolProgress"), None, "ExecutingTools", Some("DisplayError")),
        ("PostToolsHook", Some("PostToolsHookCompleted"), None, "CallingLlm", Some("SendLlmRequest")),
        ("Error", Some("RetryTimeoutFired"), None, "CallingLlm", Some("SendLlmRequest")),
    ];
    let shutdown_sources =
        ["WaitingForUserInput", "CallingLlm", "ExecutingTools", "PostToolsHook", "Error", "ShuttingDown"];
    let rows: Vec<Row> =
        Loom::DESCRIPTION.transitions.iter().map(|t| (t.from, t.event, t.guard, t.to, t.action)).collect();
    for row in &expected {
        assert!(rows.contains(row), "missing row {row:?} in {rows:#?}");
    }
    for from in shutdown_sources {
        let row = (from, Some("ShutdownRequested"), None, "ShuttingDown", Some("Shutdown"));
        assert!(rows.contains(&row), "missing row {row:?}");
        let t = Loom::DESCRIPTION
            .transitions
            .iter()
            .find(|t| t.from == from && t.event == Some("ShutdownRequested"))
            .unwrap();
        assert!(t.any_state);
    }
    // The interrupt row the executor needs, from every state that waits.
    let interrupt_sources = ["WaitingForUserInput", "CallingLlm", "ExecutingTools", "PostToolsHook", "Error"];
    for from in interrupt_sources {
        let row = (from, Some("Interrupted"), None, "WaitingForUserInput", Some("DisplayError"));
        assert!(rows.contains(&row), "missing row {row:?}");
    }
    // Nothing else: 17 rows + 6 expanded shutdown rows + 5 interrupt rows,
    // tried in table order.
    assert_eq!(rows.len(), expected.len() + shutdown_sources.len() + interrupt_sources.len());
    assert_eq!(rows[..expected.len()], expected[..]);

    // What the rows' patterns ask beyond the names: the retry row takes
    // only a failed model call, the stream rows one kind of LLM event each.
    let pattern = |from: &str, event: &str, to: &str| {
        Loom::DESCRIPTION
            .transitions
            .iter()
            .find(|t| (t.from, t.event, t.to) == (from, Some(event), to))
            .map(|t| t.pattern)
    };
    assert_eq!(pattern("Error", "RetryTimeoutFired", "CallingLlm"), Some(Some("origin = Llm")));
    assert_eq!(pattern("CallingLlm", "LlmEvent", "ProcessingLlmResponse"), Some(Some("LlmEvent(Completed)")));
    assert_eq!(pattern("WaitingForUserInput", "UserInput", "CallingLlm"), Some(None));
    assert_eq!(pattern("PostToolsHook", "ShutdownRequested", "ShuttingDown"), Some(None));

    // In-place rows are exactly the self-transitions without a payload.
    for t in Loom::DESCRIPTION.transitions {
        assert_eq!(t.in_place, t.from == t.to, "{t:?}");
        assert!(AgentState::NAMES.contains(&t.from) && AgentState::NAMES.contains(&t.to));
        if let Some(e) = t.event {
            assert!(AgentEvent::NAMES.contains(&e), "{t:?}");
        }
        if let Some(a) = t.action {
            assert!(AgentAction::NAMES.contains(&a), "{t:?}");
        }
    }
    assert_eq!(AgentState::NAMES, Loom::DESCRIPTION.states.iter().map(|s| s.name).collect::<Vec<_>>());
    assert_eq!(Loom::DESCRIPTION.fallback, "WaitForInput");
    assert_eq!(Loom::DESCRIPTION.initial().name, "WaitingForUserInput");
    assert!(Loom::DESCRIPTION.is_transient("ProcessingLlmResponse"));
    assert!(Loom::DESCRIPTION.is_terminal("ShuttingDown"));
    assert!(Loom::DESCRIPTION.mermaid.contains("ExecutingTools --> PostToolsHook : ToolCompleted"));
}

#[test]
fn observer_sees_the_transient_hop_on_completed() {
    let calls = vec![call("a", "bash")];
    let mut m = Loom::with_state(calling(0, history()), cfg());
    let mut rec = Recorder::default();
    let action = m.handle_event_with(
        AgentEvent::LlmEvent(agent_fsm_examples::loom::reply("running".to_owned(), calls.clone())),
        &mut rec,
    );
    assert_eq!(action, AgentAction::ExecuteTools(calls));
    assert_eq!(
        rec.hop_names(),
        vec![
            ("CallingLlm", Some("LlmEvent"), "ProcessingLlmResponse", None),
            ("ProcessingLlmResponse", None, "ExecutingTools", Some("ExecuteTools")),
        ]
    );
    // Each step names its row in the description.
    for step in &rec.steps {
        let t = &Loom::DESCRIPTION.transitions[step.row];
        assert_eq!((t.from, t.event, t.to, t.action), step.names());
    }
    assert_eq!(Loom::DESCRIPTION.transitions[rec.steps[1].row].guard, Some("!response.tool_calls.is_empty()"));
    assert_eq!(rec.unhandled, Vec::new());
    assert_eq!(m.state().name(), "ExecutingTools");
    assert!(!m.state().is_processing_llm_response());
    assert!(!m.state().is_transient());

    // Text only: the transient hop ends in WaitingForUserInput.
    let mut m = Loom::with_state(calling(0, history()), cfg());
    let mut rec = Recorder::default();
    m.handle_event_with(AgentEvent::LlmEvent(agent_fsm_examples::loom::reply("bye", Vec::new())), &mut rec);
    assert_eq!(
        rec.hop_names(),
        vec![
            ("CallingLlm", Some("LlmEvent"), "ProcessingLlmResponse", None),
            ("ProcessingLlmResponse", None, "WaitingForUserInput", Some("WaitForInput")),
        ]
    );
    assert_eq!(m.state().name(), "WaitingForUserInput");
}

#[test]
fn interrupted_ends_the_turn_from_any_waiting_state() {
    let hook = AgentState::PostToolsHook {
        pending_llm_request: request(history(), 0),
        completed_tools: Vec::new(),
        conversation: conv(history()),
    };
    for state in [
        AgentState::WaitingForUserInput { conversation: conv(history()) },
        calling(1, history()),
        hook,
        llm_failed(1, ErrorOrigin::Llm, "overloaded"),
    ] {
        let mut m = Loom::with_state(state, cfg());
        let action = m.handle_event(AgentEvent::Interrupted { cause: "user pressed stop".into() });
        assert_eq!(action, AgentAction::DisplayError("interrupted: user pressed stop".into()));
        assert_eq!(m.state(), &AgentState::WaitingForUserInput { conversation: conv(history()) });
    }
    // A round's calls still without results are answered first.
    let mut m = Loom::with_state(executing(Executions::pending(&[call("a", "bash")]), history()), cfg());
    let action = m.handle_event(AgentEvent::Interrupted { cause: "user pressed stop".into() });
    assert_eq!(action, AgentAction::DisplayError("interrupted: user pressed stop".into()));
    let answered = with(history(), [Message::tool_error("a", "error: interrupted: user pressed stop")]);
    assert_eq!(m.state(), &AgentState::WaitingForUserInput { conversation: conv(answered) });
    let mut m = Loom::with_state(AgentState::ShuttingDown, cfg());
    assert_eq!(m.handle_event(AgentEvent::Interrupted { cause: "late".into() }), AgentAction::WaitForInput);
    assert_eq!(m.state(), &AgentState::ShuttingDown);
}

/// `repeated_id` finds the first id a later call repeats, by scanning a
/// short reply and through a sorted list for a long one.
#[test]
fn repeated_id_finds_the_first_repeat_in_short_and_long_replies() {
    use agent_fsm_examples::loom::{ToolCall, repeated_id};
    let calls = |ids: &[String]| -> Vec<ToolCall> {
        ids.iter().map(|id| ToolCall { id: id.clone(), name: "t".into(), arguments: serde_json::Value::Null }).collect()
    };
    for n in [2usize, 16, 17, 40] {
        let mut ids: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
        assert_eq!(repeated_id(&calls(&ids)), None, "{n} distinct ids");
        ids[n - 1] = "c0".into();
        assert_eq!(repeated_id(&calls(&ids)), Some("c0"), "{n} ids, the last repeating c0");
    }
    assert_eq!(repeated_id(&[]), None);
}
