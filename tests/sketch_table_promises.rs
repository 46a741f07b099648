//! The Sketch table as a whole: its edges against [`REFERENCE_EDGES`], the
//! documented self-loops, a scripted session's full history, and the
//! cancellation, budget and message-gathering promises of the module docs,
//! with stray events refused.

// The tests are named after the edge they cover, `edge_<from>__<to>`: the
// double underscore separates the two states.
#![allow(non_snake_case)]

#[path = "support/sketch_table.rs"]
mod sketch_table;

use std::collections::BTreeSet;

use agent_fsm::Recorder;
use agent_fsm_examples::sketch::{
    Budget, CANCELLED_RESULT, Commit, FormatReport, LlmReply, Message, REFERENCE_EDGES, Sketch, SketchAction,
    SketchEvent, SketchState, ToolRound, tool_error, tool_ok,
};
use sketch_table::*;

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
