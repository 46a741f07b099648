//! The Sketch agent end to end, the session and its cancellation: the
//! scripted session commits and `rustfmt` formats the committed file, the
//! recorded history is exactly the table's path, and a cancel before or
//! during the tool run (or the executor's interrupt) ends the turn as the
//! module docs say.
//! Real time: the Sketch machine under the executor, with the scripted
//! model, real tools in a temporary git repository, the real `git` check
//! and the real `rustfmt`. Each test reads what happened from the runtime's
//! history (`SessionReport`), never from bookkeeping of its own.

#[path = "support/sketch_agent.rs"]
mod sketch_agent;

use std::sync::Arc;
use std::time::Duration;

use agent_fsm::runtime::replay;
use agent_fsm::{Named, Recorder};
use agent_fsm_examples::sketch::{
    CANCELLED_RESULT, Commit, FormatReport, Message, Sketch, SketchContext, SketchEvent, cancelled_results, round_note,
    tool_error,
};
use agent_fsm_examples::sketch_agent::{
    DEMO_PROMPT, Hop, Output, ScriptedLlm, SessionReport, SketchAgent, SketchEffects, UNFORMATTED_LIB_RS, Workspace,
    head, run_session,
};
use sketch_agent::*;
use tempfile::TempDir;

// ------------------------------------------------- (1) the scripted session

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_session_commits_and_rustfmt_formats_the_committed_file() {
    let dir = repo().await;
    let report = run_session(effects(&dir, ScriptedLlm::instant(usage())), budget(), &[DEMO_PROMPT], |_| {})
        .await
        .expect("session");

    // The commit holds the model's badly formatted file; the working tree
    // holds rustfmt's output of it.
    assert_eq!(git(&dir, &["show", "HEAD:src/lib.rs"]), UNFORMATTED_LIB_RS);
    let formatted = std::fs::read_to_string(dir.path().join("src/lib.rs")).expect("src/lib.rs");
    assert_eq!(formatted, rustfmt_of(UNFORMATTED_LIB_RS));
    assert_ne!(formatted, UNFORMATTED_LIB_RS);
    assert!(formatted.starts_with("pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"), "{formatted}");

    // The machine went through the formatters, for the file of the commit
    // the real git check found.
    let sha: String = head(dir.path()).await.expect("git").expect("a commit").chars().take(10).collect();
    assert_eq!(
        count(
            &report.hops,
            ("CheckingGitCommits", Some("GitChecked"), "RunningAutoformatters", Some("RunAutoformatters"))
        ),
        1
    );
    assert_eq!(count(&report.hops, ("RunningAutoformatters", Some("FormattersFinished"), "CheckingBudget", None)), 1);
    assert!(report.events.contains(&SketchEvent::GitChecked(vec![Commit {
        sha: sha.clone(),
        changed_files: strings(&["src/lib.rs"])
    }])));
    assert!(report.events.contains(&SketchEvent::FormattersFinished(FormatReport {
        reformatted: strings(&["src/lib.rs"]),
        failures: Vec::new()
    })));
    assert!(
        report.history.time_in(agent_fsm_examples::sketch::machine::StateKind::RunningAutoformatters) > Duration::ZERO
    );

    // The model was told, and said so.
    let Some(Round { note, .. }) = tool_results(&report).pop() else { panic!("no tool results") };
    let notes = [format!("new commits: {sha}"), "autoformatters rewrote: src/lib.rs".to_owned()];
    assert_eq!(note, round_note(&notes, &[]).as_deref());
    let Some(Output::Answer(answer)) = report.outputs.iter().rev().find(|o| matches!(o, Output::Answer(_))) else {
        panic!("no answer")
    };
    assert!(answer.contains("autoformatters rewrote: src/lib.rs"), "{answer}");
    assert_eq!(report.final_state, "WaitingForUserInput");
}

// --------------------------------------- (2) the history is the table's path

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recorded_history_is_exactly_the_tables_path_for_the_session() {
    let dir = repo().await;
    let report = run_session(effects(&dir, ScriptedLlm::instant(usage())), budget(), &[DEMO_PROMPT], |_| {})
        .await
        .expect("session");

    let expected = path(&[
        &[START, SEND, REPLY],
        // write_file: no commit, so no formatter
        &TOOLS_REQUESTED,
        &[TOOL_DONE, NO_COMMIT],
        &SEND_RESULTS,
        &[("SendingToolResults", Some("LlmResponse"), "ProcessingLlmResponse", None)],
        // git commit: a new commit, so rustfmt runs
        &TOOLS_REQUESTED,
        &[
            TOOL_DONE,
            ("CheckingGitCommits", Some("GitChecked"), "RunningAutoformatters", Some("RunAutoformatters")),
            ("RunningAutoformatters", Some("FormattersFinished"), "CheckingBudget", None),
        ],
        &SEND_RESULTS,
        // the answer
        &ANSWER,
    ]);
    assert_eq!(report.hops, expected);

    // One unbroken path, every hop a row of the table.
    for pair in report.hops.windows(2) {
        assert_eq!(pair[0].2, pair[1].0, "the history jumps between {:?} and {:?}", pair[0], pair[1]);
    }
    for t in report.history.transitions() {
        let row = &Sketch::DESCRIPTION.transitions[t.row];
        assert_eq!(
            (row.from, row.event, row.to, row.action),
            (t.from.name(), t.event.map(|e| e.name()), t.to.name(), t.action.map(|a| a.name()))
        );
    }

    // The events the effects produced are the ones the path needs, and a
    // fresh machine fed them takes exactly the recorded hops: nothing
    // recorded that the table did not do.
    let names: Vec<&str> = report.events.iter().map(Named::name).collect();
    assert_eq!(
        names,
        [
            "Start",
            "UserMessage",
            "LlmResponse",
            "ToolResult",
            "GitChecked",
            "LlmResponse",
            "ToolResult",
            "GitChecked",
            "FormattersFinished",
            "LlmResponse"
        ]
    );
    let mut fresh = Sketch::new(SketchContext::new(budget()));
    let mut recorder = Recorder::default();
    for event in report.events.clone() {
        let _ = fresh.handle_event_with(event, &mut recorder);
    }
    assert_eq!(recorder.hop_names(), report.hops);
    let log = report.history.events().expect("event log");
    replay(&mut Sketch::new(SketchContext::new(budget())), log).expect("the log replays");

    // And the reverse: everything the agent did is in the history. Each
    // model call, tool call and formatter run the effects started is a hop
    // with that action, and the states timed are exactly the states visited.
    let outputs = |f: fn(&Output) -> bool| report.outputs.iter().filter(|o| f(o)).count();
    let actions = |name: &str| report.hops.iter().filter(|h| h.3 == Some(name)).count();
    assert_eq!(outputs(|o| matches!(o, Output::Sent(_))), actions("SendToLlm"));
    assert_eq!(outputs(|o| matches!(o, Output::ToolStarted { .. })), actions("RunTools"));
    assert_eq!(outputs(|o| matches!(o, Output::Formatting(_))), actions("RunAutoformatters"));
    let mut visited: Vec<&str> = report.hops.iter().flat_map(|h| [h.0, h.2]).collect();
    visited.sort_unstable();
    visited.dedup();
    let mut timed: Vec<&str> = report.time_in_state.iter().map(|t| t.0).collect();
    timed.sort_unstable();
    assert_eq!(timed, visited);
    // Transient checks are in the history, with no time spent in them.
    for check in ["ProcessingLlmResponse", "ToolUseRequested", "CheckingForCancellation", "CheckingBudget"] {
        let (_, entries, total) = report.time_in_state.iter().find(|t| t.0 == check).copied().expect("timed");
        assert!(entries > 0 && total == Duration::ZERO, "{check}: {entries}x {total:?}");
    }
}

// ---------------------------------------------------------- (3) cancellation

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_before_the_tool_run_gives_every_requested_call_a_synthetic_result() {
    let dir = repo().await;
    // The model replies only once the cancel has been taken.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let llm = GatedLlm { inner: ScriptedLlm::instant(usage()), gate: Arc::clone(&gate) };
    let effects = SketchEffects::new(Arc::new(llm), Workspace::new(dir.path()));
    let agent = SketchAgent::start(effects, budget(), |_| {}).await.expect("agent started");
    agent.say("multi_bash: echo one > one.txt ||| echo two > two.txt").await.expect("sent");
    until_state(&agent, "SendingToLlm").await;
    let steps = agent.handle().steps();
    agent.cancel().await.expect("sent");
    until_step_after(&agent, steps).await;
    gate.add_permits(tokio::sync::Semaphore::MAX_PERMITS);
    let report = agent.finish().await.expect("report");

    assert_eq!(
        report.hops,
        vec![
            START,
            SEND,
            ("SendingToLlm", Some("Cancel"), "SendingToLlm", Some("CancelInFlight")),
            REPLY,
            ("ProcessingLlmResponse", None, "ToolUseRequested", None),
            ("ToolUseRequested", None, "CheckingForCancellation", None),
            ("CheckingForCancellation", None, "Cancelled", None),
            ("Cancelled", None, "WaitingForUserInput", Some("TurnCancelled")),
        ]
    );
    // Both calls were answered, with the synthetic result, and neither ran.
    let Some(Message::Assistant(reply)) = report.context.conversation.get(1) else { panic!("no assistant message") };
    let tool_calls = &reply.tool_calls;
    assert_eq!(tool_calls.len(), 2);
    assert_eq!(report.context.conversation[2..], cancelled_results(tool_calls));
    let rounds = tool_results(&report);
    let [Round { results, note: None }] = rounds.as_slice() else { panic!("one round, no note") };
    assert!(results.iter().all(|r| r.is_error && r.content == CANCELLED_RESULT));
    let ids: Vec<String> = tool_calls.iter().map(|c| c.id.clone()).collect();
    assert!(report.outputs.contains(&Output::Cancelled(ids)));
    assert!(!report.outputs.iter().any(|o| matches!(o, Output::ToolStarted { .. })));
    assert!(!dir.path().join("one.txt").exists() && !dir.path().join("two.txt").exists());
    // The flag belonged to that turn.
    assert!(!report.context.cancel_requested);
}

/// The hops of a `bash` turn cancelled while its tool runs, from the cancel on.
const CANCELLED_DURING_RUN: [Hop; 5] = [
    TOOL_DONE,
    NO_COMMIT,
    ("CheckingBudget", None, "GatheringAdditionalMessages", None),
    ("GatheringAdditionalMessages", None, "Error", None),
    ERROR_ENDS_TURN,
];

/// The single tool call of the conversation got the cancelled result.
fn assert_tool_cancelled(report: &SessionReport, dir: &TempDir) {
    let results = tool_results(report);
    let [Round { results, note }] = results.as_slice() else { panic!("one tool round expected: {results:?}") };
    assert_eq!(results, &vec![tool_error("toolu_01_1", CANCELLED_RESULT)]);
    assert_eq!(*note, None);
    assert!(!dir.path().join("late.txt").exists(), "the killed command went on");
    assert!(
        report.outputs.contains(&Output::Error("cancelled during the tool run: results recorded, not sent".to_owned()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_the_tool_runs_kills_it_and_ends_the_turn_in_error() {
    let dir = repo().await;
    let agent = start(&dir, ScriptedLlm::instant(usage()), budget()).await;
    // Killed, the command never writes `late.txt` (checked below).
    agent.say("bash: sleep 5; echo late > late.txt").await.expect("sent");
    until_state(&agent, "RunningTool").await;
    agent.cancel().await.expect("sent");
    let report = agent.finish().await.expect("report");

    let expected = path(&[
        &[START, SEND, REPLY],
        &TOOLS_REQUESTED,
        &[("RunningTool", Some("Cancel"), "RunningTool", Some("CancelInFlight"))],
        &CANCELLED_DURING_RUN,
    ]);
    assert_eq!(report.hops, expected);
    assert_tool_cancelled(&report, &dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_executors_interrupt_is_the_cancel_event() {
    let dir = repo().await;
    let agent = start(&dir, ScriptedLlm::instant(usage()), budget()).await;
    agent.say("bash: sleep 5; echo late > late.txt").await.expect("sent");
    until_state(&agent, "RunningTool").await;
    agent.interrupt("the user pressed stop").await.expect("interrupted");
    let report = agent.finish().await.expect("report");

    // The interrupt cancels the tool task first: its cancelled result moves
    // the machine on (the action of that step is not performed), then the
    // Cancel arrives and the effects start the git check the state awaits.
    let expected = path(&[
        &[START, SEND, REPLY],
        &TOOLS_REQUESTED,
        &[TOOL_DONE, ("CheckingGitCommits", Some("Cancel"), "CheckingGitCommits", Some("CancelInFlight"))],
        &CANCELLED_DURING_RUN[1..],
    ]);
    assert_eq!(report.hops, expected);
    assert_tool_cancelled(&report, &dir);
    let causes: Vec<&str> = report.history.interrupts().map(|i| &*i.cause).collect();
    assert_eq!(causes, ["the user pressed stop"]);
}
