//! The Sketch table against its reference diagram, the edges of a tool
//! round (end of turn, cancellation checks, running tools, git commits,
//! autoformatters, budget, gathered messages, results sent) and the ways
//! back to waiting for input: one test per edge, named `edge_<from>__<to>`,
//! checking every hop, the resting state and the action.

// The tests are named after the edge they cover, `edge_<from>__<to>`: the
// double underscore separates the two states.
#![allow(non_snake_case)]

#[path = "support/sketch_table.rs"]
mod sketch_table;

use agent_fsm::llm::{ErrorKind, ProviderError};
use agent_fsm_examples::sketch::{
    Commit, FormatReport, Message, NOT_EXECUTED, SketchAction, SketchContext, SketchEvent, SketchState, ToolRound,
    tool_ok,
};
use sketch_table::*;

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
