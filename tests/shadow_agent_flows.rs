//! The Shadow agent under the executor, end to end: the documented flows
//! with their exact state sequences (and the history checked against the
//! table's own path), remembered and denied permissions, and input sent
//! mid-turn. Paused time, so the scripted model's delays cost nothing and
//! the order of events is exact.

#[path = "support/shadow_agent.rs"]
mod shadow_agent;

use agent_fsm_examples::shadow::{
    Message, PERMISSION, Permission, QUESTION, ShadowEvent, ShadowState, ToolCall, request_id,
};
use agent_fsm_examples::shadow_agent::Output;
use serde_json::json;
use shadow_agent::*;

// ------------------------------------------------------------------- flows

#[tokio::test(start_paused = true)]
async fn flow_simple_reply() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    assert_eq!(h.turn(&main, "hello there", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(states(&history), ["Idle", "Processing", "Idle"]);
    assert_eq!(h.responses("main"), ["Hello! I can write, compare, delegate, ask and run things."]);
}

#[tokio::test(start_paused = true)]
async fn flow_tool_with_permission() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    assert_eq!(h.turn(&main, "write hello.txt", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(states(&history), ["Idle", "Processing", "WaitingForPermission", "ExecutingTool", "Processing", "Idle"]);
    assert_eq!(h.file("hello.txt").as_deref(), Some("hello from Shadow\n"), "the tool ran for real");
    assert_eq!(h.responses("main"), ["Wrote hello.txt."]);
    let permissions = main.inspect(|m| m.context().permissions.clone()).await.expect("inspect");
    assert_eq!(permissions.get("write_file"), None, "not remembered");
}

#[tokio::test(start_paused = true)]
async fn flow_several_tools_allowed_by_rule() {
    let rules = [("read_file", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    assert_eq!(h.turn(&main, "compare a.txt and b.txt", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    assert_eq!(
        states(&history),
        ["Idle", "Processing", "ExecutingTool", "Processing", "ExecutingTool", "Processing", "Idle"]
    );
    assert!(!h.outputs("main").any(|o| matches!(o, Output::PermissionRequested { .. })), "the rule allowed both");
    assert_eq!(h.responses("main"), ["a.txt says \"alpha\" and b.txt says \"beta\"."]);
}

#[tokio::test(start_paused = true)]
async fn flow_subagent() {
    let rules = [("Task", Permission::Allow), ("read_file", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    assert_eq!(h.turn(&main, "delegate the summary", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    assert_eq!(states(&history), ["Idle", "Processing", "ExecutingTool", "WaitingForSubAgent", "Processing", "Idle"]);
    // The child ran under its own session id, as a machine of its own,
    // then was shut down by its parent.
    assert!(h.outputs("main").any(|o| matches!(o, Output::SubAgentSpawned { session_id, prompt }
        if session_id == "main/toolu_1" && prompt == "Summarise CHANGELOG.md")));
    assert_eq!(h.published("main/toolu_1"), ["Processing", "ExecutingTool", "Processing", "Idle", "Done"]);
    let summary = "CHANGELOG.md lists 3 changes, the latest: Subagents run as child machines.";
    assert_eq!(h.responses("main/toolu_1"), [summary]);
    assert_eq!(h.responses("main"), [format!("The helper says: {summary}")]);
    assert_eq!(conversation(&main).await[2], ok("toolu_1", summary));
    assert_eq!(h.runtime.sessions(), ["main"], "the finished child is unregistered");
}

#[tokio::test(start_paused = true)]
async fn flow_question() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    assert_eq!(h.turn(&main, "ask me about the button", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(states(&history), ["Idle", "Processing", "WaitingForUserInput", "Processing", "Idle"]);
    let questions = json!({ "questions": ["Which colour should the button be?"] });
    let question =
        ToolCall { id: "toolu_1".to_owned(), name: "AskUserQuestion".to_owned(), arguments: questions.clone() };
    let request_id = request_id(QUESTION, 0, &question);
    assert!(
        h.outputs("main")
            .any(|o| o == &Output::Question { request_id: request_id.clone(), questions: questions.clone() })
    );
    assert_eq!(h.responses("main"), ["Painting the button blue."]);
}

#[tokio::test(start_paused = true)]
async fn a_remembered_permission_skips_the_wait_and_a_reply_for_another_id_is_refused() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    main.send(ShadowEvent::UserInput("write hello.txt".to_owned())).await.expect("sent");
    let asked = h.until(|u| matches!(u.output, Output::PermissionRequested { .. })).await;
    let Output::PermissionRequested { request_id, call } = asked.output else { unreachable!("matched") };
    assert_eq!(call.id, "toolu_1");
    let asked = request_id;
    assert_eq!(asked, agent_fsm_examples::shadow::request_id(PERMISSION, 0, &call));

    // A reply for another request changes nothing, and neither does one
    // that names the call (its id is the model's, not the request's).
    for id in ["permission-9", "toolu_1"] {
        let wrong = ShadowEvent::PermissionReply { request_id: id.to_owned(), allowed: true, remember: true };
        main.send(wrong).await.expect("sent");
        let refused = h.until(|u| matches!(u.output, Output::Rejected(_))).await;
        assert_eq!(
            refused.output,
            Output::Rejected(format!("no permission request `{id}` pending (waiting for `{asked}`)"))
        );
    }
    assert_eq!(main.state().await.expect("state").name(), "WaitingForPermission");
    assert_eq!(h.file("hello.txt"), None);

    let right = ShadowEvent::PermissionReply { request_id: asked, allowed: true, remember: true };
    main.send(right).await.expect("sent");
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);
    // Remembered for the session: the next write runs without asking.
    assert_eq!(h.turn(&main, "write it again", Policy { allow: false, ..APPROVE }).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(
        states(&history),
        [
            "Idle",
            "Processing",
            "WaitingForPermission",
            "ExecutingTool",
            "Processing",
            "Idle",
            "Processing",
            "ExecutingTool",
            "Processing",
            "Idle"
        ]
    );
    assert_eq!(h.responses("main"), ["Wrote hello.txt.", "Wrote hello.txt."]);
}

#[tokio::test(start_paused = true)]
async fn a_denied_permission_ends_the_task_and_new_input_starts_another() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    let denied = h.turn(&main, "write hello.txt", Policy { allow: false, ..APPROVE }).await;
    assert_eq!(denied, ShadowState::Done);
    assert_eq!(h.file("hello.txt"), None, "the tool did not run");
    assert!(h.outputs("main").any(|o| o == &Output::PermissionDenied("write_file".into())));
    assert_eq!(h.turn(&main, "hello", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(states(&history), ["Idle", "Processing", "WaitingForPermission", "Done", "Processing", "Idle"]);
}

// ------------------------------------------------------------ input mid-turn

#[tokio::test(start_paused = true)]
async fn input_sent_while_the_turn_runs_waits_in_the_inbox_and_runs_after() {
    let rules = [("read_file", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    main.send(ShadowEvent::UserInput("compare a.txt and b.txt".to_owned())).await.expect("sent");
    h.until_state("main", "Processing").await;
    // Sent while the model streams: held by the executor's inbox.
    main.send(ShadowEvent::UserInput("hello".to_owned())).await.expect("sent");
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);

    assert_eq!(
        h.responses("main"),
        ["a.txt says \"alpha\" and b.txt says \"beta\".", "Hello! I can write, compare, delegate, ask and run things."]
    );
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    assert_eq!(
        states(&history),
        [
            "Idle",
            "Processing",
            "ExecutingTool",
            "Processing",
            "ExecutingTool",
            "Processing",
            "Idle",
            "Processing",
            "Idle"
        ]
    );
    assert!(hops(&history).iter().all(|hop| hop.3 != Some("DeferInput")), "it never reached the machine mid-turn");
}

#[tokio::test(start_paused = true)]
async fn input_sent_while_waiting_for_permission_is_deferred_then_run() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    main.send(ShadowEvent::UserInput("write hello.txt".to_owned())).await.expect("sent");
    let asked = h.until(|u| matches!(u.output, Output::PermissionRequested { .. })).await;
    // Nothing is in flight while the agent waits: the input reaches the
    // machine, which hands it back; the effects keep it.
    main.send(ShadowEvent::UserInput("hello".to_owned())).await.expect("sent");
    let deferred = h.until(|u| matches!(u.output, Output::InputDeferred(_))).await;
    assert_eq!(deferred.output, Output::InputDeferred("hello".to_owned()));
    assert_eq!(main.state().await.expect("state").name(), "WaitingForPermission");

    let Output::PermissionRequested { request_id, .. } = asked.output else { unreachable!("matched") };
    main.send(ShadowEvent::PermissionReply { request_id, allowed: true, remember: false }).await.expect("sent");
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);
    // The deferred input starts the next turn by itself.
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);

    assert_eq!(h.responses("main"), ["Wrote hello.txt.", "Hello! I can write, compare, delegate, ask and run things."]);
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert!(hops(&history).contains(&(
        "WaitingForPermission",
        Some("UserInput"),
        "WaitingForPermission",
        Some("DeferInput")
    )));
    assert_eq!(
        states(&history),
        ["Idle", "Processing", "WaitingForPermission", "ExecutingTool", "Processing", "Idle", "Processing", "Idle"]
    );
    let messages = conversation(&main).await;
    let users: Vec<&Message> = messages.iter().filter(|m| matches!(m, Message::User { .. })).collect();
    assert_eq!(users, [&Message::user("write hello.txt"), &Message::user("hello")]);
}
