//! Shadow restored from an earlier snapshot numbers its requests again
//! from the snapshot's counter: a permission reply given to the request
//! made under a number before settles only a request about the same call,
//! never one about another call asked under that number after.

use agent_fsm::llm::{StopReason, Usage};
use agent_fsm::snapshot::{from_json, to_json};
use agent_fsm_examples::shadow::{
    AssistantMessage, PERMISSION, Shadow, ShadowAction, ShadowContext, ShadowEvent, ShadowState, StreamEvent, ToolCall,
    request_id,
};
use serde_json::json;

fn bash(command: &str) -> ToolCall {
    ToolCall { id: "toolu_1".into(), name: "bash".into(), arguments: json!({ "command": command }) }
}

/// The user asks, the model replies with `call`: the id of the request
/// the machine makes.
fn ask(m: &mut Shadow, call: &ToolCall) -> String {
    m.handle_event(ShadowEvent::UserInput("clean the build".into()));
    let reply = AssistantMessage { text: String::new(), tool_calls: vec![call.clone()], ..Default::default() };
    let action = m.handle_event(ShadowEvent::LlmEvent(StreamEvent::Completed {
        message: reply,
        stop_reason: StopReason::ToolUse,
        usage: Usage::default(),
    }));
    let ShadowAction::RequestPermission { request_id, call: asked } = action else { panic!("{action:?}") };
    assert_eq!(&asked, call);
    request_id
}

fn allow(request_id: &str) -> ShadowEvent {
    ShadowEvent::PermissionReply { request_id: request_id.into(), allowed: true, remember: false }
}

#[test]
fn a_reply_from_before_a_restore_does_not_allow_another_call_asked_under_the_same_number() {
    let saved = to_json(&Shadow::new(ShadowContext::new("main"))).expect("a snapshot");

    // The request the user saw and allowed: `rm -rf build`.
    let mut before: Shadow = from_json(&saved).expect("restored");
    let shown = ask(&mut before, &bash("rm -rf build"));

    // Back to the snapshot: the model's new reply asks, under the same
    // number and call id, for another command.
    let mut after: Shadow = from_json(&saved).expect("restored");
    let other = bash("rm -rf ~");
    let asked = ask(&mut after, &other);

    // The reply the user gave before arrives now, and allows nothing.
    let action = after.handle_event(allow(&shown));
    assert!(!matches!(action, ShadowAction::ExecuteTool(_)), "a stale reply ran {action:?}");
    assert_ne!(asked, shown, "a request about another call has another id");
    assert_eq!(
        action,
        ShadowAction::Reject(format!("no permission request `{shown}` pending (waiting for `{asked}`)"))
    );
    assert!(matches!(after.state(), ShadowState::WaitingForPermission { .. }));
    assert_eq!(after.handle_event(allow(&asked)), ShadowAction::ExecuteTool(other));
}

#[test]
fn the_same_call_asked_again_under_the_same_number_keeps_its_id() {
    let saved = to_json(&Shadow::new(ShadowContext::new("main"))).expect("a snapshot");
    let call = bash("rm -rf build");
    let mut before: Shadow = from_json(&saved).expect("restored");
    let shown = ask(&mut before, &call);
    assert_eq!(shown, request_id(PERMISSION, 0, &call));
    let mut after: Shadow = from_json(&saved).expect("restored");
    assert_eq!(ask(&mut after, &call), shown);
    assert_eq!(after.handle_event(allow(&shown)), ShadowAction::ExecuteTool(call));
}

/// A snapshot taken while a request waited, before ids held a
/// fingerprint, still resumes, and its request is answered by its id.
#[test]
fn a_snapshot_with_an_id_from_before_fingerprints_resumes() {
    let call = bash("make");
    let mut m = Shadow::new(ShadowContext::new("main"));
    ask(&mut m, &call);
    let mut v: serde_json::Value = serde_json::from_str(&to_json(&m).expect("a snapshot")).expect("json");
    v["state"]["data"]["request_id"] = json!("permission-0");
    let mut resumed: Shadow = from_json(&v.to_string()).expect("an id written as before resumes");
    assert_eq!(resumed.handle_event(allow("permission-0")), ShadowAction::ExecuteTool(call));
}
