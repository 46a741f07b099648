//! The Sketch conversation as each provider's client sends it: a tool round
//! (results in call order, then the user message with the agent's notes and
//! what the user typed meanwhile) and a turn cancelled before its tools ran
//! become request bodies the OpenAI and Anthropic APIs accept: every tool
//! call answered right after the reply that made it, and for Anthropic,
//! roles alternating with the results first in their user turn.

use std::sync::Arc;

use agent_fsm::llm::{Anthropic, OpenAi, Request};
use agent_fsm_examples::sketch::{
    AssistantMessage, Budget, CANCELLED_RESULT, Commit, FormatReport, LlmReply, Sketch, SketchAction, SketchContext,
    SketchEvent, SketchState, Spend, ToolCall, Usage, tool_ok,
};
use serde_json::{Value, json};

fn call(id: &str) -> ToolCall {
    ToolCall { id: id.to_owned(), name: "bash".to_owned(), arguments: json!({ "command": format!("echo {id}") }) }
}

fn spend() -> Spend {
    Spend::new(Usage::new(70, 30), 1)
}

/// The note the round below ends with.
const NOTE: &str = "Notes from the agent on the tool round:\n- new commits: c1\n- autoformatters rewrote: src/lib.rs\
                    \n\nThe user wrote while the tools ran:\nand run clippy";

/// A session: a tool round with notes and a message typed meanwhile, the
/// answer, then a turn cancelled before its tool ran, then a new prompt.
fn conversation() -> Request {
    let mut m = Sketch::new(SketchContext::new(Budget::default()));
    let tools = LlmReply {
        message: AssistantMessage {
            text: "Looking.".to_owned(),
            tool_calls: vec![call("a"), call("b")],
            ..Default::default()
        },
        ..LlmReply::tools(Vec::new(), spend())
    };
    let events = [
        SketchEvent::Start,
        SketchEvent::UserMessage("fix the build".to_owned()),
        SketchEvent::LlmResponse(tools),
        SketchEvent::UserMessage("and run clippy".to_owned()),
        SketchEvent::ToolResult(tool_ok("b", "ok b")),
        SketchEvent::ToolResult(tool_ok("a", "ok a")),
        SketchEvent::GitChecked(vec![Commit { sha: "c1".to_owned(), changed_files: vec!["src/lib.rs".to_owned()] }]),
        SketchEvent::FormattersFinished(FormatReport { reformatted: vec!["src/lib.rs".to_owned()], failures: vec![] }),
        SketchEvent::LlmResponse(LlmReply::text("Fixed.", spend())),
        SketchEvent::UserMessage("clean up".to_owned()),
        SketchEvent::Cancel,
        SketchEvent::LlmResponse(LlmReply::tools(vec![call("c")], spend())),
        SketchEvent::UserMessage("try again".to_owned()),
    ];
    let mut actions = Vec::new();
    for event in events {
        actions.push(m.handle_event(event));
    }
    assert_eq!(m.state(), &SketchState::SendingToLlm);
    assert!(matches!(actions.last(), Some(SketchAction::SendToLlm(_))));
    Request::new("model").messages(Arc::new(m.context().conversation.clone()))
}

fn bash_input(id: &str) -> Value {
    json!({ "command": format!("echo {id}") })
}

#[test]
fn openai_gets_one_tool_message_per_call_then_the_note_as_a_user_message() {
    let client = OpenAi::new("key").expect("client");
    let body = client.body(&conversation());
    let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "bash", "arguments": bash_input(id).to_string()}});
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "fix the build"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "ok a"},
            {"role": "tool", "tool_call_id": "b", "content": "ok b"},
            {"role": "user", "content": NOTE},
            {"role": "assistant", "content": "Fixed."},
            {"role": "user", "content": "clean up"},
            {"role": "assistant", "content": null, "tool_calls": [call("c")]},
            {"role": "tool", "tool_call_id": "c", "content": CANCELLED_RESULT},
            {"role": "user", "content": "try again"},
        ])
    );
}

#[test]
fn anthropic_gets_the_results_and_the_note_in_one_user_turn() {
    let client = Anthropic::new("key").expect("client");
    let body = client.body(&conversation());
    let text = |t: &str| json!({"type": "text", "text": t});
    let tool_use = |id: &str| json!({"type": "tool_use", "id": id, "name": "bash", "input": bash_input(id)});
    let result = |id: &str, content: &str| json!({"type": "tool_result", "tool_use_id": id, "content": content});
    let cancelled = json!({"type": "tool_result", "tool_use_id": "c", "content": CANCELLED_RESULT, "is_error": true});
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [text("fix the build")]},
            {"role": "assistant", "content": [text("Looking."), tool_use("a"), tool_use("b")]},
            {"role": "user", "content": [result("a", "ok a"), result("b", "ok b"), text(NOTE)]},
            {"role": "assistant", "content": [text("Fixed.")]},
            {"role": "user", "content": [text("clean up")]},
            {"role": "assistant", "content": [tool_use("c")]},
            {"role": "user", "content": [cancelled, text("try again")]},
        ])
    );
}
