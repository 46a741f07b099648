//! An error object is classified the same wherever it comes: as an
//! OpenAI-compatible error chunk, as an Anthropic `error` event, or sent
//! without the event stream's framing (a proxy failing after the headers),
//! through either client: by its `code` when that is an HTTP status, else by
//! a `code` the providers document, else by its `type`. And parallel calls
//! sent at one index with their ids on every piece keep their own
//! arguments however their pieces interleave.
#![cfg(all(feature = "openai", feature = "anthropic"))]

use std::collections::VecDeque;

use agent_fsm::llm::{ErrorKind, ProviderError, StreamEvent, anthropic, openai};
use serde_json::{Value, json};

type Log = VecDeque<Result<StreamEvent, ProviderError>>;

/// What the OpenAI-compatible parser makes of `body`, to its end.
fn openai_reads(body: &str) -> Log {
    let mut parser = openai::StreamParser::new();
    let mut out = VecDeque::new();
    parser.feed(body.as_bytes(), &mut out);
    parser.finish(&mut out);
    out
}

/// What the Anthropic parser makes of `body`, to its end.
fn anthropic_reads(body: &str) -> Log {
    let mut parser = anthropic::StreamParser::new();
    let mut out = VecDeque::new();
    parser.feed(body.as_bytes(), &mut out);
    parser.finish(&mut out);
    out
}

/// The error that ended `log`.
fn failure(log: &Log) -> &ProviderError {
    match log.back() {
        Some(Err(error)) => error,
        _ => panic!("the reply did not fail: {log:?}"),
    }
}

#[test]
fn an_error_object_sent_without_framing_reads_as_the_same_object_in_an_event() {
    let cases = [
        // OpenRouter: the upstream's status as a number.
        (json!({"error": {"message": "Rate limit exceeded: free-models-per-day", "code": 429}}), "rate limited"),
        (json!({"error": {"message": "Provider returned error", "code": 502}}), "502"),
        // OpenAI: a precise reason this client does not know, beside the
        // broad type, which decides.
        (
            json!({"error": {"message": "Invalid value for 'tool_choice'", "type": "invalid_request_error",
                             "param": "tool_choice", "code": "invalid_value"}}),
            "refused",
        ),
        (
            json!({"error": {"message": "The server had an error", "type": "server_error", "code": "internal_failure"}}),
            "500",
        ),
        // A reason the providers document, in the code.
        (json!({"error": {"message": "out", "type": "requests", "code": "insufficient_quota"}}), "quota"),
    ];
    for (error, expected) in cases {
        let as_event = openai_reads(&format!("data: {error}\n\n"));
        let unframed = openai_reads(&format!("{error}\n"));
        let unframed_anthropic = anthropic_reads(&format!("{error}\n"));
        let kind = failure(&as_event).kind().clone();
        let matches = match expected {
            "rate limited" => matches!(kind, ErrorKind::RateLimited { .. }),
            "502" => matches!(kind, ErrorKind::ServerError { status: 502, .. }),
            "refused" => kind == ErrorKind::BadRequest,
            "500" => matches!(kind, ErrorKind::ServerError { status: 500, .. }),
            _ => kind == ErrorKind::QuotaExceeded,
        };
        assert!(matches, "{error} as an event: {kind:?}");
        assert_eq!(failure(&unframed).kind(), &kind, "{error} unframed, OpenAI's client");
        assert_eq!(failure(&unframed_anthropic).kind(), &kind, "{error} unframed, Anthropic's client");
        assert_eq!(
            failure(&unframed).is_retryable(),
            expected == "rate limited" || expected == "502" || expected == "500",
            "{error}"
        );
    }
    // An object with neither a type nor a code says nothing of the kind:
    // a broken stream, quoting it.
    let bare = openai_reads("{\"error\": {\"message\": \"upstream went away\"}}\n");
    let error = failure(&bare);
    assert_eq!(error.kind(), &ErrorKind::MalformedStream, "{error}");
    assert!(error.message().contains("upstream went away"), "{error}");
}

/// An Anthropic `error` event, in Anthropic's own wrapper.
fn anthropic_error_event(error: &Value) -> String {
    let start = json!({"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": []}});
    let error = json!({"type": "error", "error": error});
    format!("event: message_start\ndata: {start}\n\nevent: error\ndata: {error}\n\n")
}

#[test]
fn an_anthropic_error_event_reads_a_status_in_its_code() {
    // A gateway in front of several providers puts the upstream's status
    // in `code`, in Anthropic's wrapper as in OpenAI's.
    let rate_limited =
        anthropic_reads(&anthropic_error_event(&json!({"code": 429, "message": "Rate limited upstream"})));
    assert!(matches!(failure(&rate_limited).kind(), ErrorKind::RateLimited { .. }), "{rate_limited:?}");
    let unavailable = anthropic_reads(&anthropic_error_event(
        &json!({"type": "invalid_request_error", "code": "503", "message": "Upstream unavailable"}),
    ));
    assert!(matches!(failure(&unavailable).kind(), ErrorKind::ServerError { status: 503, .. }), "{unavailable:?}");
    assert!(failure(&unavailable).is_retryable());
    // Anthropic's own events, which have no code, read as before.
    let overloaded =
        anthropic_reads(&anthropic_error_event(&json!({"type": "overloaded_error", "message": "Overloaded"})));
    assert!(matches!(failure(&overloaded).kind(), ErrorKind::Overloaded { .. }), "{overloaded:?}");
    let refused = anthropic_reads(&anthropic_error_event(&json!({"type": "invalid_request_error", "message": "no"})));
    assert_eq!(failure(&refused).kind(), &ErrorKind::BadRequest);
    let unknown = anthropic_reads(&anthropic_error_event(&json!({"type": "something_new", "message": "?"})));
    assert_eq!(failure(&unknown).kind(), &ErrorKind::Unrecognized);
}

/// A chunk of one piece of a call at index 0.
fn piece(id: &str, name: Option<&str>, arguments: &str) -> String {
    let mut function = json!({"arguments": arguments});
    if let Some(name) = name {
        function["name"] = json!(name);
    }
    let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function",
        "function": function}]}}]});
    format!("data: {chunk}\n\n")
}

#[test]
fn calls_at_one_index_with_their_ids_on_every_piece_keep_their_own_arguments() {
    // Every call at index 0 with its own id (tolerated), its id again on
    // every later piece (tolerated too), and the pieces interleaved.
    let end = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    let body = [
        piece("call_a", Some("read"), ""),
        piece("call_b", Some("grep"), ""),
        piece("call_a", None, "{\"path\":"),
        piece("call_b", None, "{\"q\":"),
        piece("call_a", None, "\"a\"}"),
        piece("call_b", None, "\"b\"}"),
        format!("data: {end}\n\ndata: [DONE]\n\n"),
    ]
    .concat();
    let log = openai_reads(&body);
    let Some(Ok(StreamEvent::Completed { message, .. })) = log.back() else { panic!("not completed: {log:?}") };
    let calls: Vec<(&str, &str, &Value)> =
        message.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), &c.arguments)).collect();
    assert_eq!(calls, [("call_a", "read", &json!({"path": "a"})), ("call_b", "grep", &json!({"q": "b"}))]);
    // Each piece was delivered as its own call's.
    let indexes: Vec<usize> = log
        .iter()
        .filter_map(|e| match e {
            Ok(StreamEvent::ToolCallDelta { index, .. }) => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(indexes, [0, 1, 0, 1, 0, 1]);
}
