//! The Shadow runtime table against its reference, flows and interrupts:
//! every documented flow with its exact state sequence, several calls in one
//! reply, calls all denied by rule, and the documented interrupt outcome in
//! every state.

#[path = "support/shadow_table.rs"]
mod shadow_table;

use agent_fsm::Recorder;
use agent_fsm_examples::shadow::{
    INTERRUPTED, Message, Permission, ShadowAction, ShadowEvent, ShadowState, StreamEvent, ToolCall,
};
use serde_json::json;
use shadow_table::*;

// ------------------------------------------------------------------- flows

#[test]
fn flow_simple_text_response() {
    let mut s = Session::new(ctx());
    assert_eq!(s.send(input("hi")), call_user("hi"));
    assert_eq!(s.send(text_reply("hello")), ShadowAction::Respond("hello".to_owned()));
    assert_eq!(s.rec.state_names(), vec!["Idle", "Processing", "Idle"]);
    assert_eq!(s.ctx().conversation, vec![user("hi"), Message::assistant("hello")]);
}

#[test]
fn flow_tool_execution_with_permission() {
    let bash = call("t1", "bash");
    let mut s = Session::new(ctx());
    s.send(input("list files"));
    assert_eq!(s.send(tools_reply(std::slice::from_ref(&bash))), request_permission(&bash, &pid(0, &bash)));
    assert_eq!(s.state(), &waiting_permission(&bash, &pid(0, &bash)));
    assert_eq!(s.send(permission(&pid(0, &bash), true, false)), ShadowAction::ExecuteTool(bash.clone()));
    assert_eq!(s.state(), &executing("t1", "bash"));
    assert_eq!(s.send(tool_ok("t1", "a.rs b.rs")), call_with(vec![ok("t1", "a.rs b.rs")]));
    assert_eq!(s.send(text_reply("two files")), ShadowAction::Respond("two files".to_owned()));
    assert_eq!(
        s.rec.state_names(),
        vec!["Idle", "Processing", "WaitingForPermission", "ExecutingTool", "Processing", "Idle"]
    );
    // Not remembered: the next call asks again.
    assert_eq!(s.ctx().permissions.get("bash"), None);
}

#[test]
fn flow_multiple_tools() {
    let mut s = Session::new(ctx().with_rule("read_file", Permission::Allow));
    s.send(input("compare a and b"));
    assert_eq!(s.send(tools_reply(&[call("t1", "read_file")])), ShadowAction::ExecuteTool(call("t1", "read_file")));
    s.send(tool_ok("t1", "A"));
    assert_eq!(s.send(tools_reply(&[call("t2", "read_file")])), ShadowAction::ExecuteTool(call("t2", "read_file")));
    assert_eq!(s.send(tool_ok("t2", "B")), call_with(vec![ok("t2", "B")]));
    s.send(text_reply("they differ"));
    assert_eq!(
        s.rec.state_names(),
        vec!["Idle", "Processing", "ExecutingTool", "Processing", "ExecutingTool", "Processing", "Idle"]
    );
}

#[test]
fn flow_with_subagent() {
    let task = call("t1", "Task");
    let mut s = Session::new(ctx().with_rule("Task", Permission::Allow));
    s.send(input("research this"));
    assert_eq!(s.send(tools_reply(std::slice::from_ref(&task))), ShadowAction::ExecuteTool(task.clone()));
    let action =
        s.send(ShadowEvent::SubAgentRequested { tool_use_id: "t1".to_owned(), prompt: "find the docs".to_owned() });
    assert_eq!(
        action,
        ShadowAction::SpawnSubAgent { session_id: "s1/t1".to_owned(), prompt: "find the docs".to_owned() }
    );
    assert_eq!(s.state(), &ShadowState::WaitingForSubAgent { session_id: "s1/t1".to_owned() });
    let action =
        s.send(ShadowEvent::SubAgentFinished { session_id: "s1/t1".to_owned(), result: Ok("docs at /d".to_owned()) });
    assert_eq!(action, call_with(vec![ok("t1", "docs at /d")]));
    s.send(text_reply("found them"));
    assert_eq!(
        s.rec.state_names(),
        vec!["Idle", "Processing", "ExecutingTool", "WaitingForSubAgent", "Processing", "Idle"]
    );
}

#[test]
fn flow_with_questions() {
    let question = ToolCall {
        id: "q1".to_owned(),
        name: "AskUserQuestion".to_owned(),
        arguments: json!({ "questions": ["Which colour?"] }),
    };
    let mut s = Session::new(ctx());
    s.send(input("paint it"));
    let id = qid(0, &question);
    assert_eq!(
        s.send(tools_reply(&[question])),
        ShadowAction::AskUser { request_id: id.clone(), questions: json!({ "questions": ["Which colour?"] }) }
    );
    assert_eq!(s.state(), &ShadowState::WaitingForUserInput { request_id: id.clone() });
    let action = s.send(ShadowEvent::QuestionAnswered { request_id: id, answers: vec!["blue".to_owned()] });
    assert_eq!(action, call_with(vec![ok("q1", "blue")]));
    s.send(text_reply("painted blue"));
    assert_eq!(s.rec.state_names(), vec!["Idle", "Processing", "WaitingForUserInput", "Processing", "Idle"]);
}

#[test]
fn several_calls_in_one_reply_run_in_order_and_answer_together() {
    let ctx = ctx().with_rule("read_file", Permission::Allow).with_rule("rm", Permission::Deny);
    let question = call("q", "AskUserQuestion");
    let calls = [call("a", "read_file"), call("b", "bash"), call("r", "rm"), question.clone()];
    let mut s = Session::new(ctx);
    s.send(input("tidy up"));
    assert_eq!(s.send(tools_reply(&calls)), ShadowAction::ExecuteTool(call("a", "read_file")));
    let b = call("b", "bash");
    assert_eq!(s.send(tool_ok("a", "A")), request_permission(&b, &pid(0, &b)));
    assert_eq!(s.send(permission(&pid(0, &b), true, false)), ShadowAction::ExecuteTool(b.clone()));
    // `rm` is denied by rule on the way, without asking.
    assert_eq!(
        s.send(tool_ok("b", "B")),
        ShadowAction::AskUser { request_id: qid(1, &question), questions: question.arguments.clone() }
    );
    let results = vec![ok("a", "A"), ok("b", "B"), err("r", "Permission denied by rule for `rm`"), ok("q", "yes")];
    let action =
        s.send(ShadowEvent::QuestionAnswered { request_id: qid(1, &question), answers: vec!["yes".to_owned()] });
    assert_eq!(action, call_with(results));
    s.send(text_reply("tidy"));
    assert_eq!(
        s.rec.state_names(),
        vec![
            "Idle",
            "Processing",
            "ExecutingTool",
            "WaitingForPermission",
            "ExecutingTool",
            "WaitingForUserInput",
            "Processing",
            "Idle"
        ]
    );
}

#[test]
fn calls_all_denied_by_rule_go_straight_back_to_the_model() {
    let mut s = Session::new(ctx().with_rule("rm", Permission::Deny));
    s.send(input("delete it"));
    let action = s.send(tools_reply(&[call("r", "rm")]));
    assert_eq!(action, call_with(vec![err("r", "Permission denied by rule for `rm`")]));
    assert_eq!(s.rec.state_names(), vec!["Idle", "Processing", "Processing"]);
}

// ------------------------------------------------------ interrupt per state

#[test]
fn interrupt_in_idle_keeps_the_agent_idle() {
    let mut s = Session::new(ctx());
    assert_eq!(s.send(ShadowEvent::Interrupt), ShadowAction::NothingToInterrupt);
    assert_eq!(s.send(ShadowEvent::Interrupt), ShadowAction::NothingToInterrupt);
    assert_eq!(s.state(), &ShadowState::Idle);
    assert_eq!(s.rec.state_names(), vec!["Idle", "Idle", "Idle"]);
    // Still alive: input starts a turn.
    assert_eq!(s.send(input("hi")), call_user("hi"));
}

#[test]
fn interrupt_in_processing_keeps_partial_text_and_drops_tool_calls() {
    let mut s = Session::new(ctx());
    s.send(input("explain"));
    assert_eq!(s.send(text_delta("Hel")), ShadowAction::EmitText("Hel".to_owned()));
    s.send(text_delta("lo"));
    let partial = StreamEvent::ToolCallDelta {
        index: 0,
        id: Some("t1".to_owned()),
        name: Some("bash".to_owned()),
        arguments_fragment: "{\"cmd\":".to_owned(),
    };
    assert_eq!(s.send(ShadowEvent::LlmEvent(partial.clone())), ShadowAction::Nothing);
    assert_eq!(s.ctx().partial_tool_calls, [partial]);
    assert_eq!(s.ctx().partial_tool_calls.len(), 1);

    assert_eq!(s.send(ShadowEvent::Interrupt), ShadowAction::Interrupted);
    assert_eq!(s.state(), &ShadowState::Done);
    assert_eq!(s.ctx().conversation, vec![user("explain"), Message::assistant("Hello"), user(INTERRUPTED),]);
    assert_eq!(s.ctx().partial_tool_calls, Vec::new());
    assert_eq!(s.ctx().partial_text, "");
    assert_eq!(s.rec.state_names().last(), Some(&"Done"));
}

/// A reasoning model streams its thoughts unasked: taken in `Processing`
/// (the session refuses any event no row accepts), not kept, so an
/// interrupt drops them as documented.
#[test]
fn reasoning_deltas_are_taken_while_processing_and_not_kept() {
    let mut s = Session::new(ctx());
    s.send(input("explain"));
    let thought = ShadowEvent::LlmEvent(StreamEvent::ReasoningDelta("the user wants".to_owned()));
    assert_eq!(s.send(thought), ShadowAction::Nothing);
    assert_eq!(s.state(), &ShadowState::Processing);
    s.send(text_delta("Hi"));
    assert_eq!(s.send(ShadowEvent::Interrupt), ShadowAction::Interrupted);
    assert_eq!(s.ctx().conversation, vec![user("explain"), Message::assistant("Hi"), user(INTERRUPTED)]);
}

#[test]
fn interrupt_in_executing_tool_lets_the_current_tool_complete_then_done() {
    let mut s = running(&[call("a", "bash"), call("b", "bash"), call("c", "bash")]);
    assert_eq!(s.state(), &executing("a", "bash"));
    assert_eq!(s.send(ShadowEvent::Interrupt), ShadowAction::InterruptAfterCurrentTool);
    // The tool is still running: the state is unchanged.
    assert_eq!(s.state(), &executing("a", "bash"));
    // A second interrupt is safe.
    assert_eq!(s.send(ShadowEvent::Interrupt), ShadowAction::InterruptAfterCurrentTool);

    assert_eq!(s.send(tool_ok("a", "ran")), ShadowAction::Interrupted);
    assert_eq!(s.state(), &ShadowState::Done);
    let tail = &s.ctx().conversation[2..];
    assert_eq!(
        tail,
        [results(vec![ok("a", "ran"), err("b", INTERRUPTED), err("c", INTERRUPTED)]), vec![user(INTERRUPTED)]].concat()
    );
    assert!(!s.ctx().interrupt_requested);
    assert_eq!(
        s.rec.state_names(),
        vec!["Idle", "Processing", "ExecutingTool", "ExecutingTool", "ExecutingTool", "Done"]
    );
}

#[test]
fn interrupt_in_waiting_for_permission_interrupts_the_tool_without_running_it() {
    let bash = call("t1", "bash");
    let mut s = Session::new(ctx());
    s.send(input("go"));
    s.send(tools_reply(&[bash.clone(), call("t2", "bash")]));
    assert_eq!(s.state(), &waiting_permission(&bash, &pid(0, &bash)));
    assert_eq!(s.send(ShadowEvent::Interrupt), ShadowAction::Interrupted);
    assert_eq!(s.state(), &ShadowState::Done);
    assert_eq!(
        &s.ctx().conversation[2..],
        [results(vec![err("t1", INTERRUPTED), err("t2", INTERRUPTED)]), vec![user(INTERRUPTED)]].concat()
    );
    assert!(s.rec.steps.iter().all(|step| step.to.name() != "ExecutingTool"), "nothing ran");
    // A late permission reply finds nothing to approve.
    let mut rec = Recorder::default();
    assert_eq!(s.m.handle_event_with(permission(&pid(0, &bash), true, false), &mut rec), ShadowAction::Nothing);
    assert_eq!(s.m.state(), &ShadowState::Done);
    assert_eq!(rec.unhandled.len(), 1);
}

#[test]
fn interrupt_in_waiting_for_user_input_ends_in_done() {
    let mut s = Session::new(ctx());
    s.send(input("paint it"));
    s.send(tools_reply(&[call("q1", "AskUserQuestion")]));
    assert_eq!(s.send(ShadowEvent::Interrupt), ShadowAction::Interrupted);
    assert_eq!(s.state(), &ShadowState::Done);
    assert_eq!(s.ctx().conversation[2..], [Message::tool_error("q1", INTERRUPTED), user(INTERRUPTED)]);
    assert_eq!(s.rec.state_names(), vec!["Idle", "Processing", "WaitingForUserInput", "Done"]);
}

#[test]
fn interrupt_in_waiting_for_subagent_is_passed_on_and_ends_in_done() {
    let mut s = running(&[call("t1", "Task"), call("t2", "bash")]);
    s.send(ShadowEvent::SubAgentRequested { tool_use_id: "t1".to_owned(), prompt: "dig".to_owned() });
    let waiting = ShadowState::WaitingForSubAgent { session_id: "s1/t1".to_owned() };
    assert_eq!(s.state(), &waiting);
    assert_eq!(s.send(ShadowEvent::Interrupt), ShadowAction::InterruptSubAgent("s1/t1".to_owned()));
    assert_eq!(s.state(), &waiting);
    assert_eq!(s.send(ShadowEvent::Interrupt), ShadowAction::InterruptSubAgent("s1/t1".to_owned()));
    // The child stops and reports; its answer is kept, the rest interrupted.
    let action =
        s.send(ShadowEvent::SubAgentFinished { session_id: "s1/t1".to_owned(), result: Ok("half done".to_owned()) });
    assert_eq!(action, ShadowAction::Interrupted);
    assert_eq!(s.state(), &ShadowState::Done);
    assert_eq!(
        &s.ctx().conversation[2..],
        [results(vec![ok("t1", "half done"), err("t2", INTERRUPTED)]), vec![user(INTERRUPTED)]].concat()
    );
}

/// Interrupting a resting state changes nothing and reports it.
fn assert_interrupt_changes_nothing(state: ShadowState) {
    let mut s = Session::at(state.clone(), ctx());
    assert_eq!(s.send(ShadowEvent::Interrupt), ShadowAction::NothingToInterrupt);
    assert_eq!(s.state(), &state);
    assert_eq!(s.ctx(), &ctx());
    assert_eq!(s.rec.state_names(), vec![state.name(), state.name()]);
}

#[test]
fn interrupt_in_done_changes_nothing() {
    assert_interrupt_changes_nothing(ShadowState::Done);
}

#[test]
fn interrupt_in_error_changes_nothing() {
    assert_interrupt_changes_nothing(ShadowState::Error { message: "boom".to_owned() });
    // The error stays until new input clears it.
    let mut s = Session::at(ShadowState::Error { message: "boom".to_owned() }, ctx());
    s.send(ShadowEvent::Interrupt);
    assert_eq!(s.send(input("retry")), call_user("retry"));
}
