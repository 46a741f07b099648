//! The Shadow runtime table against its reference, replies and edges:
//! permission replies matched by the request ids the machine mints (never
//! the model's `tool_use_id`s), remembered answers, the `Error` state entered
//! and left, input mid-turn handed back, stray results refused, shutdown
//! from every state, replies that repeat a call id refused, and the
//! snake_case JSON of every state.

#[path = "support/shadow_table.rs"]
mod shadow_table;

use agent_fsm::llm::ErrorKind;
use agent_fsm_examples::shadow::{
    Message, NOT_RUN, Permission, ProviderError, Shadow, ShadowAction, ShadowEvent, ShadowState,
};
use serde_json::json;
use shadow_table::*;

// -------------------------------------------------------------- permission

#[test]
fn a_permission_reply_for_another_request_is_rejected() {
    let bash = call("t1", "bash");
    let mut s = Session::new(ctx());
    s.send(input("go"));
    s.send(tools_reply(std::slice::from_ref(&bash)));
    let before_state = s.state().clone();
    let before_ctx = s.ctx().clone();
    // The call's own id is not the request's: the model chose it.
    let action = s.send(permission("t1", true, true));
    assert_eq!(
        action,
        ShadowAction::Reject(format!("no permission request `t1` pending (waiting for `{}`)", pid(0, &bash)))
    );
    assert_eq!(s.state(), &before_state);
    assert_eq!(s.ctx(), &before_ctx, "the rejected reply was not remembered either");
    // The right id still works.
    assert_eq!(s.send(permission(&pid(0, &bash), true, false)), ShadowAction::ExecuteTool(bash));
}

#[test]
fn remember_stores_the_rule_and_the_next_call_skips_the_permission_wait() {
    let mut s = Session::new(ctx());
    s.send(input("go"));
    s.send(tools_reply(&[call("t1", "bash")]));
    s.send(permission(&pid(0, &call("t1", "bash")), true, true));
    assert_eq!(s.ctx().permissions.get("bash"), Some(&Permission::Allow));
    s.send(tool_ok("t1", "ok"));
    // The model asks for the same tool again: no question this time.
    assert_eq!(s.send(tools_reply(&[call("t2", "bash")])), ShadowAction::ExecuteTool(call("t2", "bash")));
    assert_eq!(s.state(), &executing("t2", "bash"));
    assert_eq!(
        s.rec.state_names(),
        vec!["Idle", "Processing", "WaitingForPermission", "ExecutingTool", "Processing", "ExecutingTool"]
    );
}

#[test]
fn a_denial_ends_the_task_and_a_remembered_denial_answers_without_asking() {
    let mut s = Session::new(ctx());
    s.send(input("go"));
    s.send(tools_reply(&[call("t1", "bash"), call("t2", "read_file")]));
    let denial = permission(&pid(0, &call("t1", "bash")), false, true);
    assert_eq!(s.send(denial), ShadowAction::PermissionDenied("bash".to_owned()));
    assert_eq!(s.state(), &ShadowState::Done);
    assert_eq!(s.ctx().permissions.get("bash"), Some(&Permission::Deny));
    assert_eq!(
        s.ctx().conversation[2..],
        results(vec![err("t1", "Permission denied by the user for `bash`"), err("t2", NOT_RUN)])
    );
    s.send(input("try again"));
    let action = s.send(tools_reply(&[call("t3", "bash")]));
    assert_eq!(action, call_with(vec![err("t3", "Permission denied by rule for `bash`")]));
    assert_eq!(
        s.rec.state_names(),
        vec!["Idle", "Processing", "WaitingForPermission", "Done", "Processing", "Processing"]
    );
}

// -------------------------------------------------------------------- Error

#[test]
fn error_is_entered_when_the_llm_fails_and_left_on_new_input() {
    let mut s = Session::new(ctx());
    s.send(input("hi"));
    s.send(text_delta("par"));
    let failure = ProviderError::new(ErrorKind::Auth, "invalid x-api-key").with_status(401);
    let action = s.send(ShadowEvent::LlmFailed(failure));
    let message = "LLM call failed: not authorized: invalid x-api-key";
    assert_eq!(action, ShadowAction::ReportError(message.to_owned()));
    assert_eq!(s.state(), &ShadowState::Error { message: message.to_owned() });
    assert_eq!(s.ctx().partial_text, "");
    assert_eq!(s.send(input("again")), call_user("again"));
    assert_eq!(s.send(text_reply("hello")), ShadowAction::Respond("hello".to_owned()));
    assert_eq!(s.rec.state_names(), vec!["Idle", "Processing", "Processing", "Error", "Processing", "Idle"]);
}

#[test]
fn error_is_entered_when_a_tool_fails() {
    let mut s = running(&[call("a", "bash"), call("b", "bash")]);
    let action = s.send(tool_err("a", "command not found"));
    let message = "tool `bash` failed: command not found";
    assert_eq!(action, ShadowAction::ReportError(message.to_owned()));
    assert_eq!(s.state(), &ShadowState::Error { message: message.to_owned() });
    assert_eq!(s.ctx().conversation[2..], results(vec![err("a", message), err("b", NOT_RUN)]));
    assert_eq!(s.send(input("fix it")), call_user("fix it"));
    assert_eq!(s.state(), &ShadowState::Processing);
}

#[test]
fn a_subagent_failure_becomes_the_parents_error() {
    let mut s = running(&[call("t1", "Task")]);
    s.send(ShadowEvent::SubAgentRequested { tool_use_id: "t1".to_owned(), prompt: "dig".to_owned() });
    let action = s
        .send(ShadowEvent::SubAgentFinished { session_id: "s1/t1".to_owned(), result: Err("rate limited".to_owned()) });
    let message = "subagent `s1/t1` failed: rate limited";
    assert_eq!(action, ShadowAction::ReportError(message.to_owned()));
    assert_eq!(s.state(), &ShadowState::Error { message: message.to_owned() });
    assert_eq!(s.ctx().conversation[2..], [Message::tool_error("t1", message)]);
}

#[test]
fn done_takes_new_input() {
    let mut s = Session::at(ShadowState::Done, ctx());
    assert_eq!(s.send(input("next task")), call_user("next task"));
    assert_eq!(s.rec.state_names(), vec!["Done", "Processing"]);
}

// ------------------------------------------------------ stray and mid-turn

#[test]
fn input_mid_turn_is_handed_back_not_applied_or_dropped() {
    let busy = [
        ShadowState::Processing,
        waiting_permission(&call("t1", "bash"), "permission-0"),
        executing("t1", "bash"),
        ShadowState::WaitingForSubAgent { session_id: "s1/t1".to_owned() },
        ShadowState::WaitingForUserInput { request_id: "q1".to_owned() },
    ];
    for state in busy {
        let mut s = Session::at(state.clone(), ctx());
        assert_eq!(s.send(input("also do X")), ShadowAction::DeferInput("also do X".to_owned()), "in {state:?}");
        assert_eq!(s.state(), &state);
        assert_eq!(s.ctx(), &ctx());
    }
}

#[test]
fn results_and_answers_for_something_else_are_rejected() {
    let cases = [
        (executing("t1", "bash"), tool_ok("t2", "x"), "no tool call `t2` running (running `t1`)"),
        (
            executing("t1", "bash"),
            ShadowEvent::SubAgentRequested { tool_use_id: "t2".to_owned(), prompt: "p".to_owned() },
            "no tool call `t2` running (running `t1`)",
        ),
        (
            ShadowState::WaitingForSubAgent { session_id: "s1/t1".to_owned() },
            ShadowEvent::SubAgentFinished { session_id: "s1/t9".to_owned(), result: Ok("x".to_owned()) },
            "no subagent `s1/t9` awaited (awaiting `s1/t1`)",
        ),
        (
            ShadowState::WaitingForUserInput { request_id: "q1".to_owned() },
            ShadowEvent::QuestionAnswered { request_id: "q2".to_owned(), answers: Vec::new() },
            "no question `q2` pending (waiting for `q1`)",
        ),
    ];
    for (state, event, why) in cases {
        let mut s = Session::at(state.clone(), ctx());
        assert_eq!(s.send(event), ShadowAction::Reject(why.to_owned()));
        assert_eq!(s.state(), &state);
    }
}

#[test]
fn shutdown_from_every_state_ends_in_done() {
    let states = [
        ShadowState::Idle,
        ShadowState::Processing,
        waiting_permission(&call("t1", "bash"), "permission-0"),
        executing("t1", "bash"),
        ShadowState::WaitingForSubAgent { session_id: "s1/t1".to_owned() },
        ShadowState::WaitingForUserInput { request_id: "q1".to_owned() },
        ShadowState::Done,
        ShadowState::Error { message: "boom".to_owned() },
    ];
    for state in states {
        let mut s = Session::at(state, ctx());
        assert_eq!(s.send(ShadowEvent::Shutdown), ShadowAction::Stop);
        assert_eq!(s.state(), &ShadowState::Done);
    }
    // Mid-turn, the unanswered calls are answered.
    let mut s = running(&[call("a", "bash"), call("b", "bash")]);
    s.send(ShadowEvent::Shutdown);
    assert_eq!(s.ctx().conversation[2..], results(vec![err("a", NOT_RUN), err("b", NOT_RUN)]));
}

// ---------------------------------------------------------------- the wire

#[test]
fn every_state_serializes_in_snake_case() {
    let cases = [
        (ShadowState::Idle, json!({ "state": "idle" })),
        (ShadowState::Processing, json!({ "state": "processing" })),
        (
            waiting_permission(&call("t1", "bash"), "permission-0"),
            json!({
                "state": "waiting_for_permission",
                "data": { "tool_name": "bash", "tool_use_id": "t1", "input": { "arg": "t1" }, "request_id": "permission-0" }
            }),
        ),
        (
            executing("t1", "bash"),
            json!({ "state": "executing_tool", "data": { "tool_name": "bash", "tool_use_id": "t1" } }),
        ),
        (
            ShadowState::WaitingForSubAgent { session_id: "s1/t1".to_owned() },
            json!({ "state": "waiting_for_sub_agent", "data": { "session_id": "s1/t1" } }),
        ),
        (
            ShadowState::WaitingForUserInput { request_id: "q1".to_owned() },
            json!({ "state": "waiting_for_user_input", "data": { "request_id": "q1" } }),
        ),
        (ShadowState::Done, json!({ "state": "done" })),
        (ShadowState::Error { message: "boom".to_owned() }, json!({ "state": "error", "data": { "message": "boom" } })),
    ];
    assert_eq!(cases.len(), ShadowState::NAMES.len());
    for (state, expected) in cases {
        let value = serde_json::to_value(&state).expect("serializes");
        assert_eq!(value, expected);
        let back: ShadowState = serde_json::from_value(value).expect("deserializes");
        assert_eq!(back, state);
    }
}

#[test]
fn the_table_has_exactly_the_documented_states() {
    assert_eq!(
        ShadowState::NAMES,
        [
            "Idle",
            "Processing",
            "WaitingForPermission",
            "ExecutingTool",
            "WaitingForSubAgent",
            "WaitingForUserInput",
            "Done",
            "Error"
        ]
    );
    assert_eq!(Shadow::DESCRIPTION.initial().name, "Idle");
    assert!(Shadow::DESCRIPTION.states.iter().all(|s| !s.terminal && !s.transient));
}
