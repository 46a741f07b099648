//! Anthropic's extended thinking through the real client and a replay
//! server on loopback: a reply's `thinking` and `redacted_thinking` blocks
//! are kept whole, signatures and data included, and go back first in the
//! assistant message of the tool round that follows, as the API requires;
//! and the parser alone, without HTTP.
#![cfg(all(feature = "anthropic", feature = "runtime"))]

#[path = "support/anthropic_events.rs"]
mod anthropic_events;
#[path = "support/caller.rs"]
mod caller;
#[path = "support/replay.rs"]
mod replay;

use std::collections::VecDeque;

use agent_fsm::llm::anthropic::StreamParser;
use agent_fsm::llm::{
    AnthropicConfig, AssistantMessage, ErrorKind, Message, ReasoningBlock, Request, StopReason, StreamEvent, ToolCall,
    ToolDefinition, Usage,
};
use anthropic_events::event;
use caller::{kinds, run};
use replay::{ReplayServer, Reply};
use serde_json::{Value, json};

fn start(index: usize, block: Value) -> String {
    event(json!({"type": "content_block_start", "index": index, "content_block": block}))
}

fn delta(index: usize, delta: Value) -> String {
    event(json!({"type": "content_block_delta", "index": index, "delta": delta}))
}

fn stop(index: usize) -> String {
    event(json!({"type": "content_block_stop", "index": index}))
}

fn message_start() -> String {
    event(json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test",
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 12, "output_tokens": 1},
    }}))
}

fn message_end(stop_reason: &str) -> String {
    event(
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 30}}),
    ) + &event(json!({"type": "message_stop"}))
}

/// Thinking text with what JSON escapes (quotes, a newline, a backslash)
/// and characters outside ASCII, cut in three pieces.
const THINKING: [&str; 3] = ["The user wants \"a.txt\".\n", "I'll read it \\ then ", "answer — ✓"];
/// A signature as the server writes it (base64).
const SIGNATURE: &str = "EqQBCkgIARABGAIiQL+/3x9f0aZ1mQ==";
/// A redacted block's opaque data.
const REDACTED: &str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP";

/// A reply that thinks (in pieces, then signs), has a redacted block,
/// says a word and calls a tool.
fn thinking_then_tool_use() -> String {
    let mut stream = message_start() + &start(0, json!({"type": "thinking", "thinking": ""}));
    for piece in THINKING {
        stream += &delta(0, json!({"type": "thinking_delta", "thinking": piece}));
    }
    stream += &delta(0, json!({"type": "signature_delta", "signature": SIGNATURE}));
    stream += &stop(0);
    stream += &start(1, json!({"type": "redacted_thinking", "data": REDACTED}));
    stream += &stop(1);
    stream += &start(2, json!({"type": "text", "text": ""}));
    stream += &delta(2, json!({"type": "text_delta", "text": "Reading it."}));
    stream += &stop(2);
    stream += &start(3, json!({"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}));
    stream += &delta(3, json!({"type": "input_json_delta", "partial_json": "{\"path\": \"a.txt\"}"}));
    stream += &stop(3);
    stream + &message_end("tool_use")
}

fn answer() -> String {
    message_start()
        + &start(0, json!({"type": "text", "text": ""}))
        + &delta(0, json!({"type": "text_delta", "text": "It says hi."}))
        + &stop(0)
        + &message_end("end_turn")
}

fn reasoning() -> Vec<ReasoningBlock> {
    vec![
        ReasoningBlock::Thinking { thinking: THINKING.concat(), signature: SIGNATURE.into() },
        ReasoningBlock::RedactedThinking { data: REDACTED.into() },
    ]
}

fn read_call() -> ToolCall {
    ToolCall { id: "toolu_1".into(), name: "read".into(), arguments: json!({"path": "a.txt"}) }
}

#[tokio::test]
async fn a_tool_round_with_thinking_sends_the_thinking_back_first_and_unchanged() {
    let server =
        ReplayServer::start(vec![Reply::events(&thinking_then_tool_use()).in_pieces_of(11), Reply::events(&answer())])
            .await;
    let client = AnthropicConfig::new("sk-ant-test").base_url(server.url()).build().expect("client");
    let thinking = json!({"type": "enabled", "budget_tokens": 2048});
    let request = Request::new("claude-test")
        .tool(ToolDefinition::new("read", "Reads a file", json!({"type": "object"})))
        .extra("thinking", thinking.clone())
        .message(Message::user("What does a.txt say?"));

    // The thinking streams apart from the text, and the reply keeps every
    // block whole.
    let log = run(client.clone(), request.clone(), 1).await;
    let reply =
        AssistantMessage { text: "Reading it.".into(), tool_calls: vec![read_call()], reasoning: reasoning().into() };
    let mut expected: Vec<Result<StreamEvent, ErrorKind>> =
        THINKING.iter().map(|piece| Ok(StreamEvent::ReasoningDelta((*piece).to_owned()))).collect();
    expected.push(Ok(StreamEvent::TextDelta("Reading it.".into())));
    expected.push(Ok(StreamEvent::ToolCallDelta {
        index: 0,
        id: Some("toolu_1".into()),
        name: Some("read".into()),
        arguments_fragment: String::new(),
    }));
    expected.push(Ok(StreamEvent::ToolCallDelta {
        index: 0,
        id: None,
        name: None,
        arguments_fragment: "{\"path\": \"a.txt\"}".into(),
    }));
    expected.push(Ok(StreamEvent::Completed {
        message: reply.clone(),
        stop_reason: StopReason::ToolUse,
        usage: Usage::new(12, 30),
    }));
    assert_eq!(kinds(log), expected);

    // The tool round: the reply, then its result.
    let request = request.message(reply).message(Message::tool_result("toolu_1", "hi"));
    let log = run(client, request, 1).await;
    assert!(matches!(log.last(), Some(Ok(StreamEvent::Completed { .. }))), "{log:?}");
    let sent = server.requests()[1].json();
    assert_eq!(sent["thinking"], thinking);
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "What does a.txt say?"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": THINKING.concat(), "signature": SIGNATURE},
                {"type": "redacted_thinking", "data": REDACTED},
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.txt"}},
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"}]},
        ])
    );
}

#[test]
fn a_reply_of_calls_alone_gets_its_thinking_and_a_reply_of_thinking_alone_is_not_sent() {
    let client = AnthropicConfig::new("k").build().expect("client");
    let mut calls_only =
        AssistantMessage { text: "\n\n".into(), tool_calls: vec![read_call()], reasoning: reasoning().into() };
    // Gemini's signature of a call, from a conversation that changed
    // provider: not Anthropic's to read, never sent.
    calls_only.reasoning.push(ReasoningBlock::CallSignature { call_id: "toolu_1".into(), signature: "c2ln".into() });
    // Cut off while thinking: nothing the API would take (it refuses an
    // assistant message that ends with thinking).
    let thinking_only = AssistantMessage { reasoning: reasoning().into(), ..Default::default() };
    let request = Request::new("claude-test")
        .message(Message::user("go"))
        .message(calls_only)
        .message(Message::tool_result("toolu_1", "hi"))
        .message(thinking_only)
        .message(Message::user("again"));
    assert_eq!(
        client.body(&request)["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": THINKING.concat(), "signature": SIGNATURE},
                {"type": "redacted_thinking", "data": REDACTED},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.txt"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"},
                {"type": "text", "text": "again"},
            ]},
        ])
    );
}

/// Everything the parser yields for `stream`, fed in pieces of `size`
/// bytes, then ended.
fn parse(stream: &str, size: usize) -> Vec<Result<StreamEvent, ErrorKind>> {
    let mut parser = StreamParser::new();
    let mut out = VecDeque::new();
    for piece in stream.as_bytes().chunks(size) {
        parser.feed(piece, &mut out);
    }
    parser.finish(&mut out);
    kinds(out.into_iter().collect())
}

#[test]
fn the_parser_keeps_thinking_blocks_however_the_bytes_are_cut() {
    let stream = thinking_then_tool_use();
    let whole = parse(&stream, stream.len());
    let Some(Ok(StreamEvent::Completed { message, .. })) = whole.last() else { panic!("{whole:?}") };
    assert_eq!(message.reasoning, reasoning());
    // Cut anywhere, inside a character too, the same events come.
    for size in [1, 2, 3, 7, 64] {
        assert_eq!(parse(&stream, size), whole, "pieces of {size}");
    }
}

#[test]
fn thinking_given_with_its_start_and_pieces_for_other_blocks() {
    let stream = message_start()
        // Thinking and signature given whole with the start, then more.
        + &start(0, json!({"type": "thinking", "thinking": "whole ", "signature": "c2ln"}))
        + &delta(0, json!({"type": "thinking_delta", "thinking": "and more"}))
        + &delta(0, json!({"type": "signature_delta", "signature": "LW1vcmU="}))
        + &stop(0)
        // Pieces of thinking for blocks that are not thinking are skipped:
        // a redacted block, a text block, a block never started.
        + &start(1, json!({"type": "redacted_thinking", "data": "ZW5j"}))
        + &delta(1, json!({"type": "signature_delta", "signature": "x"}))
        + &delta(1, json!({"type": "thinking_delta", "thinking": "x"}))
        + &start(2, json!({"type": "text", "text": "ok"}))
        + &delta(2, json!({"type": "thinking_delta", "thinking": "x"}))
        + &delta(9, json!({"type": "thinking_delta", "thinking": "x"}))
        // An empty piece is no event.
        + &start(3, json!({"type": "thinking", "thinking": ""}))
        + &delta(3, json!({"type": "thinking_delta", "thinking": ""}))
        + &delta(3, json!({"type": "signature_delta", "signature": "Mw=="}))
        + &message_end("end_turn");
    let message = AssistantMessage {
        text: "ok".into(),
        reasoning: vec![
            ReasoningBlock::Thinking { thinking: "whole and more".into(), signature: "c2lnLW1vcmU=".into() },
            ReasoningBlock::RedactedThinking { data: "ZW5j".into() },
            ReasoningBlock::Thinking { thinking: String::new(), signature: "Mw==".into() },
        ]
        .into(),
        ..Default::default()
    };
    let expected = vec![
        Ok(StreamEvent::ReasoningDelta("whole ".into())),
        Ok(StreamEvent::ReasoningDelta("and more".into())),
        Ok(StreamEvent::TextDelta("ok".into())),
        Ok(StreamEvent::Completed { message, stop_reason: StopReason::EndTurn, usage: Usage::new(12, 30) }),
    ];
    assert_eq!(parse(&stream, 5), expected);
}

#[test]
fn a_reply_without_thinking_has_no_reasoning_and_serializes_as_before() {
    let events = parse(&answer(), 3);
    let Some(Ok(StreamEvent::Completed { message, .. })) = events.last() else { panic!("{events:?}") };
    assert!(message.reasoning.is_empty());
    assert_eq!(serde_json::to_value(message).expect("json"), json!({"text": "It says hi.", "tool_calls": []}));
}
