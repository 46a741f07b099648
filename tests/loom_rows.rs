//! One test per row of the Loom transition table (and per guard branch),
//! plus the tool-tracking, conversation and introspection behaviour the
//! module docs of `src/loom.rs` promise.
//!
//! States are built directly with `Loom::with_state` so each test looks at
//! exactly one step; every test checks the new state with all its data and
//! the exact action.

use std::sync::Arc;

use agent_fsm::llm::ErrorKind;
use agent_fsm::{Recorder, Status, Unhandled, UnhandledReason};
use agent_fsm_examples::loom::machine::{EventKind, StateKind};
use agent_fsm_examples::loom::{
    AgentAction, AgentConfig, AgentError, AgentEvent, AgentState, AssistantMessage, CompletedToolInfo,
    ConversationContext, ErrorOrigin, Executions, LlmRequest, Loom, Message, ProviderError, StreamEvent, ToolCall,
    ToolError, ToolExecutionOutcome, ToolExecutionStatus, ToolProgress, ToolProgressEvent,
};
use serde_json::json;

// ---------------------------------------------------------------- helpers

fn cfg() -> AgentConfig {
    AgentConfig::default()
}

/// A short conversation that already has one exchange in it.
fn history() -> Vec<Message> {
    vec![Message::user("earlier question"), assistant("earlier answer", Vec::new())]
}

fn conv(messages: Vec<Message>) -> ConversationContext {
    ConversationContext::from_messages(messages)
}

fn with(mut messages: Vec<Message>, more: impl IntoIterator<Item = Message>) -> Vec<Message> {
    messages.extend(more);
    messages
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: json!({ "path": format!("src/{id}.rs") }) }
}

fn success(id: &str, output: serde_json::Value) -> ToolExecutionOutcome {
    ToolExecutionOutcome::Success { call_id: id.to_owned(), output }
}

fn failure(id: &str, message: &str) -> ToolExecutionOutcome {
    ToolExecutionOutcome::Error { call_id: id.to_owned(), error: ToolError { message: message.to_owned() } }
}

fn completed(id: &str, outcome: ToolExecutionOutcome) -> AgentEvent {
    AgentEvent::ToolCompleted { call_id: id.to_owned(), outcome }
}

fn progress(id: &str, fraction: f32, message: &str) -> AgentEvent {
    AgentEvent::ToolProgress(ToolProgressEvent {
        call_id: id.to_owned(),
        progress: ToolProgress { fraction: Some(fraction), message: Some(message.to_owned()) },
    })
}

fn llm_error(message: &str) -> ProviderError {
    ProviderError::new(ErrorKind::ServerError { status: 503, retry_after: None }, message)
}

fn assistant(text: &str, tool_calls: Vec<ToolCall>) -> Message {
    Message::Assistant(AssistantMessage { text: text.to_owned(), tool_calls })
}

fn request(messages: Vec<Message>, attempt: u32) -> LlmRequest {
    LlmRequest { messages: Arc::new(messages), max_tokens: cfg().max_tokens, attempt }
}

fn calling(retries: u32, messages: Vec<Message>) -> AgentState {
    AgentState::CallingLlm { retries, conversation: conv(messages) }
}

fn executing(executions: Executions, messages: Vec<Message>) -> AgentState {
    AgentState::ExecutingTools { executions, conversation: conv(messages) }
}

fn llm_failed(retries: u32, origin: ErrorOrigin, message: &str) -> AgentState {
    AgentState::Error { error: AgentError::Llm(llm_error(message)), retries, origin, conversation: conv(history()) }
}

fn shutdown_from(state: AgentState) {
    let mut m = Loom::with_state(state, cfg());
    // A transient state resolves in `with_state`; shutdown leaves from there.
    let from = m.state().name();
    let mut rec = Recorder::default();
    let action = m.handle_event_with(AgentEvent::ShutdownRequested, &mut rec);
    assert_eq!(action, AgentAction::Shutdown);
    assert_eq!(m.state(), &AgentState::ShuttingDown);
    assert!(m.state().is_terminal());
    assert_eq!(m.state().conversation(), None);
    assert_eq!(rec.unhandled, Vec::new());
    assert_eq!(rec.hop_names(), vec![(from, Some("ShutdownRequested"), "ShuttingDown", Some("Shutdown"))]);
}

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

// ------------------------------------------------------ ExecutingTools rows

#[test]
fn tool_completed_some_pending_stays() {
    let calls = vec![call("a", "read_file"), call("b", "edit_file"), call("c", "grep")];
    let mut m = Loom::with_state(executing(Executions::pending(&calls), history()), cfg());
    let action = m.handle_event(completed("b", success("b", json!("patched"))));
    assert_eq!(action, AgentAction::WaitForInput);

    let mut expected = Executions::pending(&calls);
    expected.complete("b", success("b", json!("patched")));
    // Nothing joins the conversation until every call is done.
    assert_eq!(m.state(), &executing(expected.clone(), history()));
    assert_eq!(
        expected.statuses()[1],
        ToolExecutionStatus::Completed { call: calls[1].clone(), outcome: success("b", json!("patched")) }
    );
    assert_eq!(expected.pending_count(), 2);
}

#[test]
fn tool_completed_all_done_mutating_runs_hook() {
    let calls = vec![call("a", "read_file"), call("b", "edit_file")];
    let mut executions = Executions::pending(&calls);
    executions.complete("a", success("a", json!("fn main() {}")));
    let mut m = Loom::with_state(executing(executions, history()), cfg());
    let action = m.handle_event(completed("b", success("b", json!({ "lines": 3 }))));

    let messages =
        with(history(), [Message::tool_result("a", "fn main() {}"), Message::tool_result("b", "{\"lines\":3}")]);
    let tools = vec![
        CompletedToolInfo { tool_name: "read_file".to_owned(), succeeded: true },
        CompletedToolInfo { tool_name: "edit_file".to_owned(), succeeded: true },
    ];
    assert_eq!(action, AgentAction::RunPostToolsHook { completed_tools: tools.clone() });
    assert_eq!(
        m.state(),
        &AgentState::PostToolsHook {
            pending_llm_request: request(messages.clone(), 0),
            completed_tools: tools,
            conversation: conv(messages),
        }
    );
}

#[test]
fn tool_completed_all_done_mutating_earlier_in_round_runs_hook() {
    // The mutating tool finished first; the last completion is read-only.
    let calls = vec![call("a", "bash"), call("b", "read_file")];
    let mut executions = Executions::pending(&calls);
    executions.complete("a", success("a", json!("ok")));
    let mut m = Loom::with_state(executing(executions, history()), cfg());
    let action = m.handle_event(completed("b", failure("b", "not found")));

    let messages = with(history(), [Message::tool_result("a", "ok"), Message::tool_error("b", "error: not found")]);
    let tools = vec![
        CompletedToolInfo { tool_name: "bash".to_owned(), succeeded: true },
        CompletedToolInfo { tool_name: "read_file".to_owned(), succeeded: false },
    ];
    assert_eq!(action, AgentAction::RunPostToolsHook { completed_tools: tools.clone() });
    assert_eq!(
        m.state(),
        &AgentState::PostToolsHook {
            pending_llm_request: request(messages.clone(), 0),
            completed_tools: tools,
            conversation: conv(messages),
        }
    );
}

#[test]
fn tool_completed_all_done_read_only_calls_llm() {
    let calls = vec![call("a", "read_file"), call("b", "grep")];
    let mut executions = Executions::pending(&calls);
    executions.complete("a", success("a", json!("text")));
    let mut m = Loom::with_state(executing(executions, history()), cfg());
    let action = m.handle_event(completed("b", success("b", json!(["x.rs:1"]))));

    let messages = with(history(), [Message::tool_result("a", "text"), Message::tool_result("b", "[\"x.rs:1\"]")]);
    assert_eq!(action, AgentAction::SendLlmRequest(request(messages.clone(), 0)));
    assert_eq!(m.state(), &calling(0, messages));
}

#[test]
fn tool_completed_all_done_failed_mutating_tool_calls_llm() {
    // A mutating tool that failed changed nothing: no hook.
    let calls = vec![call("a", "edit_file")];
    let mut m = Loom::with_state(executing(Executions::pending(&calls), history()), cfg());
    let action = m.handle_event(completed("a", failure("a", "permission denied")));

    let messages = with(history(), [Message::tool_error("a", "error: permission denied")]);
    assert_eq!(action, AgentAction::SendLlmRequest(request(messages.clone(), 0)));
    assert_eq!(m.state(), &calling(0, messages));
}

#[test]
fn tool_completed_mutating_tools_follow_the_config() {
    // With no mutating tools configured, `edit_file` is just another tool.
    let config = AgentConfig { mutating_tools: Vec::new(), ..cfg() };
    let calls = vec![call("a", "edit_file")];
    let mut m = Loom::with_state(executing(Executions::pending(&calls), history()), config);
    let action = m.handle_event(completed("a", success("a", json!("done"))));
    let messages = with(history(), [Message::tool_result("a", "done")]);
    assert_eq!(action, AgentAction::SendLlmRequest(request(messages.clone(), 0)));
    assert_eq!(m.state(), &calling(0, messages));
}

#[test]
fn tool_progress_moves_a_call_from_pending_to_running() {
    let calls = vec![call("a", "bash"), call("b", "read_file")];
    let mut m = Loom::with_state(executing(Executions::pending(&calls), history()), cfg());

    let action = m.handle_event(progress("a", 0.25, "compiling"));
    assert_eq!(action, AgentAction::WaitForInput);
    let mut expected = Executions::pending(&calls);
    expected.progress("a", ToolProgress { fraction: Some(0.25), message: Some("compiling".to_owned()) });
    assert_eq!(m.state(), &executing(expected.clone(), history()));
    assert_eq!(
        expected.statuses(),
        &[
            ToolExecutionStatus::Running {
                call: calls[0].clone(),
                progress: ToolProgress { fraction: Some(0.25), message: Some("compiling".to_owned()) },
            },
            ToolExecutionStatus::Pending { call: calls[1].clone() },
        ]
    );

    // Later progress replaces the earlier one; the call stays Running.
    let action = m.handle_event(progress("a", 0.75, "linking"));
    assert_eq!(action, AgentAction::WaitForInput);
    let AgentState::ExecutingTools { executions, .. } = m.state() else {
        panic!("expected ExecutingTools, got {:?}", m.state())
    };
    assert_eq!(
        executions.statuses()[0],
        ToolExecutionStatus::Running {
            call: calls[0].clone(),
            progress: ToolProgress { fraction: Some(0.75), message: Some("linking".to_owned()) },
        }
    );

    // A running call completes like a pending one.
    let action = m.handle_event(completed("a", success("a", json!("built"))));
    assert_eq!(action, AgentAction::WaitForInput);
    let AgentState::ExecutingTools { executions, .. } = m.state() else {
        panic!("expected ExecutingTools, got {:?}", m.state())
    };
    assert_eq!(
        executions.statuses()[0],
        ToolExecutionStatus::Completed { call: calls[0].clone(), outcome: success("a", json!("built")) }
    );
    assert_eq!(executions.pending_count(), 1);
}

#[test]
fn tool_progress_for_unknown_id_displays_error_and_keeps_executions() {
    let calls = vec![call("a", "bash")];
    let before = executing(Executions::pending(&calls), history());
    let mut m = Loom::with_state(before.clone(), cfg());
    let mut rec = Recorder::default();
    let action = m.handle_event_with(progress("zz", 0.5, "?"), &mut rec);
    assert_eq!(action, AgentAction::DisplayError("progress for unknown or finished call `zz`".to_owned()));
    assert_eq!(m.state(), &before);
    assert_eq!(rec.hop_names(), vec![("ExecutingTools", Some("ToolProgress"), "ExecutingTools", Some("DisplayError"))]);
}

#[test]
fn tool_progress_for_completed_id_displays_error_and_keeps_executions() {
    let calls = vec![call("a", "bash"), call("b", "grep")];
    let mut executions = Executions::pending(&calls);
    executions.complete("a", success("a", json!("ok")));
    let before = executing(executions, history());
    let mut m = Loom::with_state(before.clone(), cfg());
    let action = m.handle_event(progress("a", 1.0, "late"));
    assert_eq!(action, AgentAction::DisplayError("progress for unknown or finished call `a`".to_owned()));
    assert_eq!(m.state(), &before);
}

#[test]
fn tool_result_for_unknown_id_displays_error_and_keeps_executions() {
    let calls = vec![call("a", "bash"), call("b", "grep")];
    let before = executing(Executions::pending(&calls), history());
    let mut m = Loom::with_state(before.clone(), cfg());
    let mut rec = Recorder::default();
    let action = m.handle_event_with(completed("zz", success("zz", json!("?"))), &mut rec);
    assert_eq!(action, AgentAction::DisplayError("tool result for unknown or finished call `zz`".to_owned()));
    assert_eq!(m.state(), &before);
    assert_eq!(rec.unhandled, Vec::new());
    assert_eq!(
        rec.hop_names(),
        vec![("ExecutingTools", Some("ToolCompleted"), "ExecutingTools", Some("DisplayError"))]
    );

    // Even when it is the only call left, an unknown id finishes nothing.
    let mut executions = Executions::pending(&calls);
    executions.complete("a", success("a", json!("ok")));
    let before = executing(executions, history());
    let mut m = Loom::with_state(before.clone(), cfg());
    let action = m.handle_event(completed("zz", success("zz", json!("?"))));
    assert_eq!(action, AgentAction::DisplayError("tool result for unknown or finished call `zz`".to_owned()));
    assert_eq!(m.state(), &before);
}

#[test]
fn tool_result_for_already_completed_id_displays_error_and_keeps_executions() {
    let calls = vec![call("a", "bash"), call("b", "grep")];
    let mut m = Loom::with_state(executing(Executions::pending(&calls), history()), cfg());
    assert_eq!(m.handle_event(completed("a", success("a", json!("first")))), AgentAction::WaitForInput);
    let before = m.state().clone();

    let action = m.handle_event(completed("a", success("a", json!("second"))));
    assert_eq!(action, AgentAction::DisplayError("tool result for unknown or finished call `a`".to_owned()));
    assert_eq!(m.state(), &before);
    let AgentState::ExecutingTools { executions, .. } = m.state() else {
        panic!("expected ExecutingTools, got {:?}", m.state())
    };
    // The first result stands.
    assert_eq!(
        executions.statuses()[0],
        ToolExecutionStatus::Completed { call: calls[0].clone(), outcome: success("a", json!("first")) }
    );
    assert_eq!(executions.pending_count(), 1);
}

#[test]
fn tool_results_join_the_conversation_in_call_order() {
    let calls = vec![call("a", "read_file"), call("b", "grep"), call("c", "read_file")];
    let mut m = Loom::with_state(executing(Executions::pending(&calls), history()), cfg());
    assert_eq!(m.handle_event(completed("c", success("c", json!("C")))), AgentAction::WaitForInput);
    assert_eq!(m.handle_event(completed("a", failure("a", "boom"))), AgentAction::WaitForInput);
    let action = m.handle_event(completed("b", success("b", json!("B"))));

    let messages = with(
        history(),
        [Message::tool_error("a", "error: boom"), Message::tool_result("b", "B"), Message::tool_result("c", "C")],
    );
    assert_eq!(action, AgentAction::SendLlmRequest(request(messages.clone(), 0)));
    assert_eq!(m.state(), &calling(0, messages));
}

#[test]
fn conversation_gets_user_then_assistant_message() {
    let mut m = Loom::new(cfg());
    m.handle_event(AgentEvent::UserInput(Message::user("hi")));
    assert_eq!(m.state().conversation().unwrap().messages(), &[Message::user("hi")]);
    m.handle_event(AgentEvent::LlmEvent(StreamEvent::TextDelta("hel".to_owned())));
    m.handle_event(AgentEvent::LlmEvent(StreamEvent::TextDelta("lo".to_owned())));
    assert_eq!(m.state().conversation().unwrap().messages(), &[Message::user("hi")]);
    let action = m.handle_event(AgentEvent::LlmEvent(agent_fsm_examples::loom::reply("hello", Vec::new())));
    assert_eq!(action, AgentAction::WaitForInput);
    assert_eq!(
        m.state(),
        &AgentState::WaitingForUserInput {
            conversation: conv(vec![Message::user("hi"), assistant("hello", Vec::new())])
        }
    );
}

#[test]
fn full_tool_round_trip_from_new() {
    let mut m = Loom::new(cfg());
    let calls = vec![call("a", "edit_file"), call("b", "read_file")];
    let events = vec![
        AgentEvent::UserInput(Message::user("fix it")),
        AgentEvent::LlmEvent(agent_fsm_examples::loom::reply(String::new(), calls.clone())),
        progress("b", 0.5, "reading"),
        completed("b", success("b", json!("src"))),
        completed("a", success("a", json!("edited"))),
        AgentEvent::PostToolsHookCompleted { action_taken: true },
        AgentEvent::LlmEvent(agent_fsm_examples::loom::reply("fixed", Vec::new())),
    ];
    let actions: Vec<AgentAction> = events.into_iter().map(|e| m.handle_event(e)).collect();

    let m1 = vec![Message::user("fix it")];
    let m2 = with(m1.clone(), [assistant("", calls.clone())]);
    let m3 = with(m2.clone(), [Message::tool_result("a", "edited"), Message::tool_result("b", "src")]);
    let m4 = with(m3.clone(), [assistant("fixed", Vec::new())]);
    let tools = vec![
        CompletedToolInfo { tool_name: "edit_file".to_owned(), succeeded: true },
        CompletedToolInfo { tool_name: "read_file".to_owned(), succeeded: true },
    ];
    assert_eq!(
        actions,
        vec![
            AgentAction::SendLlmRequest(request(m1, 0)),
            AgentAction::ExecuteTools(calls),
            AgentAction::WaitForInput,
            AgentAction::WaitForInput,
            AgentAction::RunPostToolsHook { completed_tools: tools },
            AgentAction::SendLlmRequest(request(m3, 0)),
            AgentAction::WaitForInput,
        ]
    );
    assert_eq!(m.state(), &AgentState::WaitingForUserInput { conversation: conv(m4) });
}

// ------------------------------------------------------- PostToolsHook rows

#[test]
fn post_tools_hook_completed_calls_llm() {
    for action_taken in [true, false] {
        let messages = with(history(), [Message::tool_result("a", "ok")]);
        let conversation = conv(messages.clone());
        let pending = LlmRequest { messages: conversation.shared(), max_tokens: 77, attempt: 0 };
        let state = AgentState::PostToolsHook {
            pending_llm_request: pending.clone(),
            completed_tools: vec![CompletedToolInfo { tool_name: "bash".to_owned(), succeeded: true }],
            conversation,
        };
        let mut m = Loom::with_state(state, cfg());
        let action = m.handle_event(AgentEvent::PostToolsHookCompleted { action_taken });
        // The stored request is sent as it was (its own token budget).
        assert_eq!(action, AgentAction::SendLlmRequest(pending.clone()));
        let AgentAction::SendLlmRequest(sent) = &action else { unreachable!() };
        assert!(Arc::ptr_eq(&sent.messages, &pending.messages));
        assert_eq!(m.state(), &calling(0, messages));
    }
}

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
        response: AssistantMessage { text: "half-processed".into(), tool_calls: Vec::new() },
        conversation: conv(history()),
    });
}

#[test]
fn resumed_in_transient_state_never_rests_there() {
    let mut m = Loom::with_state(
        AgentState::ProcessingLlmResponse {
            response: AssistantMessage { text: "half-processed".into(), tool_calls: Vec::new() },
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
        (
            "CallingLlm",
            Some("LlmEvent"),
            Some("repeated_id(&message.tool_calls).is_some()"),
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
            Some("!executions.is_pending(call_id)"),
            "ExecutingTools",
            Some("DisplayError"),
        ),
        (
            "ExecutingTools",
            Some("ToolCompleted"),
            Some("executions.pending_count() > 1"),
            "ExecutingTools",
            Some("WaitForInput"),
        ),
        (
            "ExecutingTools",
            Some("ToolCompleted"),
            Some("executions.mutates_with(call_id, outcome, &ctx.mutating_tools)"),
            "PostToolsHook",
            Some("RunPostToolsHook"),
        ),
        ("ExecutingTools", Some("ToolCompleted"), None, "CallingLlm", Some("SendLlmRequest")),
        (
            "ExecutingTools",
            Some("ToolProgress"),
            Some("executions.is_pending(&report.call_id)"),
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
        executing(Executions::pending(&[call("a", "bash")]), history()),
        hook,
        llm_failed(1, ErrorOrigin::Llm, "overloaded"),
    ] {
        let mut m = Loom::with_state(state, cfg());
        let action = m.handle_event(AgentEvent::Interrupted { cause: "user pressed stop".into() });
        assert_eq!(action, AgentAction::DisplayError("interrupted: user pressed stop".into()));
        assert_eq!(m.state(), &AgentState::WaitingForUserInput { conversation: conv(history()) });
    }
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
