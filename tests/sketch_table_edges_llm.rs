//! The Sketch table against its reference diagram, the edges out of the
//! conversation states (ready, waiting for input, sending to the model,
//! processing its reply): one test per edge, named `edge_<from>__<to>`,
//! each driving the pure machine with the events that make that edge
//! happen and checking every hop the observer saw, the resting state and
//! the action.

// The tests are named after the edge they cover, `edge_<from>__<to>`: the
// double underscore separates the two states.
#![allow(non_snake_case)]

#[path = "support/sketch_table.rs"]
mod sketch_table;

use agent_fsm_examples::sketch::{
    LlmReply, Message, SketchAction, SketchEvent, SketchState, StopReason, ToolRound, round_note,
};
use sketch_table::*;

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
