//! The Sketch agent end to end, on real time: the Sketch machine under the
//! executor, with the scripted model, real tools in a temporary git
//! repository, the real `git` check and the real `rustfmt`. Each test reads
//! what happened from the runtime's history (`SessionReport`), never from
//! bookkeeping of its own.

use std::sync::Arc;
use std::time::Duration;

use agent_fsm::runtime::replay;
use agent_fsm::{Named, Recorder};
use agent_fsm_examples::sketch::{
    Budget, CANCELLED_RESULT, Commit, FormatReport, LlmReply, Message, NOT_EXECUTED, NOTES_HEADING, Sketch,
    SketchContext, SketchEvent, Spend, ToolCall, ToolResult, USER_MESSAGES_HEADING, Usage, cancelled_results,
    round_note, tool_error, tool_ok,
};
use agent_fsm_examples::sketch_agent::{
    DEMO_PROMPT, Hop, Llm, Output, ScriptedLlm, SessionReport, SketchAgent, SketchEffects, UNFORMATTED_LIB_RS,
    Workspace, head, prepare_workspace, run_session,
};
use futures::future::{BoxFuture, FutureExt};
use serde_json::json;
use tempfile::TempDir;

// ---------------------------------------------------------------- helpers

/// What each scripted reply costs: 1000 tokens and a cent.
fn usage() -> Spend {
    Spend::new(Usage::new(600, 400), 1)
}

/// A fresh git repository with one commit.
async fn repo() -> TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    prepare_workspace(dir.path()).await.expect("git repository");
    dir
}

fn effects(dir: &TempDir, llm: ScriptedLlm) -> SketchEffects {
    SketchEffects::new(Arc::new(llm), Workspace::new(dir.path()))
}

fn budget() -> Budget {
    Budget { max_tokens: Some(100_000), max_cost_cents: Some(500) }
}

async fn start(dir: &TempDir, llm: ScriptedLlm, budget: Budget) -> SketchAgent {
    SketchAgent::start(effects(dir, llm), budget, |_| {}).await.expect("agent started")
}

/// Waits until `done` holds (a deadline of 60 s, for a test that would
/// otherwise hang).
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The scripted model, holding every reply until the test opens the gate:
/// what the test sends while the model "thinks" arrives first, however
/// slow the machine.
struct GatedLlm {
    inner: ScriptedLlm,
    gate: Arc<tokio::sync::Semaphore>,
}

impl Llm for GatedLlm {
    fn reply(&self, conversation: Vec<Message>) -> BoxFuture<'static, Result<LlmReply, agent_fsm::llm::ProviderError>> {
        let reply = self.inner.reply(conversation);
        let gate = Arc::clone(&self.gate);
        async move {
            let _open = gate.acquire().await;
            reply.await
        }
        .boxed()
    }
}

/// Waits until the machine has taken another step after `steps`.
async fn until_step_after(agent: &SketchAgent, steps: u64) {
    until("the next step", || agent.handle().steps() > steps).await;
}

/// Waits until the machine rests in `state`.
async fn until_state(agent: &SketchAgent, state: &str) {
    until(state, || agent.handle().status().to_string() == state).await;
}

/// What `rustfmt --edition 2024` makes of `source`, run in a directory of
/// its own (no `rustfmt.toml` above it, as for the workspace).
fn rustfmt_of(source: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("lib.rs");
    std::fs::write(&file, source).expect("write");
    let status = std::process::Command::new("rustfmt")
        .args(["--edition", "2024"])
        .arg(&file)
        .current_dir(dir.path())
        .status()
        .expect("rustfmt runs");
    assert!(status.success());
    std::fs::read_to_string(file).expect("read")
}

fn git(dir: &TempDir, args: &[&str]) -> String {
    let output = std::process::Command::new("git").args(args).current_dir(dir.path()).output().expect("git runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A tool round as recorded in the conversation: its results in call
/// order, and the user message that followed them, if any.
#[derive(Debug)]
struct Round<'a> {
    results: Vec<ToolResult>,
    note: Option<&'a str>,
}

/// The tool rounds of the conversation, in order.
fn tool_results(report: &SessionReport) -> Vec<Round<'_>> {
    rounds(&report.context.conversation)
}

fn rounds(conversation: &[Message]) -> Vec<Round<'_>> {
    let mut rounds: Vec<Round<'_>> = Vec::new();
    let mut previous_was_tool = false;
    for message in conversation {
        match message {
            Message::Tool(result) if previous_was_tool => {
                rounds.last_mut().expect("a round").results.push(result.clone());
            }
            Message::Tool(result) => rounds.push(Round { results: vec![result.clone()], note: None }),
            // A prompt may follow the results of a turn that ended early:
            // only the note opens with its headings.
            Message::User { content }
                if previous_was_tool
                    && (content.starts_with(NOTES_HEADING) || content.starts_with(USER_MESSAGES_HEADING)) =>
            {
                rounds.last_mut().expect("a round").note = Some(content);
            }
            _ => {}
        }
        previous_was_tool = matches!(message, Message::Tool(_));
    }
    rounds
}

fn count(hops: &[Hop], hop: Hop) -> usize {
    hops.iter().filter(|h| **h == hop).count()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

// The hops every turn starts with, and the ones every tool request takes.
const START: Hop = ("Ready", Some("Start"), "WaitingForUserInput", Some("AwaitUserInput"));
const SEND: Hop = ("WaitingForUserInput", Some("UserMessage"), "SendingToLlm", Some("SendToLlm"));
const REPLY: Hop = ("SendingToLlm", Some("LlmResponse"), "ProcessingLlmResponse", None);
const TOOLS_REQUESTED: [Hop; 3] = [
    ("ProcessingLlmResponse", None, "ToolUseRequested", None),
    ("ToolUseRequested", None, "CheckingForCancellation", None),
    ("CheckingForCancellation", None, "RunningTool", Some("RunTools")),
];
const TOOL_DONE: Hop = ("RunningTool", Some("ToolResult"), "CheckingGitCommits", Some("CheckGitCommits"));
const NO_COMMIT: Hop = ("CheckingGitCommits", Some("GitChecked"), "CheckingBudget", None);
const SEND_RESULTS: [Hop; 2] = [
    ("CheckingBudget", None, "GatheringAdditionalMessages", None),
    ("GatheringAdditionalMessages", None, "SendingToolResults", Some("SendToLlm")),
];
const ANSWER: [Hop; 3] = [
    ("SendingToolResults", Some("LlmResponse"), "ProcessingLlmResponse", None),
    ("ProcessingLlmResponse", None, "EndOfTurn", None),
    ("EndOfTurn", None, "WaitingForUserInput", Some("EndTurn")),
];
const ERROR_ENDS_TURN: Hop = ("Error", None, "WaitingForUserInput", Some("ShowError"));

/// Concatenates groups of hops.
fn path(groups: &[&[Hop]]) -> Vec<Hop> {
    groups.concat()
}

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
    ws.command_timeout = Duration::from_millis(200);
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
    let slow = ws.run(&call("bash", json!({ "command": "sleep 5" }))).await;
    assert!(slow.expect_err("timed out").contains("timed out"));
    assert!(ws.run(&call("rm_rf", json!({}))).await.expect_err("unknown").contains("unknown tool"));
    let not_an_object = ws.run(&call("bash", json!("cat a/b.txt"))).await;
    assert!(not_an_object.expect_err("refused").contains("not a JSON object"));
}
