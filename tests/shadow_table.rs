//! The Shadow runtime table against its reference: every documented flow
//! with its exact state sequence, the documented interrupt outcome in every
//! state, permission replies matched by the request ids the machine mints
//! (never the model's `tool_use_id`s), replies that repeat a call id
//! refused, remembered answers,
//! the `Error` state entered and left, input mid-turn handed back, and the
//! snake_case JSON of every state.

use agent_fsm::Recorder;
use agent_fsm::llm::{ErrorKind, StopReason, Usage};
use agent_fsm_examples::shadow::{
    AssistantMessage, INTERRUPTED, Message, NOT_RUN, Permission, ProviderError, Shadow, ShadowAction, ShadowContext,
    ShadowEvent, ShadowState, StreamEvent, ToolCall, ToolResult,
};
use serde_json::json;

// ---------------------------------------------------------------- helpers

/// A machine with a recorder, fed event by event.
struct Session {
    m: Shadow,
    rec: Recorder<Shadow>,
}

impl Session {
    fn new(ctx: ShadowContext) -> Self {
        Session { m: Shadow::new(ctx), rec: Recorder::default() }
    }

    fn at(state: ShadowState, ctx: ShadowContext) -> Self {
        Session { m: Shadow::with_state(state, ctx), rec: Recorder::default() }
    }

    fn send(&mut self, event: ShadowEvent) -> ShadowAction {
        let action = self.m.handle_event_with(event, &mut self.rec);
        assert_eq!(self.rec.unhandled, Vec::new(), "an event was refused");
        action
    }

    fn state(&self) -> &ShadowState {
        self.m.state()
    }

    fn ctx(&self) -> &ShadowContext {
        self.m.context()
    }
}

fn ctx() -> ShadowContext {
    ShadowContext::new("s1")
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: json!({ "arg": id }) }
}

fn input(text: &str) -> ShadowEvent {
    ShadowEvent::UserInput(text.to_owned())
}

fn completed(message: AssistantMessage) -> ShadowEvent {
    let stop_reason = if message.tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
    ShadowEvent::LlmEvent(StreamEvent::Completed { message, stop_reason, usage: Usage::new(3, 2) })
}

fn text_reply(text: &str) -> ShadowEvent {
    completed(AssistantMessage { text: text.to_owned(), tool_calls: Vec::new() })
}

fn tools_reply(calls: &[ToolCall]) -> ShadowEvent {
    completed(AssistantMessage { text: String::new(), tool_calls: calls.to_vec() })
}

fn text_delta(text: &str) -> ShadowEvent {
    ShadowEvent::LlmEvent(StreamEvent::TextDelta(text.to_owned()))
}

fn tool_ok(id: &str, output: &str) -> ShadowEvent {
    ShadowEvent::ToolResult { tool_use_id: id.to_owned(), result: Ok(output.to_owned()) }
}

fn tool_err(id: &str, error: &str) -> ShadowEvent {
    ShadowEvent::ToolResult { tool_use_id: id.to_owned(), result: Err(error.to_owned()) }
}

fn permission(request_id: &str, allowed: bool, remember: bool) -> ShadowEvent {
    ShadowEvent::PermissionReply { request_id: request_id.to_owned(), allowed, remember }
}

fn ok(id: &str, content: &str) -> ToolResult {
    ToolResult { call_id: id.to_owned(), content: content.to_owned(), is_error: false }
}

fn err(id: &str, content: &str) -> ToolResult {
    ToolResult { call_id: id.to_owned(), content: content.to_owned(), is_error: true }
}

/// A tool round's results as the conversation holds them: one tool
/// message per call, in call order.
fn results(results: Vec<ToolResult>) -> Vec<Message> {
    results.into_iter().map(Message::Tool).collect()
}

/// A model call adding a tool round's results.
fn call_with(r: Vec<ToolResult>) -> ShadowAction {
    ShadowAction::CallLlm(results(r))
}

fn user(text: &str) -> Message {
    Message::user(text)
}

/// A model call adding the user's `text`.
fn call_user(text: &str) -> ShadowAction {
    ShadowAction::CallLlm(vec![user(text)])
}

fn executing(id: &str, name: &str) -> ShadowState {
    ShadowState::ExecutingTool { tool_name: name.to_owned(), tool_use_id: id.to_owned() }
}

fn waiting_permission(c: &ToolCall, request_id: &str) -> ShadowState {
    ShadowState::WaitingForPermission {
        tool_name: c.name.clone(),
        tool_use_id: c.id.clone(),
        input: c.arguments.clone(),
        request_id: request_id.to_owned(),
    }
}

fn request_permission(c: &ToolCall, request_id: &str) -> ShadowAction {
    ShadowAction::RequestPermission { request_id: request_id.to_owned(), call: c.clone() }
}

/// A session that is running `calls[0]` of a reply (every tool allowed).
fn running(calls: &[ToolCall]) -> Session {
    let mut ctx = ctx();
    ctx.default_permission = Permission::Allow;
    let mut s = Session::new(ctx);
    s.send(input("go"));
    s.send(tools_reply(calls));
    s
}

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
    assert_eq!(s.send(tools_reply(std::slice::from_ref(&bash))), request_permission(&bash, "permission-0"));
    assert_eq!(s.state(), &waiting_permission(&bash, "permission-0"));
    assert_eq!(s.send(permission("permission-0", true, false)), ShadowAction::ExecuteTool(bash.clone()));
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
    assert_eq!(
        s.send(tools_reply(&[question])),
        ShadowAction::AskUser {
            request_id: "question-0".to_owned(),
            questions: json!({ "questions": ["Which colour?"] })
        }
    );
    assert_eq!(s.state(), &ShadowState::WaitingForUserInput { request_id: "question-0".to_owned() });
    let action =
        s.send(ShadowEvent::QuestionAnswered { request_id: "question-0".to_owned(), answers: vec!["blue".to_owned()] });
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
    assert_eq!(s.send(tool_ok("a", "A")), request_permission(&call("b", "bash"), "permission-0"));
    assert_eq!(s.send(permission("permission-0", true, false)), ShadowAction::ExecuteTool(call("b", "bash")));
    // `rm` is denied by rule on the way, without asking.
    assert_eq!(
        s.send(tool_ok("b", "B")),
        ShadowAction::AskUser { request_id: "question-1".to_owned(), questions: question.arguments.clone() }
    );
    let results = vec![ok("a", "A"), ok("b", "B"), err("r", "Permission denied by rule for `rm`"), ok("q", "yes")];
    let action =
        s.send(ShadowEvent::QuestionAnswered { request_id: "question-1".to_owned(), answers: vec!["yes".to_owned()] });
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
    assert_eq!(s.state(), &waiting_permission(&bash, "permission-0"));
    assert_eq!(s.send(ShadowEvent::Interrupt), ShadowAction::Interrupted);
    assert_eq!(s.state(), &ShadowState::Done);
    assert_eq!(
        &s.ctx().conversation[2..],
        [results(vec![err("t1", INTERRUPTED), err("t2", INTERRUPTED)]), vec![user(INTERRUPTED)]].concat()
    );
    assert!(s.rec.steps.iter().all(|step| step.to.name() != "ExecutingTool"), "nothing ran");
    // A late permission reply finds nothing to approve.
    let mut rec = Recorder::default();
    assert_eq!(s.m.handle_event_with(permission("permission-0", true, false), &mut rec), ShadowAction::Nothing);
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
        ShadowAction::Reject("no permission request `t1` pending (waiting for `permission-0`)".to_owned())
    );
    assert_eq!(s.state(), &before_state);
    assert_eq!(s.ctx(), &before_ctx, "the rejected reply was not remembered either");
    // The right id still works.
    assert_eq!(s.send(permission("permission-0", true, false)), ShadowAction::ExecuteTool(bash));
}

#[test]
fn remember_stores_the_rule_and_the_next_call_skips_the_permission_wait() {
    let mut s = Session::new(ctx());
    s.send(input("go"));
    s.send(tools_reply(&[call("t1", "bash")]));
    s.send(permission("permission-0", true, true));
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
    assert_eq!(s.send(permission("permission-0", false, true)), ShadowAction::PermissionDenied("bash".to_owned()));
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
