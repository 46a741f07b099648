//! What the provider layer costs per streamed token: one reply of 1,000
//! text deltas in each provider's recorded wire format, measured three
//! ways in one run, each reported as events per second:
//!
//! - `parser`: the provider's `StreamParser` alone, fed the body one event
//!   per piece (as the replay server writes it), its events dropped;
//! - `parser_machine`: the same, each event handed to the caller machine's
//!   `handle_event` (no runtime);
//! - `replay_executor`: the whole path: the replay server on loopback
//!   (raw HTTP/1.1, chunked), the real reqwest client, the parser, and the
//!   caller machine under the executor, its stream opened through the
//!   effects context; one request per iteration, a new agent each time.
//!   The server writes and flushes each event on its own, so every event
//!   is one read for the client: the worst case, a server streaming one
//!   token at a time;
//! - `replay_executor_16k`: the same, the body written in 16 KiB pieces,
//!   as a client that falls behind a fast server reads it (many events
//!   per read).
//!
//! `replay_executor / parser` is what HTTP, the executor and the machine
//! add to parsing alone.

#[path = "../tests/support/caller.rs"]
mod caller;
#[path = "../tests/support/replay.rs"]
mod replay;

use std::collections::VecDeque;
use std::hint::black_box;

use agent_fsm::llm::{AnthropicConfig, Message, OpenAiConfig, Request, anthropic, openai};
use criterion::{Criterion, Throughput};
use replay::{ReplayServer, Reply};
use serde_json::json;

/// Text deltas per reply.
const DELTAS: usize = 1_000;

/// A Chat Completions reply of `DELTAS` text deltas, as OpenAI writes it.
fn openai_body() -> String {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let body = json!({
            "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion.chunk", "created": 1_741_569_952,
            "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_fc9f1d7035",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}], "usage": null,
        });
        format!("data: {body}\n\n")
    };
    let mut body = chunk(json!({"role": "assistant", "content": "", "refusal": null}), None);
    for i in 0..DELTAS {
        body += &chunk(json!({"content": format!(" tok{}", i % 10)}), None);
    }
    body += &chunk(json!({}), Some("stop"));
    body += "data: [DONE]\n\n";
    body
}

/// A Messages reply of `DELTAS` text deltas, as Anthropic writes it.
fn anthropic_body() -> String {
    let event = |data: serde_json::Value| format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap_or(""));
    let mut body = event(json!({"type": "message_start", "message": {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}));
    body += &event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
    for i in 0..DELTAS {
        body += &event(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!(" tok{}", i % 10)}}),
        );
    }
    body += &event(json!({"type": "content_block_stop", "index": 0}));
    body += &event(
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 1000}}),
    );
    body += &event(json!({"type": "message_stop"}));
    body
}

/// The body's pieces, one per SSE event.
fn pieces(body: &str) -> Vec<Vec<u8>> {
    match Reply::events(body) {
        Reply::Events { pieces, .. } => pieces,
        Reply::Status { .. } => unreachable!("an event stream"),
    }
}

/// One way of streaming the reply, run once per call.
type Variant<'a> = Box<dyn FnMut() + 'a>;

/// One parser's interface, for both providers.
trait Parse: Default {
    fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<caller::Item>);
}

impl Parse for openai::StreamParser {
    fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<caller::Item>) {
        openai::StreamParser::feed(self, chunk, out);
    }
}

impl Parse for anthropic::StreamParser {
    fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<caller::Item>) {
        anthropic::StreamParser::feed(self, chunk, out);
    }
}

/// Parses the reply; drops (`machine` is `None`) or hands each event to a
/// machine. Returns how many events there were.
fn parse<P: Parse>(pieces: &[Vec<u8>], mut machine: Option<&mut caller::caller::Machine>) -> usize {
    let mut parser = P::default();
    let mut out = VecDeque::new();
    let mut events = 0;
    for piece in pieces {
        parser.feed(piece, &mut out);
        for item in out.drain(..) {
            events += 1;
            match machine.as_deref_mut() {
                Some(m) => {
                    black_box(m.handle_event(caller::caller::Event::Llm(item)));
                }
                None => drop(black_box(item)),
            }
        }
    }
    events
}

fn bench_provider<P: Parse, C: agent_fsm::llm::Provider + Clone>(
    c: &mut Criterion,
    name: &str,
    body: &str,
    client: impl Fn(&ReplayServer) -> C,
) {
    let pieces = pieces(body);
    // Every delta and the completion.
    assert_eq!(parse::<P>(&pieces, None), DELTAS + 1);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let server = runtime.block_on(ReplayServer::always(Reply::events(body)));
    let batched = runtime.block_on(ReplayServer::always(Reply::events(body).in_pieces_of(16 * 1024)));
    let (client, batched) = (client(&server), client(&batched));
    let request = Request::new("model").message(Message::user("count"));

    let variants: Vec<(&str, Variant<'_>)> = vec![
        ("parser", Box::new(|| assert_eq!(parse::<P>(black_box(&pieces), None), DELTAS + 1))),
        (
            "parser_machine",
            Box::new(|| {
                let mut machine = caller::caller::Machine::new(caller::caller::Config { max_attempts: 1 });
                machine.handle_event(caller::caller::Event::Start);
                assert_eq!(parse::<P>(black_box(&pieces), Some(&mut machine)), DELTAS + 1);
            }),
        ),
        (
            "replay_executor",
            Box::new(|| {
                let log = runtime.block_on(caller::run(client.clone(), request.clone(), 1));
                assert_eq!(log.len(), DELTAS + 1);
            }),
        ),
        (
            "replay_executor_16k",
            Box::new(|| {
                let log = runtime.block_on(caller::run(batched.clone(), request.clone(), 1));
                assert_eq!(log.len(), DELTAS + 1);
            }),
        ),
    ];

    // `PROVIDERS_COUNT=openai/parser PROVIDERS_REPS=n`: run one variant n
    // times and nothing else, for an instruction count (callgrind, the run
    // with 11 minus the run with 1, divided by 10 × 1,001 events).
    if let Ok(only) = std::env::var("PROVIDERS_COUNT") {
        let reps: usize = std::env::var("PROVIDERS_REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
        for (variant, mut run) in variants {
            if only == format!("{name}/{variant}") {
                (0..reps).for_each(|_| run());
            }
        }
        return;
    }
    let mut group = c.benchmark_group(format!("providers/{name}"));
    group.throughput(Throughput::Elements(u64::try_from(DELTAS + 1).unwrap_or(u64::MAX)));
    for (variant, mut run) in variants {
        group.bench_function(variant, |b| b.iter(&mut run));
    }
    group.finish();
}

fn providers(c: &mut Criterion) {
    bench_provider::<openai::StreamParser, _>(c, "openai", &openai_body(), |server| {
        OpenAiConfig::new("k").base_url(server.url()).build().expect("client")
    });
    bench_provider::<anthropic::StreamParser, _>(c, "anthropic", &anthropic_body(), |server| {
        AnthropicConfig::new("k").base_url(server.url()).build().expect("client")
    });
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    providers(&mut c);
    c.final_summary();
}
