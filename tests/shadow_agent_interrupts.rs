//! The Shadow agent under the executor: interrupts in every state through
//! `handle.interrupt(..)`, each ending as the table documents. Paused time,
//! so the order of events is exact.

#[path = "support/shadow_agent.rs"]
mod shadow_agent;

use std::time::Duration;

use agent_fsm_examples::shadow::{INTERRUPTED, Message, Permission, ShadowEvent, ShadowState};
use agent_fsm_examples::shadow_agent::{Output, STORY};
use shadow_agent::*;

// ------------------------------------------------------ interrupt per state

#[tokio::test(start_paused = true)]
async fn interrupt_in_idle_keeps_the_agent_alive() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    main.interrupt("Esc").await.expect("interrupted");
    main.interrupt("Esc again").await.expect("a double interrupt is safe");
    assert_eq!(main.state().await.expect("state"), ShadowState::Idle);
    assert!(!main.is_finished(), "the agent did not end");
    // Still takes input.
    assert_eq!(h.turn(&main, "hello", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(history.interrupts().map(|i| &*i.cause).collect::<Vec<_>>(), ["Esc", "Esc again"]);
    assert_eq!(
        hops(&history)[..2],
        [
            ("Idle", Some("Interrupt"), "Idle", Some("NothingToInterrupt")),
            ("Idle", Some("Interrupt"), "Idle", Some("NothingToInterrupt"))
        ]
    );
    assert_eq!(states(&history), ["Idle", "Processing", "Idle"]);
}

#[tokio::test(start_paused = true)]
async fn interrupt_in_processing_keeps_the_partial_text() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    main.send(ShadowEvent::UserInput("tell me a story".to_owned())).await.expect("sent");
    for _ in 0..3 {
        h.until(|u| matches!(u.output, Output::Text(_))).await;
    }
    main.interrupt("Esc").await.expect("interrupted");
    assert_eq!(main.state().await.expect("state"), ShadowState::Done);

    let partial = "Once upon a ";
    assert!(STORY.starts_with(partial));
    assert_eq!(
        conversation(&main).await,
        [Message::user("tell me a story"), Message::assistant(partial), interrupted(),]
    );
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(hops(&history).last(), Some(&("Processing", Some("Interrupt"), "Done", Some("Interrupted"))));
    assert_eq!(states(&history), ["Idle", "Processing", "Done"]);
    // Nothing of the dropped stream arrives later.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(main.state().await.expect("state"), ShadowState::Done);
}

#[tokio::test(start_paused = true)]
async fn interrupt_in_waiting_for_permission_answers_the_tool_as_interrupted() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    main.send(ShadowEvent::UserInput("write hello.txt".to_owned())).await.expect("sent");
    h.until_state("main", "WaitingForPermission").await;
    main.interrupt("Esc").await.expect("interrupted");

    assert_eq!(main.state().await.expect("state"), ShadowState::Done);
    assert_eq!(h.file("hello.txt"), None, "no execution");
    assert_eq!(conversation(&main).await[2..], [err("toolu_1", INTERRUPTED), interrupted()]);
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(states(&history), ["Idle", "Processing", "WaitingForPermission", "Done"]);
    // A late reply finds nothing to approve.
    let late = ShadowEvent::PermissionReply { request_id: "permission-0".to_owned(), allowed: true, remember: false };
    main.call(late).await.expect("delivered");
    assert_eq!(main.state().await.expect("state"), ShadowState::Done);
    assert_eq!(h.file("hello.txt"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_in_executing_tool_lets_the_current_tool_complete() {
    let rules = [("run_command", Permission::Allow), ("write_file", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    main.send(ShadowEvent::UserInput("sleep a little".to_owned())).await.expect("sent");
    let running = h.until_state("main", "ExecutingTool").await;
    assert_eq!(
        running,
        ShadowState::ExecutingTool { tool_name: "run_command".to_owned(), tool_use_id: "toolu_1".to_owned() }
    );
    main.interrupt("Esc").await.expect("interrupted");
    assert_eq!(h.until_state("main", "Done").await, ShadowState::Done);

    // The running command completed; the call after it never ran.
    assert_eq!(h.file("slept.txt").as_deref(), Some("slept\n"));
    assert_eq!(h.file("after.txt"), None);
    assert_eq!(conversation(&main).await[2..], [ok("toolu_1", "slept\n"), err("toolu_2", INTERRUPTED), interrupted()]);
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    assert_eq!(
        hops(&history)[hops(&history).len() - 3..],
        [
            ("Processing", Some("LlmEvent"), "ExecutingTool", Some("ExecuteTool")),
            // The interrupt left the tool's task running (it was spawned to
            // survive one): the configured interrupt event is the only
            // word of it the machine gets...
            ("ExecutingTool", Some("Interrupt"), "ExecutingTool", Some("InterruptAfterCurrentTool")),
            // ...and the tool's own result follows.
            ("ExecutingTool", Some("ToolResult"), "Done", Some("Interrupted")),
        ]
    );
    assert_eq!(states(&history), ["Idle", "Processing", "ExecutingTool", "Done"]);
    assert_eq!(history.interrupts().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn interrupt_in_waiting_for_user_input_ends_in_done() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    main.send(ShadowEvent::UserInput("ask me about the button".to_owned())).await.expect("sent");
    h.until_state("main", "WaitingForUserInput").await;
    main.interrupt("Esc").await.expect("interrupted");

    assert_eq!(main.state().await.expect("state"), ShadowState::Done);
    assert_eq!(conversation(&main).await[2..], [err("toolu_1", INTERRUPTED), interrupted()]);
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(states(&history), ["Idle", "Processing", "WaitingForUserInput", "Done"]);
}

#[tokio::test(start_paused = true)]
async fn interrupt_in_waiting_for_subagent_is_passed_on_to_the_child() {
    let rules = [("Task", Permission::Allow), ("read_file", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    main.send(ShadowEvent::UserInput("delegate the summary".to_owned())).await.expect("sent");
    h.until_state("main/toolu_1", "Processing").await;
    assert_eq!(
        main.state().await.expect("state"),
        ShadowState::WaitingForSubAgent { session_id: "main/toolu_1".to_owned() }
    );
    main.interrupt("Esc").await.expect("interrupted");
    assert_eq!(h.until_state("main", "Done").await, ShadowState::Done);

    // The child was interrupted too, then shut down and unregistered.
    assert!(h.outputs("main/toolu_1").any(|o| o == &Output::Interrupted));
    assert_eq!(h.published("main/toolu_1"), ["Processing", "Done"]);
    assert_eq!(h.runtime.sessions(), ["main"]);
    assert_eq!(conversation(&main).await[2..], [err("toolu_1", INTERRUPTED), interrupted()]);
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    let wait = "WaitingForSubAgent";
    assert_eq!(
        hops(&history)[hops(&history).len() - 3..],
        [
            (wait, Some("Interrupt"), wait, Some("InterruptSubAgent")),
            (wait, Some("Interrupt"), wait, Some("InterruptSubAgent")),
            (wait, Some("SubAgentFinished"), "Done", Some("Interrupted")),
        ]
    );
    assert_eq!(states(&history), ["Idle", "Processing", "ExecutingTool", wait, "Done"]);
}

#[tokio::test(start_paused = true)]
async fn interrupt_in_done_and_in_error_changes_nothing() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    // Done: after a denial.
    h.turn(&main, "write hello.txt", Policy { allow: false, ..APPROVE }).await;
    main.interrupt("Esc").await.expect("interrupted");
    assert_eq!(main.state().await.expect("state"), ShadowState::Done);
    // Error: the model fails.
    let failed = h.turn(&main, "attempt the impossible", APPROVE).await;
    let error = ShadowState::Error { message: "LLM call failed: server overloaded: scripted model".to_owned() };
    assert_eq!(failed, error);
    main.interrupt("Esc").await.expect("interrupted");
    assert_eq!(main.state().await.expect("state"), error, "the error stays until new input");
    // New input leaves Error.
    assert_eq!(h.turn(&main, "hello", APPROVE).await, ShadowState::Idle);
    assert_eq!(h.outputs("main").filter(|o| *o == &Output::NothingToInterrupt).count(), 2);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert!(hops(&history).contains(&("Done", Some("Interrupt"), "Done", Some("NothingToInterrupt"))));
    assert!(hops(&history).contains(&("Error", Some("Interrupt"), "Error", Some("NothingToInterrupt"))));
    assert_eq!(
        states(&history),
        ["Idle", "Processing", "WaitingForPermission", "Done", "Processing", "Error", "Processing", "Idle"]
    );
}
