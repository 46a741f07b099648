//! What a server sends is bounded: an event that never ends, a reply that
//! never stops growing and a reply with endless tool calls each end the
//! reply with a `MalformedStream` error, on both providers' parsers and
//! through the real client; a large reply within the limits is not cut.
#![cfg(all(feature = "openai", feature = "anthropic", feature = "runtime"))]

#[path = "support/caller.rs"]
mod caller;
#[path = "support/replay.rs"]
mod replay;

use std::collections::VecDeque;

use agent_fsm::llm::{
    ErrorKind, Message, OpenAiConfig, ProviderError, Request, StreamEvent, anthropic as anth, openai as oai,
};
use caller::run;
use replay::{ReplayServer, Reply};
use serde_json::json;

type Out = VecDeque<Result<StreamEvent, ProviderError>>;

const MIB: usize = 1 << 20;

/// The error the parser ended with, if it did; what it delivered before.
fn outcome(out: Out) -> (usize, Option<ProviderError>) {
    let mut delivered = 0;
    for item in out {
        match item {
            Ok(_) => delivered += 1,
            Err(error) => return (delivered, Some(error)),
        }
    }
    (delivered, None)
}

fn openai_text(text: &str) -> String {
    format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}))
}

#[test]
fn an_event_that_never_ends_is_refused_past_16_mib() {
    let megabyte = "a".repeat(MIB);
    // OpenAI: one `data:` line that never ends.
    let mut parser = oai::StreamParser::new();
    let mut out = Out::new();
    let start = b"data: {\"choices\": [{\"delta\": {\"content\": \"";
    parser.feed(start, &mut out);
    for _ in 0..15 {
        parser.feed(megabyte.as_bytes(), &mut out);
    }
    parser.feed(&megabyte.as_bytes()[start.len()..], &mut out);
    assert!(out.is_empty() && !parser.is_done(), "exactly 16 MiB is still within the limit");
    parser.feed(b"a", &mut out);
    let (delivered, error) = outcome(out);
    let error = error.expect("refused past the limit");
    assert_eq!((delivered, error.kind()), (0, &ErrorKind::MalformedStream));
    assert!(error.message().contains("16 MiB"), "{error}");
    assert!(parser.is_done());

    // Anthropic: an event of many `data:` lines, none blank.
    let mut parser = anth::StreamParser::new();
    let mut out = Out::new();
    let line = format!("data: {}\n", "b".repeat(MIB - 7));
    for _ in 0..17 {
        parser.feed(line.as_bytes(), &mut out);
    }
    let (_, error) = outcome(out);
    assert_eq!(error.expect("refused past the limit").kind(), &ErrorKind::MalformedStream);
}

#[test]
fn a_reply_that_keeps_growing_is_refused_past_64_mib() {
    let piece = openai_text(&"t".repeat(MIB));
    let mut parser = oai::StreamParser::new();
    let mut out = Out::new();
    for _ in 0..64 {
        parser.feed(piece.as_bytes(), &mut out);
    }
    assert_eq!(outcome(std::mem::take(&mut out)), (64, None), "64 MiB of text is within the limit");
    parser.feed(openai_text("one more").as_bytes(), &mut out);
    let (delivered, error) = outcome(out);
    let error = error.expect("refused past the limit");
    assert_eq!((delivered, error.kind()), (1, &ErrorKind::MalformedStream));
    assert!(error.message().contains("64 MiB"), "{error}");

    // Anthropic: arguments given whole when each call begins count too.
    let mut parser = anth::StreamParser::new();
    let mut out = Out::new();
    let input = json!({"blob": "x".repeat(4 * MIB)});
    for index in 0..17 {
        let start = json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": format!("t{index}"), "name": "f", "input": input}});
        parser.feed(format!("event: content_block_start\ndata: {start}\n\n").as_bytes(), &mut out);
        if index == 14 {
            assert_eq!(outcome(std::mem::take(&mut out)), (15, None), "15 calls of 4 MiB are within the limit");
        }
    }
    let (_, error) = outcome(out);
    assert!(error.expect("refused past the limit").message().contains("64 MiB"));
}

#[test]
fn tool_call_arguments_ids_and_names_count_toward_the_reply() {
    // Arguments, streamed 1 MiB a piece to one call.
    let piece = |i: usize, fragment: &str| {
        let call = if i == 0 {
            json!({"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": fragment}})
        } else {
            json!({"index": 0, "function": {"arguments": fragment}})
        };
        format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
    };
    let fragment = "a".repeat(MIB);
    let mut parser = oai::StreamParser::new();
    let mut out = Out::new();
    for i in 0..63 {
        parser.feed(piece(i, &fragment).as_bytes(), &mut out);
    }
    assert_eq!(outcome(std::mem::take(&mut out)), (63, None));
    parser.feed(piece(63, &fragment).as_bytes(), &mut out);
    let (_, error) = outcome(out);
    assert!(error.expect("refused past the limit").message().contains("64 MiB"));

    // Ids and names: 32 calls of a 1 MiB id and a 1 MiB name are 64 MiB.
    let call = |i: usize| {
        let id = format!("{i:04}{}", "i".repeat(MIB - 4));
        let name = "n".repeat(MIB);
        let call = json!({"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}});
        format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
    };
    let mut parser = oai::StreamParser::new();
    let mut out = Out::new();
    for i in 0..32 {
        parser.feed(call(i).as_bytes(), &mut out);
    }
    assert_eq!(outcome(std::mem::take(&mut out)), (32, None), "64 MiB of ids and names is within the limit");
    parser.feed(call(32).as_bytes(), &mut out);
    let (_, error) = outcome(out);
    assert!(error.expect("refused past the limit").message().contains("64 MiB"));
}

#[test]
fn an_events_name_counts_toward_the_event() {
    let mut parser = anth::StreamParser::new();
    let mut out = Out::new();
    parser.feed(format!("event: {}\n", "e".repeat(10 * MIB)).as_bytes(), &mut out);
    parser.feed(format!("data: {}", "d".repeat(6 * MIB - 6)).as_bytes(), &mut out);
    assert!(out.is_empty() && !parser.is_done(), "16 MiB with the name is within the limit");
    parser.feed(&[b'd'; 64], &mut out);
    let (_, error) = outcome(out);
    assert!(error.expect("refused past the limit").message().contains("16 MiB"));
}

fn openai_calls(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|i| {
            let call = json!({"index": i, "id": format!("c{i}"), "type": "function",
                "function": {"name": "f", "arguments": "{}"}});
            format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
        })
        .collect()
}

#[test]
fn a_reply_with_more_than_1024_tool_calls_is_refused() {
    let mut parser = oai::StreamParser::new();
    let mut out = Out::new();
    parser.feed(openai_calls(0, 1_024).as_bytes(), &mut out);
    assert_eq!(outcome(std::mem::take(&mut out)), (1_024, None));
    let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    let mut whole = oai::StreamParser::new();
    whole.feed(openai_calls(0, 1_024).as_bytes(), &mut out);
    whole.feed(format!("data: {finish}\n\ndata: [DONE]\n\n").as_bytes(), &mut out);
    match out.pop_back() {
        Some(Ok(StreamEvent::Completed { message, .. })) => assert_eq!(message.tool_calls.len(), 1_024),
        other => panic!("1,024 calls complete: {other:?}"),
    }

    parser.feed(openai_calls(1_024, 1).as_bytes(), &mut out);
    let (_, error) = outcome(std::mem::take(&mut out));
    assert!(error.expect("refused past the limit").message().contains("1024 tool calls"));
}

#[test]
fn calls_past_the_limit_in_one_event_end_the_reply_at_the_limit() {
    // One chunk holding 20,000 calls: the reply ends at the 1,025th,
    // rather than after the whole event, each new call looked for among
    // all the earlier ones (quadratic: minutes, for the 16 MiB an event
    // may hold) and each delivered.
    let calls: Vec<_> = (0..20_000).map(|i| json!({"index": i, "function": {"name": "f"}})).collect();
    let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": calls}}]});
    let mut parser = oai::StreamParser::new();
    let mut out = Out::new();
    parser.feed(format!("data: {chunk}\n\n").as_bytes(), &mut out);
    let (delivered, error) = outcome(out);
    assert!(error.expect("refused past the limit").message().contains("1024 tool calls"));
    assert_eq!(delivered, 1_025, "the reply ends at the call past the limit");
    assert!(parser.is_done());

    // Anthropic: many blocks in one piece of the body.
    let block = |i: usize| {
        let data = json!({"type": "content_block_start", "index": i,
            "content_block": {"type": "tool_use", "id": format!("t{i}"), "name": "f", "input": {}}});
        format!("event: content_block_start\ndata: {data}\n\n")
    };
    let body: String = (0..20_000).map(block).collect();
    let mut parser = anth::StreamParser::new();
    let mut out = Out::new();
    parser.feed(body.as_bytes(), &mut out);
    let (delivered, error) = outcome(out);
    assert!(error.expect("refused past the limit").message().contains("1024 tool calls"));
    assert_eq!(delivered, 1_025, "the reply ends at the call past the limit");
}

#[tokio::test]
async fn through_the_client_an_endless_line_ends_the_reply_with_an_error() {
    let endless = format!("data: {}", "z".repeat(17 * MIB));
    let server = ReplayServer::start(vec![Reply::events(&endless)]).await;
    let client = OpenAiConfig::without_key().base_url(server.url()).build().expect("client");
    let log = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        run(client, Request::new("m").message(Message::user("hi")), 1),
    )
    .await
    .expect("in time");
    let errors: Vec<_> = log.iter().filter_map(|item| item.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{log:?}");
    assert_eq!(errors[0].kind(), &ErrorKind::MalformedStream);
    assert!(errors[0].message().contains("16 MiB"), "{}", errors[0]);
}

/// An Anthropic `content_block_start` of a block that is neither text nor
/// a tool call: `server_tool_use` (skipped) or `thinking` (kept).
fn other_block(index: usize, kind: &str) -> String {
    let block = match kind {
        "thinking" => json!({"type": "thinking", "thinking": ""}),
        _ => json!({"type": kind, "id": format!("srvtoolu_{index}"), "name": "web_search", "input": {}}),
    };
    let data = json!({"type": "content_block_start", "index": index, "content_block": block});
    format!("event: content_block_start\ndata: {data}\n\n")
}

#[test]
fn blocks_other_than_text_and_tool_calls_are_refused_past_4096() {
    let mut parser = anth::StreamParser::new();
    let mut out = Out::new();
    for index in 0..4_096 {
        parser.feed(other_block(index, "server_tool_use").as_bytes(), &mut out);
    }
    // A skipped block started again is one block, not two.
    parser.feed(other_block(17, "server_tool_use").as_bytes(), &mut out);
    assert!(out.is_empty() && !parser.is_done(), "4,096 skipped blocks are within the limit");
    // Their deltas are still skipped, not taken for a tool call's.
    let delta = json!({"type": "content_block_delta", "index": 4_095, "delta": {"type": "input_json_delta", "partial_json": "{"}});
    parser.feed(format!("event: content_block_delta\ndata: {delta}\n\n").as_bytes(), &mut out);
    assert!(out.is_empty() && !parser.is_done(), "a skipped block's delta is skipped");
    parser.feed(other_block(4_096, "thinking").as_bytes(), &mut out);
    let (delivered, error) = outcome(out);
    let error = error.expect("refused past the limit");
    assert_eq!((delivered, error.kind()), (0, &ErrorKind::MalformedStream));
    assert!(error.message().contains("4096 blocks"), "{error}");
    assert!(parser.is_done());
}

#[test]
fn thinking_blocks_started_again_at_one_index_are_each_kept_and_counted() {
    // Each start of a thinking block is a block of the reply, kept: a
    // server that starts one at the same index again and again must not
    // grow the reply without bound.
    let mut parser = anth::StreamParser::new();
    let mut out = Out::new();
    for _ in 0..4_096 {
        parser.feed(other_block(0, "thinking").as_bytes(), &mut out);
    }
    assert!(out.is_empty() && !parser.is_done(), "4,096 thinking blocks are within the limit");
    parser.feed(other_block(0, "thinking").as_bytes(), &mut out);
    let (delivered, error) = outcome(out);
    let error = error.expect("refused past the limit");
    assert_eq!((delivered, error.kind()), (0, &ErrorKind::MalformedStream));
    assert!(error.message().contains("4096 blocks"), "{error}");
}

#[test]
fn thinking_signatures_and_redacted_data_count_toward_the_reply() {
    let delta = |kind: &str, field: &str, piece: &str| {
        let data = json!({"type": "content_block_delta", "index": 0, "delta": {"type": kind, field: piece}});
        format!("event: content_block_delta\ndata: {data}\n\n")
    };
    let piece = "t".repeat(MIB);
    let mut parser = anth::StreamParser::new();
    let mut out = Out::new();
    parser.feed(other_block(0, "thinking").as_bytes(), &mut out);
    for i in 0..62 {
        let (kind, field) = if i % 2 == 0 { ("thinking_delta", "thinking") } else { ("signature_delta", "signature") };
        parser.feed(delta(kind, field, &piece).as_bytes(), &mut out);
    }
    // Redacted thinking's data, given whole when its block begins.
    let redacted = json!({"type": "content_block_start", "index": 1,
        "content_block": {"type": "redacted_thinking", "data": "d".repeat(2 * MIB)}});
    parser.feed(format!("event: content_block_start\ndata: {redacted}\n\n").as_bytes(), &mut out);
    // Only thinking is delivered as it streams: 31 pieces.
    assert_eq!(outcome(std::mem::take(&mut out)), (31, None), "64 MiB of reasoning is within the limit");
    parser.feed(delta("signature_delta", "signature", "s").as_bytes(), &mut out);
    let (delivered, error) = outcome(out);
    let error = error.expect("refused past the limit");
    assert_eq!((delivered, error.kind()), (0, &ErrorKind::MalformedStream));
    assert!(error.message().contains("64 MiB"), "{error}");
}

/// A thinking block given whole when it begins counts its text and its
/// signature, added: three of a 2-byte text and a 12 MiB signature are
/// 36 MiB, within the limit; two more of 14 MiB of text take the reply past
/// 64 MiB with the second.
#[test]
fn thinking_given_whole_at_its_start_counts_text_and_signature() {
    let start = |index: usize, thinking: &str, signature: &str| {
        let data = json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "thinking", "thinking": thinking, "signature": signature}});
        format!("event: content_block_start\ndata: {data}\n\n")
    };
    let mut parser = anth::StreamParser::new();
    let mut out = Out::new();
    let signature = "s".repeat(12 * MIB);
    for index in 0..3 {
        parser.feed(start(index, "ab", &signature).as_bytes(), &mut out);
    }
    let text = "t".repeat(14 * MIB);
    parser.feed(start(3, &text, "s").as_bytes(), &mut out);
    assert_eq!(outcome(std::mem::take(&mut out)), (4, None), "50 MiB of reasoning is within the limit");
    parser.feed(start(4, &text, "s").as_bytes(), &mut out);
    let (delivered, error) = outcome(out);
    let error = error.expect("refused past the limit");
    assert_eq!((delivered, error.kind()), (1, &ErrorKind::MalformedStream));
    assert!(error.message().contains("64 MiB"), "{error}");
}

#[test]
fn an_openai_compatible_servers_reasoning_counts_toward_the_reply() {
    // `reasoning_content` is delivered, not kept, but it is the server's
    // bytes all the same.
    let reasoning = |text: &str| {
        let delta = json!({"content": null, "reasoning_content": text});
        format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}))
    };
    let piece = reasoning(&"r".repeat(MIB));
    let mut parser = oai::StreamParser::new();
    let mut out = Out::new();
    for _ in 0..63 {
        parser.feed(piece.as_bytes(), &mut out);
    }
    parser.feed(openai_text(&"t".repeat(MIB)).as_bytes(), &mut out);
    assert_eq!(outcome(std::mem::take(&mut out)), (64, None), "64 MiB of reasoning and text is within the limit");
    parser.feed(reasoning("r").as_bytes(), &mut out);
    let (delivered, error) = outcome(out);
    let error = error.expect("refused past the limit");
    assert_eq!((delivered, error.kind()), (1, &ErrorKind::MalformedStream));
    assert!(error.message().contains("64 MiB"), "{error}");
}
