//! What the Sketch agent tests share: a temporary git repository, the
//! agent started on it with a scripted or gated model, waits on its steps
//! and states, readers of its rounds and of `git` and `rustfmt`, and the
//! hops of the table's path named once.

// Each test file including this module uses a different part of it.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use agent_fsm_examples::sketch::{
    Budget, LlmReply, Message, NOTES_HEADING, Spend, ToolResult, USER_MESSAGES_HEADING, Usage,
};
use agent_fsm_examples::sketch_agent::{
    Hop, Llm, ScriptedLlm, SessionReport, SketchAgent, SketchEffects, Workspace, prepare_workspace,
};
use futures::future::{BoxFuture, FutureExt};
use tempfile::TempDir;

/// What each scripted reply costs: 1000 tokens and a cent.
pub(crate) fn usage() -> Spend {
    Spend::new(Usage::new(600, 400), 1)
}

/// A fresh git repository with one commit.
pub(crate) async fn repo() -> TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    prepare_workspace(dir.path()).await.expect("git repository");
    dir
}

pub(crate) fn effects(dir: &TempDir, llm: ScriptedLlm) -> SketchEffects {
    SketchEffects::new(Arc::new(llm), Workspace::new(dir.path()))
}

pub(crate) fn budget() -> Budget {
    Budget { max_tokens: Some(100_000), max_cost_cents: Some(500) }
}

pub(crate) async fn start(dir: &TempDir, llm: ScriptedLlm, budget: Budget) -> SketchAgent {
    SketchAgent::start(effects(dir, llm), budget, |_| {}).await.expect("agent started")
}

/// Waits until `done` holds (a deadline of 60 s, for a test that would
/// otherwise hang).
pub(crate) async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The scripted model, holding every reply until the test opens the gate:
/// what the test sends while the model "thinks" arrives first, however
/// slow the machine.
pub(crate) struct GatedLlm {
    pub(crate) inner: ScriptedLlm,
    pub(crate) gate: Arc<tokio::sync::Semaphore>,
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
pub(crate) async fn until_step_after(agent: &SketchAgent, steps: u64) {
    until("the next step", || agent.handle().steps() > steps).await;
}

/// Waits until the machine rests in `state`.
pub(crate) async fn until_state(agent: &SketchAgent, state: &str) {
    until(state, || agent.handle().status().to_string() == state).await;
}

/// What `rustfmt --edition 2024` makes of `source`, run in a directory of
/// its own (no `rustfmt.toml` above it, as for the workspace).
pub(crate) fn rustfmt_of(source: &str) -> String {
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

pub(crate) fn git(dir: &TempDir, args: &[&str]) -> String {
    let output = std::process::Command::new("git").args(args).current_dir(dir.path()).output().expect("git runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A tool round as recorded in the conversation: its results in call
/// order, and the user message that followed them, if any.
#[derive(Debug)]
pub(crate) struct Round<'a> {
    pub(crate) results: Vec<ToolResult>,
    pub(crate) note: Option<&'a str>,
}

/// The tool rounds of the conversation, in order.
pub(crate) fn tool_results(report: &SessionReport) -> Vec<Round<'_>> {
    rounds(&report.context.conversation)
}

pub(crate) fn rounds(conversation: &[Message]) -> Vec<Round<'_>> {
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

pub(crate) fn count(hops: &[Hop], hop: Hop) -> usize {
    hops.iter().filter(|h| **h == hop).count()
}

pub(crate) fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

// The hops every turn starts with, and the ones every tool request takes.
pub(crate) const START: Hop = ("Ready", Some("Start"), "WaitingForUserInput", Some("AwaitUserInput"));
pub(crate) const SEND: Hop = ("WaitingForUserInput", Some("UserMessage"), "SendingToLlm", Some("SendToLlm"));
pub(crate) const REPLY: Hop = ("SendingToLlm", Some("LlmResponse"), "ProcessingLlmResponse", None);
pub(crate) const TOOLS_REQUESTED: [Hop; 3] = [
    ("ProcessingLlmResponse", None, "ToolUseRequested", None),
    ("ToolUseRequested", None, "CheckingForCancellation", None),
    ("CheckingForCancellation", None, "RunningTool", Some("RunTools")),
];
pub(crate) const TOOL_DONE: Hop = ("RunningTool", Some("ToolResult"), "CheckingGitCommits", Some("CheckGitCommits"));
pub(crate) const NO_COMMIT: Hop = ("CheckingGitCommits", Some("GitChecked"), "CheckingBudget", None);
pub(crate) const SEND_RESULTS: [Hop; 2] = [
    ("CheckingBudget", None, "GatheringAdditionalMessages", None),
    ("GatheringAdditionalMessages", None, "SendingToolResults", Some("SendToLlm")),
];
pub(crate) const ANSWER: [Hop; 3] = [
    ("SendingToolResults", Some("LlmResponse"), "ProcessingLlmResponse", None),
    ("ProcessingLlmResponse", None, "EndOfTurn", None),
    ("EndOfTurn", None, "WaitingForUserInput", Some("EndTurn")),
];
pub(crate) const ERROR_ENDS_TURN: Hop = ("Error", None, "WaitingForUserInput", Some("ShowError"));

/// Concatenates groups of hops.
pub(crate) fn path(groups: &[&[Hop]]) -> Vec<Hop> {
    groups.concat()
}
