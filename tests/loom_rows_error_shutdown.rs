//! One test per row of the Loom transition table, the rows of `Error` and
//! `Shutdown`: a retry timeout that calls the model again (refused for a
//! tool's error), and shutdown from every state, a resumed transient state
//! never resting there.

#[path = "support/loom_rows.rs"]
mod loom_rows;

use agent_fsm::{Recorder, Status, Unhandled, UnhandledReason};
use agent_fsm_examples::loom::machine::{EventKind, StateKind};
use agent_fsm_examples::loom::{AgentAction, AgentEvent, AgentState, AssistantMessage, ErrorOrigin, Executions, Loom};
use loom_rows::*;

// --------------------------------------------------------------- Error rows

#[test]
fn error_retry_timeout_calls_llm_with_same_retries() {
    for retries in [1, 2] {
        let mut m = Loom::with_state(llm_failed(retries, ErrorOrigin::Llm, "503"), cfg());
        let action = m.handle_event(AgentEvent::RetryTimeoutFired);
        assert_eq!(action, AgentAction::SendLlmRequest(request(history(), retries)));
        assert_eq!(m.state(), &calling(retries, history()));
    }
}

#[test]
fn error_with_tool_origin_refuses_retry_timeout() {
    for origin in [ErrorOrigin::Tool, ErrorOrigin::Io] {
        let before = llm_failed(1, origin, "disk");
        let mut m = Loom::with_state(before.clone(), cfg());
        let mut rec = Recorder::default();
        let action = m.handle_event_with(AgentEvent::RetryTimeoutFired, &mut rec);
        assert_eq!(action, AgentAction::WaitForInput);
        assert_eq!(m.state(), &before);
        assert_eq!(rec.steps, Vec::new());
        assert_eq!(
            rec.unhandled,
            vec![Unhandled {
                state: Status::In(StateKind::Error),
                event: EventKind::RetryTimeoutFired,
                reason: UnhandledReason::Refused
            }]
        );
    }
}

// ------------------------------------------------------------ Shutdown rows

#[test]
fn shutdown_from_waiting_for_user_input() {
    shutdown_from(AgentState::WaitingForUserInput { conversation: conv(history()) });
}

#[test]
fn shutdown_from_calling_llm() {
    shutdown_from(calling(1, history()));
}

/// A transient state never rests: `with_state` resolves it at once, so
/// shutdown then works from where it resolved to.
#[test]
fn shutdown_from_processing_llm_response() {
    shutdown_from(AgentState::ProcessingLlmResponse {
        response: AssistantMessage { text: "half-processed".into(), tool_calls: Vec::new(), ..Default::default() },
        conversation: conv(history()),
    });
}

#[test]
fn resumed_in_transient_state_never_rests_there() {
    let mut m = Loom::with_state(
        AgentState::ProcessingLlmResponse {
            response: AssistantMessage { text: "half-processed".into(), tool_calls: Vec::new(), ..Default::default() },
            conversation: conv(history()),
        },
        cfg(),
    );
    // Resolved through its text-only row on the spot.
    assert_eq!(m.state(), &AgentState::WaitingForUserInput { conversation: conv(history()) });
    m.handle_event(AgentEvent::RetryTimeoutFired);
    assert!(!m.state().is_transient(), "still in {:?}", m.state());
}

#[test]
fn shutdown_from_executing_tools() {
    shutdown_from(executing(Executions::pending(&[call("a", "bash")]), history()));
}

#[test]
fn shutdown_from_post_tools_hook() {
    shutdown_from(AgentState::PostToolsHook {
        pending_llm_request: request(history(), 0),
        completed_tools: Vec::new(),
        conversation: conv(history()),
    });
}

#[test]
fn shutdown_from_error() {
    shutdown_from(llm_failed(1, ErrorOrigin::Llm, "503"));
    shutdown_from(llm_failed(1, ErrorOrigin::Tool, "tool"));
}

#[test]
fn shutdown_from_shutting_down() {
    shutdown_from(AgentState::ShuttingDown);
}
