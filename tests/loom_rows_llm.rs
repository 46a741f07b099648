//! One test per row of the Loom transition table (and per guard branch),
//! the rows out of `WaitingForUserInput` and `CallingLlm`: the request and
//! its token budget, streamed deltas, the reply with or without tool calls,
//! and LLM errors retried or given up as the configuration says. States are
//! built with `Loom::with_state`, so each test looks at exactly one step and
//! checks the new state with all its data and the exact action.

#[path = "support/loom_rows.rs"]
mod loom_rows;

use std::sync::Arc;

use agent_fsm::Recorder;
use agent_fsm::llm::ErrorKind;
use agent_fsm_examples::loom::{
    AgentAction, AgentConfig, AgentError, AgentEvent, AgentState, ConversationContext, ErrorOrigin, Executions,
    LlmRequest, Loom, Message, ProviderError, StreamEvent, ToolExecutionStatus,
};
use loom_rows::*;

// ------------------------------------------------- WaitingForUserInput rows

#[test]
fn new_starts_waiting_with_an_empty_conversation() {
    let m = Loom::new(cfg());
    assert_eq!(m.state(), &AgentState::WaitingForUserInput { conversation: ConversationContext::default() });
    assert!(m.state().is_initial());
    assert!(!m.state().is_terminal());
    assert_eq!(m.context(), &cfg());
}

#[test]
fn waiting_user_input_to_calling_llm() {
    let state = AgentState::WaitingForUserInput { conversation: conv(history()) };
    let mut m = Loom::with_state(state, cfg());
    let action = m.handle_event(AgentEvent::UserInput(Message::user("hello")));

    let expected = with(history(), [Message::user("hello")]);
    assert_eq!(m.state(), &calling(0, expected.clone()));
    assert_eq!(action, AgentAction::SendLlmRequest(request(expected, 0)));
    // The request shares the conversation instead of copying it.
    let AgentAction::SendLlmRequest(req) = action else { unreachable!() };
    assert!(Arc::ptr_eq(&req.messages, &m.state().conversation().unwrap().shared()));
}

#[test]
fn user_input_uses_the_configured_token_budget() {
    let config = AgentConfig { max_tokens: 123, ..cfg() };
    let mut m = Loom::new(config);
    let action = m.handle_event(AgentEvent::UserInput(Message::user("hi")));
    assert_eq!(
        action,
        AgentAction::SendLlmRequest(LlmRequest {
            messages: Arc::new(vec![Message::user("hi")]),
            max_tokens: 123,
            attempt: 0,
        })
    );
}

// ---------------------------------------------------------- CallingLlm rows

#[test]
fn calling_llm_text_delta_stays_and_displays() {
    let mut m = Loom::with_state(calling(1, history()), cfg());
    let action = m.handle_event(AgentEvent::LlmEvent(StreamEvent::TextDelta("Hel".to_owned())));
    assert_eq!(action, AgentAction::DisplayMessage("Hel".to_owned()));
    // Deltas are shown, not recorded: the conversation is untouched.
    assert_eq!(m.state(), &calling(1, history()));
}

#[test]
fn calling_llm_tool_call_delta_stays_and_waits() {
    let mut m = Loom::with_state(calling(2, history()), cfg());
    let action = m.handle_event(AgentEvent::LlmEvent(StreamEvent::ToolCallDelta {
        index: 0,
        id: Some("c1".to_owned()),
        name: Some("read_file".to_owned()),
        arguments_fragment: "{\"pa".to_owned(),
    }));
    assert_eq!(action, AgentAction::WaitForInput);
    assert_eq!(m.state(), &calling(2, history()));
}

/// A reasoning model streams its thoughts unasked: an expected event,
/// taken in place, not reported as one no row accepts.
#[test]
fn calling_llm_reasoning_delta_stays_and_waits() {
    let mut m = Loom::with_state(calling(1, history()), cfg());
    let mut rec = Recorder::default();
    let delta = AgentEvent::LlmEvent(StreamEvent::ReasoningDelta("the user wants".to_owned()));
    assert_eq!(m.handle_event_with(delta, &mut rec), AgentAction::WaitForInput);
    assert_eq!(rec.unhandled, Vec::new(), "a reasoning delta was refused");
    assert_eq!(rec.hop_names(), vec![("CallingLlm", Some("LlmEvent"), "CallingLlm", Some("WaitForInput"))]);
    assert_eq!(m.state(), &calling(1, history()));
}

#[test]
fn processing_text_only_waits() {
    // CallingLlm + Completed -> ProcessingLlmResponse -> WaitingForUserInput.
    let mut m = Loom::with_state(calling(1, history()), cfg());
    let action = m.handle_event(AgentEvent::LlmEvent(agent_fsm_examples::loom::reply("all done", Vec::new())));
    assert_eq!(action, AgentAction::WaitForInput);
    assert_eq!(
        m.state(),
        &AgentState::WaitingForUserInput { conversation: conv(with(history(), [assistant("all done", Vec::new())])) }
    );
}

#[test]
fn processing_with_tool_calls_executes_tools() {
    // CallingLlm + Completed -> ProcessingLlmResponse -> ExecutingTools.
    let calls = vec![call("a", "read_file"), call("b", "edit_file")];
    let mut m = Loom::with_state(calling(0, history()), cfg());
    let action =
        m.handle_event(AgentEvent::LlmEvent(agent_fsm_examples::loom::reply("let me look".to_owned(), calls.clone())));
    assert_eq!(action, AgentAction::ExecuteTools(calls.clone()));
    assert_eq!(
        m.state(),
        &executing(Executions::pending(&calls), with(history(), [assistant("let me look", calls.clone())]),)
    );
    let AgentState::ExecutingTools { executions, .. } = m.state() else { unreachable!() };
    assert_eq!(executions.pending_count(), 2);
    assert!(
        executions.statuses().iter().zip(&calls).all(|(s, c)| *s == ToolExecutionStatus::Pending { call: c.clone() })
    );
}

#[test]
fn a_reply_that_repeats_a_call_id_runs_nothing_and_is_not_recorded() {
    let calls = vec![call("a", "read_file"), call("a", "edit_file")];
    let mut m = Loom::with_state(calling(0, history()), cfg());
    let action = m.handle_event(AgentEvent::LlmEvent(agent_fsm_examples::loom::reply("let me look".to_owned(), calls)));
    assert_eq!(action, AgentAction::DisplayError("the model repeated the tool call id `a`; no tool ran".to_owned()));
    assert_eq!(m.state(), &AgentState::WaitingForUserInput { conversation: conv(history()) });
}

#[test]
fn calling_llm_error_below_max_goes_to_error_and_schedules_retry() {
    // max_retries = 3 counts attempts: after the 1st and 2nd failures a
    // retry is scheduled, numbered by the attempt about to be made.
    for retries in [0, 1] {
        let mut m = Loom::with_state(calling(retries, history()), cfg());
        let action = m.handle_event(AgentEvent::LlmFailed(llm_error("503")));
        assert_eq!(action, AgentAction::ScheduleRetry { attempt: retries + 1, retry_after: None });
        assert_eq!(
            m.state(),
            &AgentState::Error {
                error: AgentError::Llm(llm_error("503")),
                retries: retries + 1,
                origin: ErrorOrigin::Llm,
                conversation: conv(history()),
            }
        );
    }
}

#[test]
fn calling_llm_error_at_max_returns_to_waiting_with_display_error() {
    // The third failed attempt (retries = 2 before it) is the last one.
    let mut m = Loom::with_state(calling(2, history()), cfg());
    let action = m.handle_event(AgentEvent::LlmFailed(llm_error("503")));
    assert_eq!(action, AgentAction::DisplayError("llm call failed: server error 503: 503".to_owned()));
    assert_eq!(m.state(), &AgentState::WaitingForUserInput { conversation: conv(history()) });
}

#[test]
fn calling_llm_error_with_max_retries_one_gives_up_at_once() {
    for max_retries in [0, 1] {
        let config = AgentConfig { max_retries, ..cfg() };
        let mut m = Loom::with_state(calling(0, history()), config);
        let action = m.handle_event(AgentEvent::LlmFailed(llm_error("down")));
        assert_eq!(action, AgentAction::DisplayError("llm call failed: server error 503: down".to_owned()));
        assert_eq!(m.state(), &AgentState::WaitingForUserInput { conversation: conv(history()) });
    }
}

#[test]
fn an_error_a_retry_cannot_help_is_not_retried() {
    for kind in [ErrorKind::Auth, ErrorKind::BadRequest, ErrorKind::ContextTooLong, ErrorKind::QuotaExceeded] {
        let mut m = Loom::with_state(calling(0, history()), cfg());
        let error = ProviderError::new(kind.clone(), "no");
        let action = m.handle_event(AgentEvent::LlmFailed(error.clone()));
        assert_eq!(action, AgentAction::DisplayError(format!("llm call failed: {error}")), "{kind:?}");
        assert_eq!(m.state(), &AgentState::WaitingForUserInput { conversation: conv(history()) });
    }
}

#[test]
fn a_retry_carries_the_servers_wait() {
    let wait = Some(std::time::Duration::from_secs(7));
    for kind in [
        ErrorKind::RateLimited { retry_after: wait },
        ErrorKind::Overloaded { retry_after: wait },
        ErrorKind::ServerError { status: 503, retry_after: wait },
    ] {
        let mut m = Loom::with_state(calling(1, history()), cfg());
        let action = m.handle_event(AgentEvent::LlmFailed(ProviderError::new(kind, "busy")));
        assert_eq!(action, AgentAction::ScheduleRetry { attempt: 2, retry_after: wait });
    }
    let mut m = Loom::with_state(calling(0, history()), cfg());
    let dropped = ProviderError::new(ErrorKind::ConnectionDropped, "eof");
    assert_eq!(
        m.handle_event(AgentEvent::LlmFailed(dropped)),
        AgentAction::ScheduleRetry { attempt: 1, retry_after: None }
    );
}

#[test]
fn max_retries_counts_attempts_first_included() {
    // Default 3: the request is sent three times (attempts 0, 1, 2), then
    // the error is shown.
    let mut m = Loom::new(cfg());
    let mut sent = Vec::new();
    let mut scheduled = Vec::new();
    let action = m.handle_event(AgentEvent::UserInput(Message::user("q")));
    let AgentAction::SendLlmRequest(req) = action else { panic!("expected SendLlmRequest, got {action:?}") };
    sent.push(req.attempt);
    let last = loop {
        let action = m.handle_event(AgentEvent::LlmFailed(llm_error("x")));
        match action {
            AgentAction::ScheduleRetry { attempt, .. } => {
                scheduled.push(attempt);
                match m.handle_event(AgentEvent::RetryTimeoutFired) {
                    AgentAction::SendLlmRequest(req) => sent.push(req.attempt),
                    other => panic!("expected SendLlmRequest, got {other:?}"),
                }
            }
            other => break other,
        }
    };
    assert_eq!(sent, vec![0, 1, 2]);
    assert_eq!(scheduled, vec![1, 2]);
    assert_eq!(last, AgentAction::DisplayError("llm call failed: server error 503: x".to_owned()));
    assert_eq!(m.state(), &AgentState::WaitingForUserInput { conversation: conv(vec![Message::user("q")]) });
}
