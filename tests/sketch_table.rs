//! The Sketch table against its reference diagram: one test per edge of the
//! diagram (named `edge_<from>__<to>`), each driving the pure machine with
//! the events that make that edge happen and checking every hop the
//! observer saw, the resting state and the action; the table's edges
//! against [`REFERENCE_EDGES`]; a scripted session's full history; and the
//! cancellation, budget and message-gathering promises of the module docs.

// The tests are named after the edge they cover, `edge_<from>__<to>`: the
// double underscore separates the two states.
#![allow(non_snake_case)]

use std::collections::BTreeSet;

use agent_fsm::llm::{ErrorKind, ProviderError};
use agent_fsm::{HopNames, Recorder};
use agent_fsm_examples::sketch::{
    AssistantMessage, Budget, CANCELLED_RESULT, Commit, FormatReport, LlmReply, Message, NOT_EXECUTED, REFERENCE_EDGES,
    Sketch, SketchAction, SketchContext, SketchEvent, SketchState, Spend, StopReason, ToolCall, ToolRound, Usage,
    round_note, tool_error, tool_ok,
};
use serde_json::json;

// ---------------------------------------------------------------- helpers

/// One event from `state`: the machine after it, every hop, the action.
fn run(state: SketchState, ctx: SketchContext, event: SketchEvent) -> (Sketch, Vec<HopNames>, SketchAction) {
    let mut m = Sketch::with_state(state, ctx);
    let mut rec = Recorder::default();
    let action = m.handle_event_with(event, &mut rec);
    assert_eq!(rec.unhandled, Vec::new(), "the event was refused");
    (m, rec.hop_names(), action)
}

/// The edge `from -> to` is one of the hops, exactly once.
fn assert_edge(hops: &[HopNames], from: &str, to: &str) {
    let n = hops.iter().filter(|h| h.0 == from && h.2 == to).count();
    assert_eq!(n, 1, "edge {from} -> {to} taken {n} times in {hops:?}");
}

fn call(id: &str) -> ToolCall {
    ToolCall { id: id.to_owned(), name: "bash".to_owned(), arguments: json!({ "command": format!("echo {id}") }) }
}

/// `tokens` spent, a third of them written, at a cent per hundred.
fn spend(tokens: u64) -> Spend {
    Spend::new(Usage::new(tokens - tokens / 3, tokens / 3), tokens / 100)
}

fn budget() -> Budget {
    Budget { max_tokens: Some(10_000), max_cost_cents: Some(500) }
}

fn ctx() -> SketchContext {
    SketchContext::new(budget())
}

/// A context that has spent its whole token budget.
fn spent_ctx() -> SketchContext {
    SketchContext { spent: spend(10_000), ..ctx() }
}

fn text_reply(text: &str) -> SketchEvent {
    SketchEvent::LlmResponse(LlmReply::text(text, spend(100)))
}

fn tools_reply(ids: &[&str]) -> SketchEvent {
    SketchEvent::LlmResponse(LlmReply::tools(ids.iter().map(|id| call(id)).collect(), spend(100)))
}

fn assistant_tools(ids: &[&str]) -> Message {
    Message::Assistant(AssistantMessage { text: String::new(), tool_calls: ids.iter().map(|id| call(id)).collect() })
}

/// A round of `ids` where every call answered `ok <id>`.
fn answered(ids: &[&str]) -> ToolRound {
    let mut round = ToolRound::new(ids.iter().map(|id| call(id)).collect());
    for id in ids {
        round.record(tool_ok(*id, format!("ok {id}")));
    }
    round
}

/// A round's messages where every call of `ids` answered `ok <id>`: one
/// tool message each, then the note, if any.
fn results_message(ids: &[&str], notes: &[&str], user_messages: &[&str]) -> Vec<Message> {
    let mut messages: Vec<Message> = ids.iter().map(|id| Message::tool_result(*id, format!("ok {id}"))).collect();
    messages.extend(round_note(&strings(notes), &strings(user_messages)).map(Message::user));
    messages
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

// -------------------------------------------------------- one test per edge

#[test]
fn edge_ready__waiting_for_user_input() {
    let (m, hops, action) = run(SketchState::Ready, ctx(), SketchEvent::Start);
    assert_edge(&hops, "Ready", "WaitingForUserInput");
    assert_eq!(hops, vec![("Ready", Some("Start"), "WaitingForUserInput", Some("AwaitUserInput"))]);
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::AwaitUserInput);
}

#[test]
fn edge_waiting_for_user_input__sending_to_llm() {
    let (m, hops, action) =
        run(SketchState::WaitingForUserInput, ctx(), SketchEvent::UserMessage("fix the build".to_owned()));
    assert_edge(&hops, "WaitingForUserInput", "SendingToLlm");
    assert_eq!(hops, vec![("WaitingForUserInput", Some("UserMessage"), "SendingToLlm", Some("SendToLlm"))]);
    assert_eq!(m.state(), &SketchState::SendingToLlm);
    let sent = vec![Message::user("fix the build")];
    assert_eq!(action, SketchAction::SendToLlm(sent.clone()));
    assert_eq!(m.context().conversation, sent);
}

#[test]
fn edge_waiting_for_user_input__error() {
    let (m, hops, action) = run(SketchState::WaitingForUserInput, ctx(), SketchEvent::UserMessage("  \n".to_owned()));
    assert_edge(&hops, "WaitingForUserInput", "Error");
    assert_eq!(
        hops,
        vec![
            ("WaitingForUserInput", Some("UserMessage"), "Error", None),
            ("Error", None, "WaitingForUserInput", Some("ShowError")),
        ]
    );
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::ShowError("empty message: nothing to send".to_owned()));
    assert_eq!(m.context().conversation, Vec::new());

    // An exhausted budget takes the same edge: no message goes out.
    let (m, hops, action) = run(SketchState::WaitingForUserInput, spent_ctx(), SketchEvent::UserMessage("go".into()));
    assert_edge(&hops, "WaitingForUserInput", "Error");
    assert_eq!(action, SketchAction::ShowError(spent_ctx().budget_message()));
    assert_eq!(m.context().conversation, Vec::new());
}

#[test]
fn edge_sending_to_llm__processing_llm_response() {
    let (m, hops, action) = run(SketchState::SendingToLlm, ctx(), tools_reply(&["a", "b"]));
    assert_edge(&hops, "SendingToLlm", "ProcessingLlmResponse");
    assert_eq!(
        hops,
        vec![
            ("SendingToLlm", Some("LlmResponse"), "ProcessingLlmResponse", None),
            ("ProcessingLlmResponse", None, "ToolUseRequested", None),
            ("ToolUseRequested", None, "CheckingForCancellation", None),
            ("CheckingForCancellation", None, "RunningTool", Some("RunTools")),
        ]
    );
    assert_eq!(m.state(), &SketchState::RunningTool { round: ToolRound::new(vec![call("a"), call("b")]) });
    assert_eq!(action, SketchAction::RunTools(vec![call("a"), call("b")]));
    // The reply's cost is counted when it arrives.
    assert_eq!(m.context().spent, spend(100));
}

/// An LLM error while waiting in `from`: through `Error` back to waiting,
/// with the message shown.
fn assert_llm_error_path(from: SketchState, message: &str) {
    let name = from.name();
    let (m, hops, action) = run(from, ctx(), SketchEvent::LlmError(ProviderError::new(ErrorKind::Auth, message)));
    assert_edge(&hops, name, "Error");
    assert_eq!(
        hops,
        vec![(name, Some("LlmError"), "Error", None), ("Error", None, "WaitingForUserInput", Some("ShowError"))]
    );
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::ShowError(format!("LLM call failed: not authorized: {message}")));
}

#[test]
fn edge_sending_to_llm__error() {
    assert_llm_error_path(SketchState::SendingToLlm, "503 overloaded");
}

#[test]
fn edge_processing_llm_response__end_of_turn() {
    let (m, hops, action) = run(SketchState::SendingToLlm, ctx(), text_reply("all green"));
    assert_edge(&hops, "ProcessingLlmResponse", "EndOfTurn");
    assert_eq!(
        hops,
        vec![
            ("SendingToLlm", Some("LlmResponse"), "ProcessingLlmResponse", None),
            ("ProcessingLlmResponse", None, "EndOfTurn", None),
            ("EndOfTurn", None, "WaitingForUserInput", Some("EndTurn")),
        ]
    );
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::EndTurn("all green".to_owned()));
    assert_eq!(m.context().conversation, vec![Message::assistant("all green")]);
}

#[test]
fn edge_processing_llm_response__tool_use_requested() {
    let (m, hops, action) = run(SketchState::SendingToolResults, ctx(), tools_reply(&["c"]));
    assert_edge(&hops, "ProcessingLlmResponse", "ToolUseRequested");
    assert_eq!(
        hops,
        vec![
            ("SendingToolResults", Some("LlmResponse"), "ProcessingLlmResponse", None),
            ("ProcessingLlmResponse", None, "ToolUseRequested", None),
            ("ToolUseRequested", None, "CheckingForCancellation", None),
            ("CheckingForCancellation", None, "RunningTool", Some("RunTools")),
        ]
    );
    assert_eq!(m.state(), &SketchState::RunningTool { round: ToolRound::new(vec![call("c")]) });
    assert_eq!(action, SketchAction::RunTools(vec![call("c")]));
    assert_eq!(m.context().conversation, vec![assistant_tools(&["c"])]);
}

#[test]
fn edge_processing_llm_response__error() {
    let malformed = LlmReply { stop_reason: StopReason::ToolUse, ..LlmReply::text("let me look", spend(50)) };
    let (m, hops, action) = run(SketchState::SendingToLlm, ctx(), SketchEvent::LlmResponse(malformed));
    assert_edge(&hops, "ProcessingLlmResponse", "Error");
    assert_eq!(
        hops,
        vec![
            ("SendingToLlm", Some("LlmResponse"), "ProcessingLlmResponse", None),
            ("ProcessingLlmResponse", None, "Error", None),
            ("Error", None, "WaitingForUserInput", Some("ShowError")),
        ]
    );
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::ShowError("the model stopped for tool use but asked for no tool".to_owned()));
    // Not recorded, but paid for.
    assert_eq!(m.context().conversation, Vec::new());
    assert_eq!(m.context().spent, spend(50));

    // A reply cut off at its token limit takes the same edge.
    let cut = LlmReply { stop_reason: StopReason::MaxTokens, ..LlmReply::text("half an ans", spend(1)) };
    let (_, hops, action) = run(SketchState::SendingToLlm, ctx(), SketchEvent::LlmResponse(cut));
    assert_edge(&hops, "ProcessingLlmResponse", "Error");
    assert_eq!(action, SketchAction::ShowError("the reply was cut off at its token limit".to_owned()));

    // So does a reply whose calls repeat an id: none of them runs.
    let repeated = LlmReply::tools(vec![call("a"), call("a")], spend(1));
    let (m, hops, action) = run(SketchState::SendingToLlm, ctx(), SketchEvent::LlmResponse(repeated));
    assert_edge(&hops, "ProcessingLlmResponse", "Error");
    assert_eq!(action, SketchAction::ShowError("the model repeated the tool call id `a`; no tool ran".to_owned()));
    assert_eq!(m.context().conversation, Vec::new());

    // So does a reply the provider filtered, one stopped for a reason the
    // table does not know (Anthropic's `pause_turn`), and tools after a
    // stop sequence: none is recorded, no tool runs.
    let refusals = [
        (StopReason::ContentFilter, LlmReply::text("I can't", spend(1)), "the provider withheld or stopped the reply"),
        (
            StopReason::Other("pause_turn".to_owned()),
            LlmReply::text("so far", spend(1)),
            "the model stopped for an unknown reason `pause_turn`",
        ),
        (
            StopReason::StopSequence,
            LlmReply::tools(vec![call("a")], spend(1)),
            "the model asked for tools but did not stop for tool use",
        ),
        (
            StopReason::ContentFilter,
            LlmReply::tools(vec![call("a")], spend(1)),
            "the provider withheld or stopped the reply",
        ),
    ];
    for (stop_reason, reply, why) in refusals {
        let reply = LlmReply { stop_reason, ..reply };
        let (m, hops, action) = run(SketchState::SendingToLlm, ctx(), SketchEvent::LlmResponse(reply));
        assert_edge(&hops, "ProcessingLlmResponse", "Error");
        assert_eq!(action, SketchAction::ShowError(why.to_owned()));
        assert_eq!(m.context().conversation, Vec::new());
        assert_eq!(m.context().spent, spend(1));
    }
}

#[test]
fn a_reply_that_stopped_at_a_stop_sequence_is_an_answer() {
    let reply = LlmReply { stop_reason: StopReason::StopSequence, ..LlmReply::text("done.", spend(100)) };
    let (m, hops, action) = run(SketchState::SendingToLlm, ctx(), SketchEvent::LlmResponse(reply));
    assert_eq!(
        hops,
        vec![
            ("SendingToLlm", Some("LlmResponse"), "ProcessingLlmResponse", None),
            ("ProcessingLlmResponse", None, "EndOfTurn", None),
            ("EndOfTurn", None, "WaitingForUserInput", Some("EndTurn")),
        ]
    );
    assert_eq!(action, SketchAction::EndTurn("done.".to_owned()));
    assert_eq!(m.context().conversation, vec![Message::assistant("done.")]);
}

#[test]
fn a_round_note_holds_the_notes_then_the_user_messages() {
    assert_eq!(round_note(&[], &[]), None);
    assert_eq!(
        round_note(&strings(&["new commits: c1"]), &[]).as_deref(),
        Some("Notes from the agent on the tool round:\n- new commits: c1")
    );
    assert_eq!(
        round_note(&[], &strings(&["one", "two\nlines"])).as_deref(),
        Some("The user wrote while the tools ran:\none\n\ntwo\nlines")
    );
    assert_eq!(
        round_note(&strings(&["a", "b"]), &strings(&["c"])).as_deref(),
        Some("Notes from the agent on the tool round:\n- a\n- b\n\nThe user wrote while the tools ran:\nc")
    );
}

#[test]
fn edge_end_of_turn__waiting_for_user_input() {
    // A cancel that came while the model was answering with text: the turn
    // ends normally and the flag does not leak into the next one.
    let ctx = SketchContext { cancel_requested: true, ..ctx() };
    let (m, hops, action) = run(SketchState::SendingToLlm, ctx, text_reply("done"));
    assert_edge(&hops, "EndOfTurn", "WaitingForUserInput");
    assert_eq!(hops.last(), Some(&("EndOfTurn", None, "WaitingForUserInput", Some("EndTurn"))));
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::EndTurn("done".to_owned()));
    assert!(!m.context().cancel_requested);
}

#[test]
fn edge_tool_use_requested__checking_for_cancellation() {
    let (m, hops, action) = run(SketchState::SendingToLlm, ctx(), tools_reply(&["a"]));
    assert_edge(&hops, "ToolUseRequested", "CheckingForCancellation");
    assert_eq!(hops[2], ("ToolUseRequested", None, "CheckingForCancellation", None));
    assert_eq!(m.state(), &SketchState::RunningTool { round: ToolRound::new(vec![call("a")]) });
    assert_eq!(action, SketchAction::RunTools(vec![call("a")]));
}

#[test]
fn edge_checking_for_cancellation__running_tool() {
    let (m, hops, action) = run(SketchState::SendingToLlm, ctx(), tools_reply(&["a", "b", "c"]));
    assert_edge(&hops, "CheckingForCancellation", "RunningTool");
    assert_eq!(hops.last(), Some(&("CheckingForCancellation", None, "RunningTool", Some("RunTools"))));
    assert_eq!(m.state(), &SketchState::RunningTool { round: ToolRound::new(vec![call("a"), call("b"), call("c")]) });
    assert_eq!(action, SketchAction::RunTools(vec![call("a"), call("b"), call("c")]));
}

#[test]
fn edge_checking_for_cancellation__cancelled() {
    let ctx = SketchContext { cancel_requested: true, ..ctx() };
    let (m, hops, action) = run(SketchState::SendingToLlm, ctx, tools_reply(&["a", "b"]));
    assert_edge(&hops, "CheckingForCancellation", "Cancelled");
    assert_eq!(
        hops,
        vec![
            ("SendingToLlm", Some("LlmResponse"), "ProcessingLlmResponse", None),
            ("ProcessingLlmResponse", None, "ToolUseRequested", None),
            ("ToolUseRequested", None, "CheckingForCancellation", None),
            ("CheckingForCancellation", None, "Cancelled", None),
            ("Cancelled", None, "WaitingForUserInput", Some("TurnCancelled")),
        ]
    );
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::TurnCancelled(strings(&["a", "b"])));
}

#[test]
fn edge_running_tool__checking_git_commits() {
    let mut round = ToolRound::new(vec![call("a"), call("b")]);
    round.record(tool_ok("b", "ok b"));
    let (m, hops, action) =
        run(SketchState::RunningTool { round }, ctx(), SketchEvent::ToolResult(tool_ok("a", "ok a")));
    assert_edge(&hops, "RunningTool", "CheckingGitCommits");
    assert_eq!(hops, vec![("RunningTool", Some("ToolResult"), "CheckingGitCommits", Some("CheckGitCommits"))]);
    let mut expected = ToolRound::new(vec![call("a"), call("b")]);
    expected.record(tool_ok("b", "ok b"));
    expected.record(tool_ok("a", "ok a"));
    assert_eq!(m.state(), &SketchState::CheckingGitCommits { round: expected });
    assert_eq!(action, SketchAction::CheckGitCommits);
}

#[test]
fn edge_running_tool__error() {
    let mut round = ToolRound::new(vec![call("a"), call("b")]);
    round.record(tool_ok("b", "ok b"));
    let (m, hops, action) =
        run(SketchState::RunningTool { round }, ctx(), SketchEvent::ToolRunFailed("sandbox died".to_owned()));
    assert_edge(&hops, "RunningTool", "Error");
    assert_eq!(
        hops,
        vec![
            ("RunningTool", Some("ToolRunFailed"), "Error", None),
            ("Error", None, "WaitingForUserInput", Some("ShowError")),
        ]
    );
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::ShowError("tool run failed: sandbox died".to_owned()));
    // Every call is answered, in call order, so the next request is valid.
    assert_eq!(
        m.context().conversation,
        vec![Message::tool_error("a", NOT_EXECUTED), Message::tool_result("b", "ok b")]
    );
}

#[test]
fn edge_checking_git_commits__running_autoformatters() {
    let commits = vec![
        Commit { sha: "c1".to_owned(), changed_files: strings(&["src/a.rs", "src/b.rs"]) },
        Commit { sha: "c2".to_owned(), changed_files: strings(&["src/b.rs", "src/c.rs"]) },
    ];
    let (m, hops, action) =
        run(SketchState::CheckingGitCommits { round: answered(&["a"]) }, ctx(), SketchEvent::GitChecked(commits));
    assert_edge(&hops, "CheckingGitCommits", "RunningAutoformatters");
    assert_eq!(
        hops,
        vec![("CheckingGitCommits", Some("GitChecked"), "RunningAutoformatters", Some("RunAutoformatters"))]
    );
    let mut round = answered(&["a"]);
    round.notes.push("new commits: c1, c2".to_owned());
    assert_eq!(m.state(), &SketchState::RunningAutoformatters { round });
    assert_eq!(action, SketchAction::RunAutoformatters(strings(&["src/a.rs", "src/b.rs", "src/c.rs"])));
}

#[test]
fn edge_checking_git_commits__checking_budget() {
    let (m, hops, action) =
        run(SketchState::CheckingGitCommits { round: answered(&["a"]) }, ctx(), SketchEvent::GitChecked(Vec::new()));
    assert_edge(&hops, "CheckingGitCommits", "CheckingBudget");
    assert_eq!(
        hops,
        vec![
            ("CheckingGitCommits", Some("GitChecked"), "CheckingBudget", None),
            ("CheckingBudget", None, "GatheringAdditionalMessages", None),
            ("GatheringAdditionalMessages", None, "SendingToolResults", Some("SendToLlm")),
        ]
    );
    assert_eq!(m.state(), &SketchState::SendingToolResults);
    assert_eq!(action, SketchAction::SendToLlm(results_message(&["a"], &[], &[])));

    // A failed check is a note for the model, not a failed turn.
    let (_, hops, action) = run(
        SketchState::CheckingGitCommits { round: answered(&["a"]) },
        ctx(),
        SketchEvent::GitCheckFailed("not a git repository".to_owned()),
    );
    assert_edge(&hops, "CheckingGitCommits", "CheckingBudget");
    assert_eq!(
        action,
        SketchAction::SendToLlm(results_message(&["a"], &["git check failed: not a git repository"], &[]))
    );
}

#[test]
fn edge_running_autoformatters__checking_budget() {
    let mut round = answered(&["a"]);
    round.notes.push("new commits: c1".to_owned());
    let report = FormatReport { reformatted: strings(&["src/a.rs"]), failures: strings(&["prettier: not found"]) };
    let (m, hops, action) =
        run(SketchState::RunningAutoformatters { round }, ctx(), SketchEvent::FormattersFinished(report));
    assert_edge(&hops, "RunningAutoformatters", "CheckingBudget");
    assert_eq!(
        hops,
        vec![
            ("RunningAutoformatters", Some("FormattersFinished"), "CheckingBudget", None),
            ("CheckingBudget", None, "GatheringAdditionalMessages", None),
            ("GatheringAdditionalMessages", None, "SendingToolResults", Some("SendToLlm")),
        ]
    );
    assert_eq!(m.state(), &SketchState::SendingToolResults);
    assert_eq!(
        action,
        SketchAction::SendToLlm(results_message(
            &["a"],
            &["new commits: c1", "autoformatters rewrote: src/a.rs", "autoformatter failed: prettier: not found"],
            &[]
        ))
    );
}

#[test]
fn edge_checking_budget__gathering_additional_messages() {
    let (m, hops, _) =
        run(SketchState::CheckingGitCommits { round: answered(&["a"]) }, ctx(), SketchEvent::GitChecked(Vec::new()));
    assert_edge(&hops, "CheckingBudget", "GatheringAdditionalMessages");
    assert_eq!(hops[1], ("CheckingBudget", None, "GatheringAdditionalMessages", None));
    assert_eq!(m.state(), &SketchState::SendingToolResults);
}

#[test]
fn edge_checking_budget__budget_exceeded() {
    let (m, hops, action) = run(
        SketchState::CheckingGitCommits { round: answered(&["a"]) },
        spent_ctx(),
        SketchEvent::GitChecked(Vec::new()),
    );
    assert_edge(&hops, "CheckingBudget", "BudgetExceeded");
    assert_eq!(
        hops,
        vec![
            ("CheckingGitCommits", Some("GitChecked"), "CheckingBudget", None),
            ("CheckingBudget", None, "BudgetExceeded", None),
            ("BudgetExceeded", None, "WaitingForUserInput", Some("ShowBudgetExceeded")),
        ]
    );
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(
        action,
        SketchAction::ShowBudgetExceeded(
            "budget exceeded: spent 10000 tokens and 100 cents of a budget of 10000 tokens and 500 cents; \
             send RaiseBudget to continue"
                .to_owned()
        )
    );
    // The results are recorded, not sent.
    assert_eq!(m.context().conversation, results_message(&["a"], &[], &[]));
}

#[test]
fn edge_gathering_additional_messages__sending_tool_results() {
    let ctx = SketchContext { queued: strings(&["also update the changelog"]), ..ctx() };
    let (m, hops, action) =
        run(SketchState::CheckingGitCommits { round: answered(&["a", "b"]) }, ctx, SketchEvent::GitChecked(Vec::new()));
    assert_edge(&hops, "GatheringAdditionalMessages", "SendingToolResults");
    assert_eq!(hops.last(), Some(&("GatheringAdditionalMessages", None, "SendingToolResults", Some("SendToLlm"))));
    assert_eq!(m.state(), &SketchState::SendingToolResults);
    let sent = results_message(&["a", "b"], &[], &["also update the changelog"]);
    assert_eq!(action, SketchAction::SendToLlm(sent.clone()));
    assert_eq!(m.context().queued, Vec::<String>::new());
    assert_eq!(m.context().conversation, sent);
}

#[test]
fn edge_gathering_additional_messages__error() {
    // The user cancelled while the tools ran.
    let ctx = SketchContext { cancel_requested: true, ..ctx() };
    let (m, hops, action) =
        run(SketchState::CheckingGitCommits { round: answered(&["a"]) }, ctx, SketchEvent::GitChecked(Vec::new()));
    assert_edge(&hops, "GatheringAdditionalMessages", "Error");
    assert_eq!(
        hops,
        vec![
            ("CheckingGitCommits", Some("GitChecked"), "CheckingBudget", None),
            ("CheckingBudget", None, "GatheringAdditionalMessages", None),
            ("GatheringAdditionalMessages", None, "Error", None),
            ("Error", None, "WaitingForUserInput", Some("ShowError")),
        ]
    );
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::ShowError("cancelled during the tool run: results recorded, not sent".to_owned()));
    assert_eq!(m.context().conversation, results_message(&["a"], &[], &[]));
    assert!(!m.context().cancel_requested);
}

#[test]
fn edge_sending_tool_results__processing_llm_response() {
    let (m, hops, action) = run(SketchState::SendingToolResults, ctx(), text_reply("fixed"));
    assert_edge(&hops, "SendingToolResults", "ProcessingLlmResponse");
    assert_eq!(
        hops,
        vec![
            ("SendingToolResults", Some("LlmResponse"), "ProcessingLlmResponse", None),
            ("ProcessingLlmResponse", None, "EndOfTurn", None),
            ("EndOfTurn", None, "WaitingForUserInput", Some("EndTurn")),
        ]
    );
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::EndTurn("fixed".to_owned()));
}

#[test]
fn edge_sending_tool_results__error() {
    assert_llm_error_path(SketchState::SendingToolResults, "timeout");
}

#[test]
fn edge_error__waiting_for_user_input() {
    let ctx = SketchContext { cancel_requested: true, ..ctx() };
    let error = ProviderError::new(ErrorKind::ConnectionDropped, "aborted");
    let (m, hops, action) = run(SketchState::SendingToolResults, ctx, SketchEvent::LlmError(error));
    assert_edge(&hops, "Error", "WaitingForUserInput");
    assert_eq!(hops.last(), Some(&("Error", None, "WaitingForUserInput", Some("ShowError"))));
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::ShowError("LLM call failed: connection dropped: aborted".to_owned()));
    assert!(!m.context().cancel_requested, "the turn's cancel ends with the turn");
}

#[test]
fn edge_cancelled__waiting_for_user_input() {
    let ctx = SketchContext { cancel_requested: true, ..ctx() };
    let (m, hops, action) = run(SketchState::SendingToolResults, ctx, tools_reply(&["x"]));
    assert_edge(&hops, "Cancelled", "WaitingForUserInput");
    assert_eq!(hops.last(), Some(&("Cancelled", None, "WaitingForUserInput", Some("TurnCancelled"))));
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::TurnCancelled(strings(&["x"])));
    assert!(!m.context().cancel_requested);
}

#[test]
fn edge_budget_exceeded__waiting_for_user_input() {
    let mut round = answered(&["a"]);
    round.notes.push("new commits: c1".to_owned());
    let (m, hops, action) = run(
        SketchState::RunningAutoformatters { round },
        spent_ctx(),
        SketchEvent::FormattersFinished(FormatReport::default()),
    );
    assert_edge(&hops, "BudgetExceeded", "WaitingForUserInput");
    assert_eq!(hops.last(), Some(&("BudgetExceeded", None, "WaitingForUserInput", Some("ShowBudgetExceeded"))));
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(action, SketchAction::ShowBudgetExceeded(spent_ctx().budget_message()));
}

// ------------------------------------------------------ the table as a whole

#[test]
fn the_table_has_exactly_the_reference_edges() {
    let table: BTreeSet<(&str, &str)> =
        Sketch::DESCRIPTION.transitions.iter().filter(|t| t.from != t.to).map(|t| (t.from, t.to)).collect();
    let reference: BTreeSet<(&str, &str)> = REFERENCE_EDGES.iter().copied().collect();
    assert_eq!(reference.len(), REFERENCE_EDGES.len(), "REFERENCE_EDGES lists an edge twice");
    let missing: Vec<_> = reference.difference(&table).collect();
    let extra: Vec<_> = table.difference(&reference).collect();
    assert_eq!(missing, Vec::<&(&str, &str)>::new(), "edges of the diagram missing from the table");
    assert_eq!(extra, Vec::<&(&str, &str)>::new(), "edges in the table the diagram does not have");
    assert_eq!(table, reference);
    // The diagram's 26 edges between its 16 states.
    assert_eq!(REFERENCE_EDGES.len(), 26);
    assert_eq!(Sketch::DESCRIPTION.states.len(), 16);
    assert_eq!(Sketch::DESCRIPTION.initial().name, "Ready");
}

#[test]
fn the_added_self_loops_are_the_documented_ones() {
    let loops: BTreeSet<(&str, Option<&str>)> =
        Sketch::DESCRIPTION.transitions.iter().filter(|t| t.from == t.to).map(|t| (t.from, t.event)).collect();
    let mut expected: BTreeSet<(&str, Option<&str>)> = BTreeSet::new();
    expected.insert(("Ready", Some("UserMessage")));
    expected.insert(("Ready", Some("RaiseBudget")));
    expected.insert(("WaitingForUserInput", Some("RaiseBudget")));
    expected.insert(("RunningTool", Some("ToolResult")));
    for state in ["SendingToLlm", "RunningTool", "CheckingGitCommits", "RunningAutoformatters", "SendingToolResults"] {
        expected.insert((state, Some("UserMessage")));
        expected.insert((state, Some("Cancel")));
    }
    assert_eq!(loops, expected);
    // The states the table marks transient are the pure checks.
    let transient: Vec<&str> = Sketch::DESCRIPTION.states.iter().filter(|s| s.transient).map(|s| s.name).collect();
    assert_eq!(
        transient,
        vec![
            "ProcessingLlmResponse",
            "EndOfTurn",
            "ToolUseRequested",
            "CheckingForCancellation",
            "CheckingBudget",
            "GatheringAdditionalMessages",
            "Cancelled",
            "BudgetExceeded",
            "Error",
        ]
    );
}

#[test]
fn a_scripted_session_records_exactly_the_path_it_takes() {
    let mut m = Sketch::new(ctx());
    let mut rec = Recorder::default();
    let commit = Commit { sha: "c1".to_owned(), changed_files: strings(&["src/lib.rs"]) };
    let script = vec![
        SketchEvent::Start,
        SketchEvent::UserMessage("fix the failing test".to_owned()),
        tools_reply(&["a", "b"]),
        SketchEvent::UserMessage("and run clippy".to_owned()),
        SketchEvent::ToolResult(tool_ok("b", "ok b")),
        SketchEvent::ToolResult(tool_ok("a", "ok a")),
        SketchEvent::GitChecked(vec![commit]),
        SketchEvent::FormattersFinished(FormatReport { reformatted: strings(&["src/lib.rs"]), failures: Vec::new() }),
        text_reply("fixed, and clippy is clean"),
    ];
    let actions: Vec<SketchAction> = script.into_iter().map(|e| m.handle_event_with(e, &mut rec)).collect();
    assert_eq!(rec.unhandled, Vec::new());

    assert_eq!(
        rec.hop_names(),
        vec![
            ("Ready", Some("Start"), "WaitingForUserInput", Some("AwaitUserInput")),
            ("WaitingForUserInput", Some("UserMessage"), "SendingToLlm", Some("SendToLlm")),
            ("SendingToLlm", Some("LlmResponse"), "ProcessingLlmResponse", None),
            ("ProcessingLlmResponse", None, "ToolUseRequested", None),
            ("ToolUseRequested", None, "CheckingForCancellation", None),
            ("CheckingForCancellation", None, "RunningTool", Some("RunTools")),
            ("RunningTool", Some("UserMessage"), "RunningTool", Some("MessageQueued")),
            ("RunningTool", Some("ToolResult"), "RunningTool", Some("AwaitToolResults")),
            ("RunningTool", Some("ToolResult"), "CheckingGitCommits", Some("CheckGitCommits")),
            ("CheckingGitCommits", Some("GitChecked"), "RunningAutoformatters", Some("RunAutoformatters")),
            ("RunningAutoformatters", Some("FormattersFinished"), "CheckingBudget", None),
            ("CheckingBudget", None, "GatheringAdditionalMessages", None),
            ("GatheringAdditionalMessages", None, "SendingToolResults", Some("SendToLlm")),
            ("SendingToolResults", Some("LlmResponse"), "ProcessingLlmResponse", None),
            ("ProcessingLlmResponse", None, "EndOfTurn", None),
            ("EndOfTurn", None, "WaitingForUserInput", Some("EndTurn")),
        ]
    );
    // The history is one unbroken path: each hop starts where the last one
    // ended, and each is the row of the table it names.
    for pair in rec.steps.windows(2) {
        assert_eq!(pair[0].to, pair[1].from, "history jumps between {:?} and {:?}", pair[0], pair[1]);
    }
    for step in &rec.steps {
        let row = &Sketch::DESCRIPTION.transitions[step.row];
        assert_eq!((row.from, row.event, row.to, row.action), step.names());
    }
    // Transient states appear in the history but the machine never rests there.
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);

    assert_eq!(
        actions,
        vec![
            SketchAction::AwaitUserInput,
            SketchAction::SendToLlm(vec![Message::user("fix the failing test")]),
            SketchAction::RunTools(vec![call("a"), call("b")]),
            SketchAction::MessageQueued(1),
            SketchAction::AwaitToolResults(1),
            SketchAction::CheckGitCommits,
            SketchAction::RunAutoformatters(strings(&["src/lib.rs"])),
            SketchAction::SendToLlm(results_message(
                &["a", "b"],
                &["new commits: c1", "autoformatters rewrote: src/lib.rs"],
                &["and run clippy"]
            )),
            SketchAction::EndTurn("fixed, and clippy is clean".to_owned()),
        ]
    );
    assert_eq!(m.context().spent, spend(200));
    // The prompt, the reply, two results and their note, the answer.
    assert_eq!(m.context().conversation.len(), 6);
    assert_eq!(
        m.context().conversation[4],
        Message::user(
            "Notes from the agent on the tool round:\n- new commits: c1\n- autoformatters rewrote: src/lib.rs\n\n\
             The user wrote while the tools ran:\nand run clippy"
        )
    );
}

// ------------------------------------------------------------- cancellation

#[test]
fn a_cancel_gives_every_requested_call_a_synthetic_result() {
    let mut m = Sketch::with_state(SketchState::WaitingForUserInput, ctx());
    m.handle_event(SketchEvent::UserMessage("clean up".to_owned()));
    assert_eq!(m.handle_event(SketchEvent::Cancel), SketchAction::CancelInFlight);
    assert_eq!(m.state(), &SketchState::SendingToLlm);
    assert!(m.context().cancel_requested);

    let mut rec = Recorder::default();
    let action = m.handle_event_with(tools_reply(&["a", "b", "c"]), &mut rec);
    assert_eq!(action, SketchAction::TurnCancelled(strings(&["a", "b", "c"])));
    // No tool ran: the machine never entered RunningTool.
    assert!(rec.steps.iter().all(|s| s.to.name() != "RunningTool"));
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    assert_eq!(
        m.context().conversation,
        vec![
            Message::user("clean up"),
            assistant_tools(&["a", "b", "c"]),
            Message::tool_error("a", CANCELLED_RESULT),
            Message::tool_error("b", CANCELLED_RESULT),
            Message::tool_error("c", CANCELLED_RESULT),
        ]
    );
    assert!(!m.context().cancel_requested);

    // The next turn is not cancelled.
    m.handle_event(SketchEvent::UserMessage("try again".to_owned()));
    assert_eq!(m.handle_event(tools_reply(&["d"])), SketchAction::RunTools(vec![call("d")]));
}

#[test]
fn a_cancel_during_the_tool_run_lets_the_tools_finish_and_ends_the_turn() {
    let mut m = Sketch::with_state(SketchState::RunningTool { round: ToolRound::new(vec![call("a")]) }, ctx());
    assert_eq!(m.handle_event(SketchEvent::Cancel), SketchAction::CancelInFlight);
    assert_eq!(m.handle_event(SketchEvent::ToolResult(tool_error("a", "killed"))), SketchAction::CheckGitCommits);
    let action = m.handle_event(SketchEvent::GitChecked(Vec::new()));
    assert_eq!(action, SketchAction::ShowError("cancelled during the tool run: results recorded, not sent".to_owned()));
    assert_eq!(m.context().conversation, vec![Message::tool_error("a", "killed")]);
}

#[test]
fn a_cancel_with_nothing_in_flight_is_ignored() {
    for state in [SketchState::Ready, SketchState::WaitingForUserInput] {
        let mut m = Sketch::with_state(state.clone(), ctx());
        let mut rec = Recorder::default();
        assert_eq!(m.handle_event_with(SketchEvent::Cancel, &mut rec), SketchAction::Nothing);
        assert_eq!(m.state(), &state);
        assert!(!m.context().cancel_requested);
        assert_eq!(rec.unhandled.len(), 1);
        assert_eq!(rec.unhandled[0].reason, agent_fsm::UnhandledReason::Ignored);
    }
}

// ------------------------------------------------------------------- budget

#[test]
fn an_exceeded_budget_is_not_reset() {
    let mut m = Sketch::with_state(SketchState::SendingToLlm, ctx());
    // One expensive reply uses the whole budget.
    m.handle_event(SketchEvent::LlmResponse(LlmReply::tools(vec![call("a")], spend(12_000))));
    m.handle_event(SketchEvent::ToolResult(tool_ok("a", "ok a")));
    let action = m.handle_event(SketchEvent::GitChecked(Vec::new()));
    let message = "budget exceeded: spent 12000 tokens and 120 cents of a budget of 10000 tokens and 500 cents; \
                   send RaiseBudget to continue";
    assert_eq!(action, SketchAction::ShowBudgetExceeded(message.to_owned()));
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    // Nothing was reset.
    assert_eq!(m.context().budget, budget());
    assert_eq!(m.context().spent, spend(12_000));

    // A new message does not reach the model while the budget is exhausted.
    let action = m.handle_event(SketchEvent::UserMessage("continue".to_owned()));
    assert_eq!(action, SketchAction::ShowError(message.to_owned()));
    assert_eq!(m.context().budget, budget());
    assert_eq!(m.context().spent, spend(12_000));

    // Only an explicit raise lets the session go on.
    let raised = Budget { max_tokens: Some(50_000), max_cost_cents: Some(1_000) };
    assert_eq!(m.handle_event(SketchEvent::RaiseBudget(raised)), SketchAction::BudgetRaised(raised));
    assert_eq!(m.state(), &SketchState::WaitingForUserInput);
    let action = m.handle_event(SketchEvent::UserMessage("continue".to_owned()));
    assert_eq!(action, SketchAction::SendToLlm(vec![Message::user("continue")]));
    assert_eq!(m.context().spent, spend(12_000));
}

// -------------------------------------------------- messages during a tool run

#[test]
fn messages_during_a_tool_run_are_gathered_and_sent_with_the_results() {
    let mut m = Sketch::with_state(SketchState::RunningTool { round: ToolRound::new(vec![call("a")]) }, ctx());
    let before = m.state().clone();
    assert_eq!(m.handle_event(SketchEvent::UserMessage("use the new API".to_owned())), SketchAction::MessageQueued(1));
    assert_eq!(m.state(), &before);
    m.handle_event(SketchEvent::ToolResult(tool_ok("a", "ok a")));
    assert_eq!(m.handle_event(SketchEvent::UserMessage("and add a test".to_owned())), SketchAction::MessageQueued(2));
    assert_eq!(m.context().queued, strings(&["use the new API", "and add a test"]));

    let action = m.handle_event(SketchEvent::GitChecked(Vec::new()));
    let sent = results_message(&["a"], &[], &["use the new API", "and add a test"]);
    assert_eq!(action, SketchAction::SendToLlm(sent.clone()));
    assert_eq!(m.context().queued, Vec::<String>::new());
    assert_eq!(m.context().conversation, sent);
    // While the results are with the model, new messages queue for the next send.
    assert_eq!(m.handle_event(SketchEvent::UserMessage("thanks".to_owned())), SketchAction::MessageQueued(1));
}

#[test]
fn messages_queued_in_a_turn_that_ends_early_go_out_with_the_next_message() {
    let mut m = Sketch::with_state(SketchState::SendingToLlm, ctx());
    m.handle_event(SketchEvent::UserMessage("one more thing".to_owned()));
    assert_eq!(m.handle_event(text_reply("done")), SketchAction::EndTurn("done".to_owned()));
    let action = m.handle_event(SketchEvent::UserMessage("and another".to_owned()));
    assert_eq!(action, SketchAction::SendToLlm(vec![Message::user("one more thing"), Message::user("and another")]));
    assert_eq!(m.context().queued, Vec::<String>::new());
}

// ------------------------------------------------------------ stray events

#[test]
fn a_result_for_an_unknown_or_answered_call_is_rejected() {
    let mut round = ToolRound::new(vec![call("a"), call("b")]);
    round.record(tool_ok("a", "ok a"));
    let state = SketchState::RunningTool { round };
    for id in ["a", "zzz"] {
        let mut m = Sketch::with_state(state.clone(), ctx());
        let action = m.handle_event(SketchEvent::ToolResult(tool_ok(id, "late")));
        assert_eq!(action, SketchAction::Reject(format!("no pending tool call `{id}`")));
        assert_eq!(m.state(), &state);
    }
}

#[test]
fn ready_refuses_a_message_before_start() {
    let mut m = Sketch::new(ctx());
    let action = m.handle_event(SketchEvent::UserMessage("hi".to_owned()));
    assert_eq!(action, SketchAction::Reject("the agent has not started; `hi` was not sent".to_owned()));
    assert_eq!(m.state(), &SketchState::Ready);
    assert_eq!(m.context().queued, Vec::<String>::new());
}
