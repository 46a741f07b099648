//! bob's runner restored from an earlier snapshot numbers its approval
//! requests again from the snapshot's counter: an approval given to the
//! request made under a number before settles only a request about the
//! same call, never one about another call asked under that number after.

use agent_fsm::snapshot::{from_json, to_json};
use agent_fsm_examples::bob::ToolCall;
use agent_fsm_examples::bob::{Runner, RunnerAction, RunnerContext, RunnerEvent, RunnerState, call_tools, request_id};
use serde_json::json;

fn shell(command: &str) -> ToolCall {
    ToolCall { id: "call_1".into(), name: "shell".into(), arguments: json!({ "command": command }) }
}

/// The model asks for `call` and the runner asks for approval: the
/// request's id.
fn ask(m: &mut Runner, call: &ToolCall) -> String {
    m.handle_event(RunnerEvent::Infer(call_tools(vec![call.clone()])));
    let RunnerAction::AskApproval(approvals) = m.handle_event(RunnerEvent::RequireApproval) else {
        panic!("no approval asked, in {:?}", m.state());
    };
    assert_eq!(approvals.len(), 1);
    assert_eq!(&approvals[0].call, call);
    approvals[0].request_id.clone()
}

#[test]
fn an_approval_from_before_a_restore_does_not_release_another_call_asked_under_the_same_number() {
    let saved = to_json(&Runner::new(RunnerContext::new("clean up", 4))).expect("a snapshot");

    // The request the user saw and approved: `rm -rf build`.
    let mut before: Runner = from_json(&saved).expect("restored");
    let shown = ask(&mut before, &shell("rm -rf build"));

    // Back to the snapshot: the model now asks, under the same number and
    // call id, for another command.
    let mut after: Runner = from_json(&saved).expect("restored");
    let other = shell("rm -rf ~");
    let asked = ask(&mut after, &other);

    let action = after.handle_event(RunnerEvent::Approve { request_id: shown.clone() });
    assert!(!matches!(action, RunnerAction::RunTools(_)), "a stale approval ran {action:?}");
    assert_ne!(asked, shown, "a request about another call has another id");
    assert_eq!(action, RunnerAction::RejectReply(format!("no pending approval `{shown}`")));
    assert!(matches!(after.state(), RunnerState::AwaitingApproval { .. }));
    assert_eq!(after.handle_event(RunnerEvent::Approve { request_id: asked }), RunnerAction::RunTools(vec![other]));
}

#[test]
fn the_same_call_asked_again_under_the_same_number_keeps_its_id() {
    let saved = to_json(&Runner::new(RunnerContext::new("clean up", 4))).expect("a snapshot");
    let call = shell("rm -rf build");
    let mut before: Runner = from_json(&saved).expect("restored");
    let shown = ask(&mut before, &call);
    assert_eq!(shown, request_id(0, &call));
    let mut after: Runner = from_json(&saved).expect("restored");
    assert_eq!(ask(&mut after, &call), shown);
}

/// The invariants a resumed snapshot must hold: an id written with a
/// fingerprint is about its own call; one written as before, without,
/// still resumes.
#[test]
fn a_snapshot_holds_each_approval_id_to_its_call() {
    let mut m = Runner::new(RunnerContext::new("clean up", 4));
    ask(&mut m, &shell("make"));
    let waiting: serde_json::Value = serde_json::from_str(&to_json(&m).expect("a snapshot")).expect("json");

    let mut other = waiting.clone();
    other["state"]["data"]["approvals"][0]["request_id"] = json!(request_id(0, &shell("rm -rf ~")));
    let refused = from_json::<Runner>(&other.to_string()).map(|_| ()).expect_err("an id about another call");
    assert!(refused.to_string().contains("not the id of a request about the call `call_1`"), "{refused}");

    let mut legacy = waiting;
    legacy["state"]["data"]["approvals"][0]["request_id"] = json!("approval-0");
    let mut resumed: Runner = from_json(&legacy.to_string()).expect("an id written as before resumes");
    let action = resumed.handle_event(RunnerEvent::Approve { request_id: "approval-0".into() });
    assert_eq!(action, RunnerAction::RunTools(vec![shell("make")]));
}
