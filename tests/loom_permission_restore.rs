//! `LoomWithPermission` restored from an earlier snapshot (or resumed
//! after a crash lost its last steps) asks again at a position it asked
//! at before: a grant given to the request made there before releases
//! only the calls it was given for, never the other calls a new reply of
//! the model asks about there.

use agent_fsm::snapshot::{from_json, to_json};
use agent_fsm_examples::loom::{AgentConfig, ConversationContext, Message, ToolCall, reply};
use agent_fsm_examples::loom_with_permission::{AgentAction, AgentEvent, AgentState, LoomWithPermission, request_id};
use serde_json::json;

fn command(id: &str, command: &str) -> ToolCall {
    ToolCall { id: id.into(), name: "run_command".into(), arguments: json!({ "command": command }) }
}

/// The machine at rest, with one exchange behind it.
fn at_rest() -> LoomWithPermission {
    let conversation = ConversationContext::from_messages(vec![Message::user("hello"), Message::assistant("hi")]);
    LoomWithPermission::with_state(AgentState::WaitingForUserInput { conversation }, AgentConfig::default())
}

/// The user asks, the model replies with `calls`: the request the machine
/// makes, by its id.
fn ask(m: &mut LoomWithPermission, calls: Vec<ToolCall>) -> usize {
    let action = m.handle_event(AgentEvent::UserInput(Message::user("clean the build")));
    assert!(matches!(action, AgentAction::SendLlmRequest(_)), "{action:?}");
    let action = m.handle_event(AgentEvent::LlmEvent(reply("on it", calls.clone())));
    let AgentAction::AskPermission { request_id, calls: asked } = action else { panic!("{action:?}") };
    assert_eq!(asked, calls);
    request_id
}

#[test]
fn a_grant_from_before_a_restore_does_not_release_other_calls_asked_at_the_same_position() {
    let saved = to_json(&at_rest()).expect("a snapshot");

    // The request the user saw and approved: `rm -rf build`.
    let mut before = from_json::<LoomWithPermission>(&saved).expect("restored");
    let shown = ask(&mut before, vec![command("call_1", "rm -rf build")]);
    let grant = AgentEvent::PermissionGranted { request_id: shown };

    // The agent goes back to the snapshot (its steps since were lost), and
    // the model's new reply, at the same position, asks for another command
    // under the same call id.
    let mut after = from_json::<LoomWithPermission>(&saved).expect("restored");
    let other = vec![command("call_1", "rm -rf ~")];
    let asked = ask(&mut after, other.clone());

    // The grant the user gave before arrives now: it names no pending
    // request, and releases nothing.
    let action = after.handle_event(grant);
    assert!(!matches!(action, AgentAction::ExecuteTools(_)), "a stale grant ran {action:?}");
    assert_ne!(asked, shown, "another request, about other calls, has another id");
    assert_eq!(
        action,
        AgentAction::DisplayError(format!("no permission request {shown} pending (waiting for {asked})"))
    );
    assert!(after.state().is_waiting_for_permission());
    // Its own grant runs it.
    assert_eq!(
        after.handle_event(AgentEvent::PermissionGranted { request_id: asked }),
        AgentAction::ExecuteTools(other)
    );
}

#[test]
fn the_same_calls_asked_again_at_the_same_position_keep_their_id() {
    let saved = to_json(&at_rest()).expect("a snapshot");
    let calls = vec![command("call_1", "rm -rf build")];
    let mut before = from_json::<LoomWithPermission>(&saved).expect("restored");
    let shown = ask(&mut before, calls.clone());
    let mut after = from_json::<LoomWithPermission>(&saved).expect("restored");
    // What the user approved is what runs: the same calls, the same request.
    assert_eq!(ask(&mut after, calls.clone()), shown);
    assert_eq!(
        after.handle_event(AgentEvent::PermissionGranted { request_id: shown }),
        AgentAction::ExecuteTools(calls)
    );
}

#[test]
fn request_ids_tell_apart_positions_and_each_part_of_a_call() {
    let call = |id: &str, name: &str, arguments| ToolCall { id: id.into(), name: name.into(), arguments };
    let base = vec![call("a", "write_file", json!({"path": "x"}))];
    let ids = [
        request_id(4, &base),
        request_id(5, &base),
        request_id(4, &[call("b", "write_file", json!({"path": "x"}))]),
        request_id(4, &[call("a", "edit_file", json!({"path": "x"}))]),
        request_id(4, &[call("a", "write_file", json!({"path": "y"}))]),
        // The pieces are told apart where they meet.
        request_id(4, &[call("aw", "rite_file", json!({"path": "x"}))]),
        request_id(4, &[]),
    ];
    for (i, a) in ids.iter().enumerate() {
        for b in &ids[i + 1..] {
            assert_ne!(a, b, "{ids:?}");
        }
    }
    assert_eq!(request_id(4, &base), ids[0], "the same request, the same id");
}
