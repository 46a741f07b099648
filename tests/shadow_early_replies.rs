//! The Shadow agent under the executor: a permission reply or an answer
//! sent before its request exists, while the model still replies, is not
//! held back until the request is made and then taken as its answer.
//! Paused time, so the scripted model's delays cost nothing.

#[path = "support/shadow_agent.rs"]
mod shadow_agent;

use agent_fsm_examples::shadow::{PERMISSION, QUESTION, ShadowEvent, ShadowState, ToolCall, request_id};
use serde_json::json;
use shadow_agent::*;

/// Sends `prompt` and, at once, `early` (naming the first request the turn
/// will make); returns the state the agent settles in.
async fn with_early_reply(h: &mut Harness, prompt: &str, early: ShadowEvent, waits_in: &str) -> ShadowState {
    let main = h.spawn(&[]);
    main.send(ShadowEvent::UserInput(prompt.to_owned())).await.expect("input sent");
    main.send(early).await.expect("the early reply sent");
    h.until_state("main", waits_in).await;
    tokio::time::timeout(WAIT, main.wait_idle()).await.expect("idle in time").expect("idle");
    main.state().await.expect("the state")
}

#[tokio::test(start_paused = true)]
async fn a_grant_sent_before_its_request_does_not_run_the_tool() {
    let mut h = Harness::new();
    // The id the request is about to get.
    let write = ToolCall {
        id: "toolu_1".to_owned(),
        name: "write_file".to_owned(),
        arguments: json!({ "path": "hello.txt", "content": "hello from Shadow\n" }),
    };
    let id = request_id(PERMISSION, 0, &write);
    let early = ShadowEvent::PermissionReply { request_id: id.clone(), allowed: true, remember: true };
    let state = with_early_reply(&mut h, "write hello.txt", early, "WaitingForPermission").await;
    assert!(
        matches!(&state, ShadowState::WaitingForPermission { request_id, .. } if *request_id == id),
        "the write must still wait for the user, in {state:?}"
    );
    assert_eq!(h.file("hello.txt"), None, "the tool ran without being allowed");
    // Answered now, it runs.
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);
    assert_eq!(h.file("hello.txt").as_deref(), Some("hello from Shadow\n"));
}

#[tokio::test(start_paused = true)]
async fn an_answer_sent_before_its_question_does_not_answer_it() {
    let mut h = Harness::new();
    let questions = json!({ "questions": ["Which colour should the button be?"] });
    let question = ToolCall { id: "toolu_1".to_owned(), name: "AskUserQuestion".to_owned(), arguments: questions };
    let id = request_id(QUESTION, 0, &question);
    let early = ShadowEvent::QuestionAnswered { request_id: id.clone(), answers: vec!["red".to_owned()] };
    let state = with_early_reply(&mut h, "ask me", early, "WaitingForUserInput").await;
    assert!(
        matches!(&state, ShadowState::WaitingForUserInput { request_id } if *request_id == id),
        "the question must still wait for the user, in {state:?}"
    );
}
