//! The Sketch agent end to end, its limits: an exceeded budget, a message
//! sent while a tool runs, every error the diagram allows, a failed git
//! check, and tools that stay inside the workspace and time out.
//! Real time: the Sketch machine under the executor, with the scripted
//! model, real tools in a temporary git repository, the real `git` check
//! and the real `rustfmt`. Each test reads what happened from the runtime's
//! history (`SessionReport`), never from bookkeeping of its own.

#[path = "support/sketch_agent.rs"]
mod sketch_agent;

use std::time::Duration;

use agent_fsm_examples::sketch::{
    Budget, Message, NOT_EXECUTED, SketchContext, Spend, ToolCall, Usage, round_note, tool_error, tool_ok,
};
use agent_fsm_examples::sketch_agent::{Output, ScriptedLlm, Workspace, run_session};
use serde_json::json;
use sketch_agent::*;

// ---------------------------------------------------------------- (4) budget

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exceeded_budget_ends_the_turn_with_a_message_and_stays_exceeded() {
    let dir = repo().await;
    // One reply spends the whole token budget.
    let tight = Budget { max_tokens: Some(1_000), max_cost_cents: None };
    let agent = start(&dir, ScriptedLlm::instant(usage()), tight).await;

    agent.say("bash: echo hi").await.expect("sent");
    agent.wait_idle().await.expect("idle");
    let ctx = agent.handle().inspect(|m| m.context().clone()).await.expect("context");
    // Nothing was reset, and the results are recorded but were not sent.
    assert_eq!(ctx.spent, usage());
    assert_eq!(ctx.budget, tight);
    assert!(ctx.over_budget());
    assert!(matches!(ctx.conversation.last(), Some(Message::Tool(_))));
    assert_eq!(rounds(&ctx.conversation).len(), 1);

    // Still exceeded: the next message is refused with the same words.
    agent.say("say: are you there?").await.expect("sent");
    // Only an explicit raise lets the session go on.
    agent.raise_budget(budget()).await.expect("sent");
    agent.say("say: back again").await.expect("sent");
    let report = agent.finish().await.expect("report");

    let expected = path(&[
        &[START, SEND, REPLY],
        &TOOLS_REQUESTED,
        &[
            TOOL_DONE,
            NO_COMMIT,
            ("CheckingBudget", None, "BudgetExceeded", None),
            ("BudgetExceeded", None, "WaitingForUserInput", Some("ShowBudgetExceeded")),
            // refused at the start of the next turn
            ("WaitingForUserInput", Some("UserMessage"), "Error", None),
            ERROR_ENDS_TURN,
            ("WaitingForUserInput", Some("RaiseBudget"), "WaitingForUserInput", Some("BudgetRaised")),
            SEND,
            REPLY,
            ("ProcessingLlmResponse", None, "EndOfTurn", None),
            ("EndOfTurn", None, "WaitingForUserInput", Some("EndTurn")),
        ],
    ]);
    assert_eq!(report.hops, expected);
    let message = SketchContext { spent: usage(), ..SketchContext::new(tight) }.budget_message();
    assert!(message.starts_with("budget exceeded: spent 1000 tokens"), "{message}");
    let shown: Vec<&Output> = report
        .outputs
        .iter()
        .filter(|o| matches!(o, Output::BudgetExceeded(_) | Output::Error(_) | Output::Answer(_)))
        .collect();
    assert_eq!(
        shown,
        [&Output::BudgetExceeded(message.clone()), &Output::Error(message), &Output::Answer("back again".to_owned())]
    );
    assert_eq!(report.context.spent, Spend::new(Usage::new(1_200, 800), 2));
    assert_eq!(report.context.spent.tokens(), 2_000);
}

// -------------------------------------------- (5) messages during a tool run

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_while_the_tool_runs_goes_with_the_tool_results() {
    let dir = repo().await;
    let agent = start(&dir, ScriptedLlm::instant(usage()), budget()).await;
    // The command ends only once the message has been taken.
    agent.say("bash: while [ ! -e go ]; do sleep 0.01; done; echo done").await.expect("sent");
    until_state(&agent, "RunningTool").await;
    let steps = agent.handle().steps();
    agent.say("also update the README").await.expect("sent");
    until_step_after(&agent, steps).await;
    std::fs::write(dir.path().join("go"), "").expect("go");
    let report = agent.finish().await.expect("report");

    let expected = path(&[
        &[START, SEND, REPLY],
        &TOOLS_REQUESTED,
        &[("RunningTool", Some("UserMessage"), "RunningTool", Some("MessageQueued")), TOOL_DONE, NO_COMMIT],
        &SEND_RESULTS,
        &ANSWER,
    ]);
    // One turn: the message did not start another one.
    assert_eq!(report.hops, expected);
    let results = tool_results(&report);
    let [Round { results, note }] = results.as_slice() else { panic!("one tool round expected: {results:?}") };
    assert_eq!(results, &vec![tool_ok("toolu_01_1", "done\n")]);
    assert_eq!(*note, round_note(&[], &strings(&["also update the README"])).as_deref());
    assert!(report.context.queued.is_empty());
    assert!(report.outputs.contains(&Output::Queued(1)));
    // The model read it.
    let Some(Output::Answer(answer)) = report.outputs.last() else { panic!("no answer: {:?}", report.outputs) };
    assert_eq!(
        answer,
        "Tool results: toolu_01_1 ok: done. Read: The user wrote while the tools ran: / also update the README."
    );
    // What the user saw go to the model: the prompt, then the result with
    // the note.
    let sent: Vec<&str> = report
        .outputs
        .iter()
        .filter_map(|o| match o {
            Output::Sent(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        sent,
        [
            "user: bash: while [ ! -e go ]; do sleep 0.01; done; echo done",
            "tool results: toolu_01_1 ok; user: The user wrote while the tools ran: / also update the README",
        ]
    );
}

// ---------------------------------------------------------------- (6) errors

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_the_diagram_allows_ends_the_turn_with_a_message() {
    let dir = repo().await;
    let agent = start(&dir, ScriptedLlm::instant(usage()), budget()).await;
    for prompt in ["   ", "error: invalid API key", "maxTokens", "bash_then_fail: echo hi"] {
        agent.say(prompt).await.expect("sent");
        agent.wait_idle().await.expect("idle");
    }
    // The tool runner cannot work without its workspace.
    std::fs::remove_dir_all(dir.path()).expect("removed");
    agent.say("bash: echo hi").await.expect("sent");
    let report = agent.finish().await.expect("report");

    let expected = path(&[
        &[START],
        // an empty message
        &[("WaitingForUserInput", Some("UserMessage"), "Error", None), ERROR_ENDS_TURN],
        // the model call fails
        &[SEND, ("SendingToLlm", Some("LlmError"), "Error", None), ERROR_ENDS_TURN],
        // the reply is cut off
        &[SEND, REPLY, ("ProcessingLlmResponse", None, "Error", None), ERROR_ENDS_TURN],
        // the call with the tool results fails
        &[SEND, REPLY],
        &TOOLS_REQUESTED,
        &[TOOL_DONE, NO_COMMIT],
        &SEND_RESULTS,
        &[("SendingToolResults", Some("LlmError"), "Error", None), ERROR_ENDS_TURN],
        // the tool runner fails
        &[SEND, REPLY],
        &TOOLS_REQUESTED,
        &[("RunningTool", Some("ToolRunFailed"), "Error", None), ERROR_ENDS_TURN],
    ]);
    assert_eq!(report.hops, expected);
    let errors: Vec<&str> = report
        .outputs
        .iter()
        .filter_map(|o| match o {
            Output::Error(e) => Some(e.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 5);
    assert_eq!(errors[0], "empty message: nothing to send");
    assert_eq!(errors[1], "LLM call failed: not authorized: invalid API key");
    assert_eq!(errors[2], "the reply was cut off at its token limit");
    assert_eq!(errors[3], "LLM call failed: server overloaded: scripted model");
    assert!(errors[4].starts_with("tool run failed: the workspace"), "{}", errors[4]);
    // The unanswered call still got a result, so the conversation stays valid.
    assert_eq!(report.context.conversation.last(), Some(&Message::Tool(tool_error("toolu_02_1", NOT_EXECUTED))));
    let last_round = tool_results(&report).pop().expect("a round");
    assert_eq!((last_round.results.len(), last_round.note), (1, None));
    assert_eq!(report.final_state, "WaitingForUserInput");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_git_check_becomes_a_note_for_the_model() {
    // A workspace that is not a git repository.
    let dir = tempfile::tempdir().expect("temp dir");
    let report = run_session(effects(&dir, ScriptedLlm::instant(usage())), budget(), &["bash: echo hi"], |_| {})
        .await
        .expect("session");
    let expected = path(&[
        &[START, SEND, REPLY],
        &TOOLS_REQUESTED,
        &[TOOL_DONE, ("CheckingGitCommits", Some("GitCheckFailed"), "CheckingBudget", None)],
        &SEND_RESULTS,
        &ANSWER,
    ]);
    assert_eq!(report.hops, expected);
    let rounds = tool_results(&report);
    let Some(Round { note: Some(note), .. }) = rounds.first() else { panic!("no note") };
    let expected = "Notes from the agent on the tool round:\n- git check failed: `git rev-parse HEAD`";
    assert!(note.starts_with(expected), "{note}");
    assert_eq!(note.lines().filter(|l| l.starts_with("- ")).count(), 1, "{note}");
}

// ----------------------------------------------------------------- (7) tools

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_stay_inside_the_workspace_and_commands_time_out() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut ws = Workspace::new(dir.path());
    let call =
        |name: &str, arguments: serde_json::Value| ToolCall { id: "1".to_owned(), name: name.to_owned(), arguments };
    let escape = ws.run(&call("read_file", json!({ "path": "../etc/passwd" }))).await;
    assert!(escape.expect_err("refused").contains("not a path inside the workspace"));
    assert!(ws.run(&call("write_file", json!({ "path": "/tmp/x", "content": "" }))).await.is_err());
    let written = ws.run(&call("write_file", json!({ "path": "a/b.txt", "content": "hi" }))).await;
    assert_eq!(written, Ok("wrote 2 bytes to a/b.txt".to_owned()));
    assert_eq!(ws.run(&call("read_file", json!({ "path": "a/b.txt" }))).await, Ok("hi".to_owned()));
    assert_eq!(ws.run(&call("bash", json!({ "command": "cat a/b.txt" }))).await, Ok("hi".to_owned()));
    assert!(ws.run(&call("bash", json!({ "command": "exit 3" }))).await.expect_err("fails").starts_with("exit 3"));
    // A short limit for the command meant to outlive it only: the quick
    // ones above, under the default, finish however loaded the machine.
    ws.command_timeout = Duration::from_millis(200);
    let slow = ws.run(&call("bash", json!({ "command": "sleep 5" }))).await;
    assert!(slow.expect_err("timed out").contains("timed out"));
    assert!(ws.run(&call("rm_rf", json!({}))).await.expect_err("unknown").contains("unknown tool"));
    let not_an_object = ws.run(&call("bash", json!("cat a/b.txt"))).await;
    assert!(not_an_object.expect_err("refused").contains("not a JSON object"));
}
