//! The Shadow agent's runtime around the machine: subagents as child
//! machines (their failure, their handles in the registry, their timeout),
//! session ids in use refused, what a subscriber sees, JSON included, and
//! the release session end to end. Tests without a subprocess run under
//! paused time.

#[path = "support/shadow_agent.rs"]
mod shadow_agent;

use std::time::Duration;

use agent_fsm::runtime::Notification;
use agent_fsm_examples::shadow::{PERMISSION, Permission, ShadowEvent, ShadowState, ToolCall, request_id};
use agent_fsm_examples::shadow_agent::{AgentRuntime, Output, SpawnError};
use serde_json::json;
use shadow_agent::*;

// --------------------------------------------------------------- subagents

#[tokio::test(start_paused = true)]
async fn a_failing_subagent_becomes_the_parents_error() {
    let rules = [("Task", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    let failed = h.turn(&main, "delegate the impossible", APPROVE).await;
    let message = "subagent `main/toolu_1` failed: LLM call failed: server overloaded: scripted model";
    assert_eq!(failed, ShadowState::Error { message: message.to_owned() });
    assert_eq!(h.published("main/toolu_1"), ["Processing", "Error", "Done"]);
    assert_eq!(conversation(&main).await[2], err("toolu_1", message));
    assert_eq!(h.runtime.sessions(), ["main"]);
    // New input leaves Error.
    assert_eq!(h.turn(&main, "hello", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    assert_eq!(
        states(&history),
        ["Idle", "Processing", "ExecutingTool", "WaitingForSubAgent", "Error", "Processing", "Idle"]
    );
}

#[tokio::test(start_paused = true)]
async fn the_runtime_finds_a_running_child_whose_permission_is_answered_through_its_handle() {
    // `read_file` asks, in the parent and so in the child.
    let rules = [("Task", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    main.send(ShadowEvent::UserInput("delegate the summary".to_owned())).await.expect("sent");
    let asked = h.until(|u| matches!(u.output, Output::PermissionRequested { .. })).await;
    assert_eq!(&*asked.session_id, "main/toolu_1", "the child asks");

    let child = h.runtime.get("main/toolu_1").expect("the child's handle while it runs");
    let read = ToolCall {
        id: "toolu_1".to_owned(),
        name: "read_file".to_owned(),
        arguments: json!({ "path": "CHANGELOG.md" }),
    };
    let asked = request_id(PERMISSION, 0, &read);
    assert_eq!(h.runtime.sessions(), ["main", "main/toolu_1"]);
    assert_eq!(
        child.state().await.expect("state"),
        ShadowState::WaitingForPermission {
            tool_name: "read_file".to_owned(),
            tool_use_id: "toolu_1".to_owned(),
            input: json!({ "path": "CHANGELOG.md" }),
            request_id: asked.clone(),
        }
    );
    assert_eq!(
        main.state().await.expect("state"),
        ShadowState::WaitingForSubAgent { session_id: "main/toolu_1".to_owned() }
    );
    let reply = ShadowEvent::PermissionReply { request_id: asked, allowed: true, remember: false };
    child.send(reply).await.expect("sent");
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);

    assert_eq!(
        h.published("main/toolu_1"),
        ["Processing", "WaitingForPermission", "ExecutingTool", "Processing", "Idle", "Done"]
    );
    assert!(child.is_finished(), "the parent shut its child down");
    assert!(h.runtime.get("main/toolu_1").is_none());
    assert_eq!(h.runtime.sessions(), ["main"]);
}

#[tokio::test(start_paused = true)]
async fn a_subagent_that_outlives_its_timeout_is_stopped_and_fails_the_parent() {
    let config = AgentRuntime::default_config()
        .action_timeout(agent_fsm_examples::shadow::machine::ActionKind::SpawnSubAgent, Duration::from_secs(5));
    let rules = [("Task", Permission::Allow)];
    let mut h = Harness::with_config(config);
    let main = h.spawn(&rules);
    main.send(ShadowEvent::UserInput("delegate the summary".to_owned())).await.expect("sent");
    // The child asks for `read_file`; nobody answers.
    let asked = h.until(|u| matches!(u.output, Output::PermissionRequested { .. })).await;
    assert_eq!(&*asked.session_id, "main/toolu_1");
    let child = h.runtime.get("main/toolu_1").expect("running");

    let failed = h.until_state("main", "Error").await;
    let message = "subagent `main/toolu_1` failed: the subagent timed out";
    assert_eq!(failed, ShadowState::Error { message: message.to_owned() });
    assert_eq!(child.wait_finished().await.expect("stopped"), agent_fsm_examples::shadow::machine::StateKind::Done);
    assert!(h.runtime.get("main/toolu_1").is_none());
    assert_eq!(h.runtime.sessions(), ["main"]);
}

#[tokio::test(start_paused = true)]
async fn a_session_id_in_use_is_refused() {
    let h = Harness::new();
    let _main = h.spawn(&[]);
    assert!(matches!(h.runtime.spawn("main", &[]), Err(SpawnError::SessionTaken(id)) if id == "main"));
    let outcomes = h.runtime.shutdown_all().await;
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].0, "main");
    assert_eq!(outcomes[0].1.as_ref().ok(), Some(&agent_fsm_examples::shadow::machine::StateKind::Done));
    assert!(h.runtime.spawn("main", &[]).is_ok(), "free again once stopped");
}

// -------------------------------------------------------------- subscriber

#[tokio::test(start_paused = true)]
async fn a_subscriber_sees_every_state_change_with_its_json() {
    let h = Harness::new();
    let main = h.spawn(&[]);
    let mut notifications = main.subscribe();
    main.send(ShadowEvent::UserInput("write hello.txt".to_owned())).await.expect("sent");

    let mut seen = Vec::new();
    loop {
        let n = tokio::time::timeout(WAIT, notifications.recv()).await.expect("in time").expect("open");
        seen.push(n.clone());
        match n {
            Notification::Output(Output::PermissionRequested { request_id, .. }) => {
                let reply = ShadowEvent::PermissionReply { request_id, allowed: true, remember: false };
                main.send(reply).await.expect("sent");
            }
            Notification::Output(Output::StateChanged { state: ShadowState::Idle, .. }) => break,
            Notification::Lagged(missed) => panic!("lagged by {missed}"),
            _ => {}
        }
    }

    // Every hop that changed the state is followed by its state, with
    // data, before anything else changes.
    let mut changes = Vec::new();
    let mut pending: Option<&'static str> = None;
    for n in &seen {
        match n {
            Notification::Transition(step) if step.from != step.to => {
                assert_eq!(pending, None, "a change without its state");
                pending = Some(step.to.name());
            }
            Notification::Output(Output::StateChanged { from, state, .. }) => {
                assert_eq!(pending.take(), Some(state.name()));
                changes.push((*from, serde_json::to_string(state).expect("serializes")));
            }
            _ => {}
        }
    }
    assert_eq!(pending, None);
    let write = ToolCall {
        id: "toolu_1".to_owned(),
        name: "write_file".to_owned(),
        arguments: json!({ "path": "hello.txt", "content": "hello from Shadow\n" }),
    };
    let asked = request_id(PERMISSION, 0, &write);
    assert_eq!(
        changes,
        [
            ("Idle", r#"{"state":"processing"}"#.to_owned()),
            (
                "Processing",
                format!(
                    r#"{{"state":"waiting_for_permission","data":{{"tool_name":"write_file","tool_use_id":"toolu_1","input":{{"content":"hello from Shadow\n","path":"hello.txt"}},"request_id":"{asked}"}}}}"#
                )
            ),
            (
                "WaitingForPermission",
                r#"{"state":"executing_tool","data":{"tool_name":"write_file","tool_use_id":"toolu_1"}}"#.to_owned()
            ),
            ("ExecutingTool", r#"{"state":"processing"}"#.to_owned()),
            ("Processing", r#"{"state":"idle"}"#.to_owned()),
        ]
    );
    // What a UI polling the handle reads is the same JSON.
    let polled = serde_json::to_value(main.state().await.expect("state")).expect("serializes");
    assert_eq!(polled, json!({ "state": "idle" }));
    // The streamed text came through as outputs, in order.
    let text: String = seen
        .iter()
        .filter_map(|n| match n {
            Notification::Output(Output::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Writing hello.txt.Wrote hello.txt.");
}

// ------------------------------------------------------------- the example

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_release_session_runs_end_to_end() {
    let rules = [("read_file", Permission::Allow), ("Task", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    let prompt = "Draft the release notes";
    let rested = h.turn(&main, prompt, Policy { allow: true, remember: true, answer: "1.2.0" }).await;
    assert_eq!(rested, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    assert_eq!(
        states(&history),
        [
            "Idle",
            "Processing",
            "WaitingForPermission", // write_file asks; approved and remembered
            "ExecutingTool",
            "Processing",
            "ExecutingTool", // read_file: allowed by rule
            "Processing",
            "ExecutingTool", // Task
            "WaitingForSubAgent",
            "Processing",
            "WaitingForUserInput",
            "Processing",
            "ExecutingTool", // write_file: remembered
            "Processing",
            "WaitingForPermission", // run_command asks
            "ExecutingTool",
            "Processing",
            "Idle",
        ]
    );
    assert_eq!(h.published("main/toolu_3"), ["Processing", "ExecutingTool", "Processing", "Idle", "Done"]);
    let asked: Vec<String> = h
        .seen
        .iter()
        .filter_map(|u| match &u.output {
            Output::PermissionRequested { call: ToolCall { name, .. }, .. } => Some(format!("{}:{name}", u.session_id)),
            _ => None,
        })
        .collect();
    assert_eq!(asked, ["main:write_file", "main:run_command"]);
    let summary = "CHANGELOG.md lists 3 changes, the latest: Subagents run as child machines.";
    assert_eq!(h.file("NOTES.md"), Some(format!("# Release notes for 1.2.0\n\n{summary}\n")));
    assert_eq!(h.responses("main"), ["Release notes for 1.2.0 are in NOTES.md (3 lines)."]);
    let permissions = main.inspect(|m| m.context().permissions.clone()).await.expect("inspect");
    assert_eq!(permissions.get("write_file"), Some(&Permission::Allow));
    assert_eq!(permissions.get("run_command"), Some(&Permission::Allow));

    let outcomes = h.runtime.shutdown_all().await;
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].1.as_ref().ok(), Some(&agent_fsm_examples::shadow::machine::StateKind::Done));
}
