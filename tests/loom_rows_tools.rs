//! One test per row of the Loom transition table, the rows of
//! `ExecutingTools` and `PostToolsHook`: tool completion and progress, the
//! hook after mutating tools, results for unknown or finished calls, and
//! the conversation a tool round leaves, in call order. Each test looks at
//! exactly one step and checks the new state and the exact action.

#[path = "support/loom_rows.rs"]
mod loom_rows;

use std::sync::Arc;

use agent_fsm::Recorder;
use agent_fsm_examples::loom::{
    AgentAction, AgentConfig, AgentEvent, AgentState, CompletedToolInfo, Executions, LlmRequest, Loom, Message,
    StreamEvent, ToolExecutionStatus, ToolProgress,
};
use loom_rows::*;
use serde_json::json;

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

/// An interrupt that finds calls of the round still without results (a
/// driver that delivers it first, a tool left to finish through it) does
/// not leave them unanswered, nor drop the results already in: each call
/// gets a result, in call order, as providers require of the next request.
#[test]
fn interrupted_with_calls_pending_answers_every_call_in_order() {
    let calls = vec![call("a", "read_file"), call("b", "edit_file"), call("c", "grep")];
    let mut m = Loom::with_state(executing(Executions::pending(&calls), history()), cfg());
    m.handle_event(progress("c", 0.5, "half way"));
    m.handle_event(completed("b", success("b", json!("patched"))));
    let action = m.handle_event(AgentEvent::Interrupted { cause: "stop".into() });
    assert_eq!(action, AgentAction::DisplayError("interrupted: stop".into()));
    let messages = with(
        history(),
        [
            Message::tool_error("a", "error: interrupted: stop"),
            Message::tool_result("b", "patched"),
            Message::tool_error("c", "error: interrupted: stop"),
        ],
    );
    assert_eq!(m.state(), &AgentState::WaitingForUserInput { conversation: conv(messages.clone()) });
    // The late result of a call answered so is refused; the next request
    // carries every call's result once.
    assert_eq!(m.handle_event(completed("a", success("a", json!("late")))), AgentAction::WaitForInput);
    let action = m.handle_event(AgentEvent::UserInput(Message::user("go on")));
    let expected = with(messages, [Message::user("go on")]);
    assert_eq!(action, AgentAction::SendLlmRequest(request(expected, 0)));
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
