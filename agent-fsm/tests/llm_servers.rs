//! The OpenAI-compatible client against loopback servers that write the
//! Chat Completions stream as other providers' servers do (Gemini's
//! OpenAI-compatible endpoint, Hugging Face's text-generation-inference,
//! Mistral's reasoning models, Poolside's, DeepSeek's, Foundry Local,
//! Groq's, and servers that ignore `"stream": true` and answer with the
//! whole completion): a reply in their shape must come out whole, with its
//! true stop reason and usage, and a failure they report must be
//! classified by what it says; what a server gave to be sent back (a
//! call's signature) must go back.
#![cfg(all(feature = "openai", feature = "runtime"))]

#[path = "support/caller.rs"]
mod caller;
#[path = "support/openai_chunks.rs"]
mod openai_chunks;
#[path = "support/replay.rs"]
mod replay;

use agent_fsm::llm::{
    AssistantMessage, ErrorKind, Message, ProviderError, ReasoningBlock, StopReason, StreamEvent, ToolCall, Usage,
};
use caller::{kinds, run};
use openai_chunks::{chunk, openai, request, text};
use replay::{ReplayServer, Reply};
use serde_json::{Value, json};

fn completed(message: AssistantMessage, stop_reason: StopReason, usage: Usage) -> StreamEvent {
    StreamEvent::Completed { message, stop_reason, usage }
}

/// Gemini's signature of the call `call_id`, as the reply keeps it.
fn signature(call_id: &str, signature: &str) -> ReasoningBlock {
    ReasoningBlock::CallSignature { call_id: call_id.into(), signature: signature.into() }
}

/// The reply of the stream `log` ends with.
fn reply_of(log: Vec<Result<StreamEvent, ProviderError>>) -> AssistantMessage {
    match log.into_iter().last() {
        Some(Ok(StreamEvent::Completed { message, .. })) => message,
        other => panic!("the stream ends with no reply: {other:?}"),
    }
}

#[tokio::test]
async fn a_calls_thought_signature_goes_back_with_it() {
    // Gemini 3 behind its OpenAI-compatible endpoint refuses the next
    // request unless each call of the turn comes back with the signature
    // it was given: here the first call has one (split over two chunks),
    // the second none; the third arrives with its arguments in pieces
    // and the signature on the last.
    let piece = |index: usize, mut call: Value| {
        call["index"] = json!(index);
        json!({"tool_calls": [call]})
    };
    let stream = [
        chunk(
            piece(
                0,
                json!({"id": "fc-1", "type": "function", "function": {"name": "read", "arguments": "{}"},
                               "extra_content": {"google": {"thought_signature": "c2ln"}}}),
            ),
            Value::Null,
        ),
        chunk(piece(0, json!({"extra_content": {"google": {"thought_signature": "LTE="}}})), Value::Null),
        chunk(
            piece(1, json!({"id": "fc-2", "type": "function", "function": {"name": "now", "arguments": "{}"}})),
            Value::Null,
        ),
        chunk(
            piece(2, json!({"id": "fc-3", "type": "function", "function": {"name": "ls", "arguments": "{\"p\""}})),
            Value::Null,
        ),
        chunk(
            piece(
                2,
                json!({"function": {"arguments": ":1}"}, "extra_content": {"google": {"thought_signature": "My0z"}}}),
            ),
            json!("tool_calls"),
        ),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let answer = chunk(json!({"content": "done"}), json!("stop")) + "data: [DONE]\n\n";
    let server = ReplayServer::start(vec![Reply::events(&stream), Reply::events(&answer)]).await;

    let reply = reply_of(run(openai(&server), request(), 1).await);
    assert_eq!(reply.reasoning, vec![signature("fc-1", "c2lnLTE="), signature("fc-3", "My0z")]);
    let next = request()
        .message(reply)
        .message(Message::tool_result("fc-1", "a"))
        .message(Message::tool_result("fc-2", "b"))
        .message(Message::tool_result("fc-3", "c"));
    run(openai(&server), next, 1).await;
    let sent = server.requests()[1].json();
    let calls = &sent["messages"][1]["tool_calls"];
    let signatures: Vec<&Value> = (0..3).map(|i| &calls[i]["extra_content"]["google"]["thought_signature"]).collect();
    assert_eq!(signatures, [&json!("c2lnLTE="), &Value::Null, &json!("My0z")], "sent: {sent}");
    assert!(calls[1].get("extra_content").is_none(), "a call without a signature is sent as before: {sent}");
}

#[tokio::test]
async fn tool_calls_that_end_with_stop_are_tool_use() {
    // Gemini's OpenAI-compatible endpoint: the calls whole, without
    // `index`, each with its id and Google's `extra_content`; then the
    // usage and `"finish_reason": "stop"`, which that server writes for a
    // reply of tool calls too.
    let call = |id: &str, name: &str, arguments: &str, signature: &str| {
        json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments},
               "extra_content": {"google": {"thought_signature": signature}}})
    };
    let calls = [
        call("function-call-1", "read", r#"{"path":"a.rs"}"#, "c2lnLTE="),
        call("function-call-2", "now", "", "c2lnLTI="),
    ];
    let usage = json!({"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12});
    let last =
        json!({"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": "stop"}], "usage": usage});
    let stream = [
        chunk(json!({"role": "assistant", "tool_calls": calls}), Value::Null),
        format!("data: {last}\n\n"),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    // And a reply of text that ends with `stop` still ends its turn.
    let answer = chunk(json!({"content": "done"}), json!("stop")) + "data: [DONE]\n\n";
    let server = ReplayServer::start(vec![Reply::events(&stream), Reply::events(&answer)]).await;

    let log = kinds(run(openai(&server), request(), 1).await);
    let delta = |index, id: &str, name: &str, fragment: &str| StreamEvent::ToolCallDelta {
        index,
        id: Some(id.to_owned()),
        name: Some(name.to_owned()),
        arguments_fragment: fragment.to_owned(),
    };
    let message = AssistantMessage {
        tool_calls: vec![
            ToolCall { id: "function-call-1".into(), name: "read".into(), arguments: json!({"path": "a.rs"}) },
            ToolCall { id: "function-call-2".into(), name: "now".into(), arguments: json!({}) },
        ],
        // Each call's thought signature, kept to go back with it.
        reasoning: vec![signature("function-call-1", "c2lnLTE="), signature("function-call-2", "c2lnLTI=")].into(),
        ..AssistantMessage::default()
    };
    assert_eq!(
        log,
        vec![
            Ok(delta(0, "function-call-1", "read", r#"{"path":"a.rs"}"#)),
            Ok(delta(1, "function-call-2", "now", "")),
            Ok(completed(message, StopReason::ToolUse, Usage::new(7, 5))),
        ]
    );

    let log = kinds(run(openai(&server), request(), 1).await);
    let message = AssistantMessage { text: "done".into(), ..AssistantMessage::default() };
    assert_eq!(log, vec![Ok(text("done")), Ok(completed(message, StopReason::EndTurn, Usage::default()))]);
}

/// An error as text-generation-inference (and its forks) writes one into
/// the stream: the message as a string, and its own type beside it.
fn tgi_error(message: &str, error_type: &str) -> String {
    format!("data: {}\n\n", json!({"error": message, "error_type": error_type}))
}

#[tokio::test]
async fn an_error_given_as_text_is_classified_by_its_type_and_message() {
    // text-generation-inference checks the request once the stream has
    // begun, and reports what went wrong as `{"error": "…", "error_type"}`.
    let overloaded = tgi_error("Model is overloaded", "overloaded");
    let failed = chunk(json!({"role": "assistant", "content": "Hel"}), Value::Null)
        + &tgi_error("Request failed during generation: Server error: CUDA out of memory", "generation");
    let too_long = "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` \
                    tokens and 200 `max_new_tokens`";
    let refused = tgi_error(too_long, "validation");
    let server = ReplayServer::start(vec![
        Reply::events(&overloaded),
        Reply::events(&failed),
        Reply::events(&refused),
        Reply::events(&tgi_error("Input validation error: `top_p` must be > 0.0 and < 1.0", "validation")),
    ])
    .await;

    let log = run(openai(&server), request(), 3).await;
    let messages: Vec<&str> = log.iter().filter_map(|item| item.as_ref().err()).map(|e| e.message()).collect();
    assert_eq!(
        messages,
        ["Model is overloaded", "Request failed during generation: Server error: CUDA out of memory", too_long]
    );
    assert_eq!(
        kinds(log),
        vec![
            Err(ErrorKind::Overloaded { retry_after: None }),
            Ok(text("Hel")),
            Err(ErrorKind::ServerError { status: 500, retry_after: None }),
            Err(ErrorKind::ContextTooLong),
        ]
    );
    assert_eq!(kinds(run(openai(&server), request(), 3).await), vec![Err(ErrorKind::BadRequest)]);
}

#[tokio::test]
async fn content_given_as_a_list_of_parts_is_read_for_its_text() {
    // Mistral's reasoning models: `content` is a list of typed parts, the
    // reasoning in `thinking` parts (not the answer), the answer in `text`
    // parts or, later in the reply, as a string.
    let thinking = json!([{"type": "thinking", "thinking": [{"type": "text", "text": "The user greets."}]}]);
    let stream = [
        chunk(json!({"role": "assistant", "content": thinking}), Value::Null),
        chunk(json!({"content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo"}]}), Value::Null),
        chunk(json!({"content": []}), Value::Null),
        chunk(json!({"content": ", wörld"}), Value::Null),
        chunk(json!({"content": ""}), json!("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream).in_pieces_of(7)]).await;
    let message = AssistantMessage { text: "Hello, wörld".into(), ..AssistantMessage::default() };
    assert_eq!(
        kinds(run(openai(&server), request(), 1).await),
        vec![Ok(text("Hello")), Ok(text(", wörld")), Ok(completed(message, StopReason::EndTurn, Usage::default()))]
    );
}

#[tokio::test]
async fn a_calls_later_fragments_under_another_id_continue_it() {
    // Poolside's: a call's first fragment has its id and name, every later
    // one another id (the same for all) and no name. Then a second call at
    // the same index, with a name: a call of its own.
    let piece = |id: &str, name: Option<&str>, arguments: &str| {
        let mut function = json!({"arguments": arguments});
        if let Some(name) = name {
            function["name"] = json!(name);
        }
        chunk(json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": function}]}), Value::Null)
    };
    let stream = [
        piece("call_a", Some("read"), ""),
        piece("call_x", None, "{\"path\":"),
        piece("call_x", None, "\"a.rs\"}"),
        piece("call_b", Some("now"), "{}"),
        chunk(json!({}), json!("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let log = run(openai(&server), request(), 1).await;
    let Some(Ok(StreamEvent::Completed { message, stop_reason: StopReason::ToolUse, .. })) = log.last() else {
        panic!("{log:?}");
    };
    assert_eq!(
        message.tool_calls,
        vec![
            ToolCall { id: "call_a".into(), name: "read".into(), arguments: json!({"path": "a.rs"}) },
            ToolCall { id: "call_b".into(), name: "now".into(), arguments: json!({}) },
        ]
    );
}

#[tokio::test]
async fn a_reply_the_server_ran_out_of_resources_for_fails_and_is_retried() {
    // DeepSeek's: the inference system could not finish the reply, and
    // says so in the finish reason; the text so far is no whole reply.
    let cut = [
        chunk(json!({"role": "assistant", "content": "Hel"}), Value::Null),
        chunk(json!({"content": ""}), json!("insufficient_system_resource")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let whole = chunk(json!({"content": "Hello"}), json!("stop")) + "data: [DONE]\n\n";
    let server = ReplayServer::start(vec![Reply::events(&cut), Reply::events(&whole)]).await;
    let log = run(openai(&server), request(), 2).await;
    let error = log[1].as_ref().expect_err("the cut reply fails");
    assert!(error.message().contains("insufficient_system_resource"), "{error}");
    let message = AssistantMessage { text: "Hello".into(), ..AssistantMessage::default() };
    assert_eq!(
        kinds(log),
        vec![
            Ok(text("Hel")),
            Err(ErrorKind::ServerError { status: 500, retry_after: None }),
            Ok(text("Hello")),
            Ok(completed(message, StopReason::EndTurn, Usage::default())),
        ]
    );
}

#[tokio::test]
async fn the_stop_reasons_text_generation_inference_names_its_own_way_are_read() {
    // Its chat API passes its own names through: `stop_sequence` when a
    // stop sequence ended the reply, `eos_token` (in builds that do not
    // translate it to `stop`) when the model ended it.
    let reply = |reason: &str| chunk(json!({"content": "4"}), json!(reason)) + "data: [DONE]\n\n";
    let server =
        ReplayServer::start(vec![Reply::events(&reply("stop_sequence")), Reply::events(&reply("eos_token"))]).await;
    for stop_reason in [StopReason::StopSequence, StopReason::EndTurn] {
        let message = AssistantMessage { text: "4".into(), ..AssistantMessage::default() };
        assert_eq!(
            kinds(run(openai(&server), request(), 1).await),
            vec![Ok(text("4")), Ok(completed(message, stop_reason, Usage::default()))]
        );
    }
}

#[tokio::test]
async fn the_one_choice_asked_for_is_read_whatever_index_the_server_gives_it() {
    // Foundry Local (through 0.7): every chunk's choice numbered anew, 0,
    // 1, 2…, with the whole `message` beside the `delta` and more fields.
    let foundry = |n: usize, content: Value, finish_reason: Value| {
        let body = json!({"model": "qwen2.5-1.5b", "choices": [{
            "delta": {"role": "assistant", "content": content, "tool_calls": []},
            "message": {"role": "assistant", "content": content, "tool_calls": []},
            "index": n, "finish_reason": finish_reason, "logprobs": null}],
            "usage": null, "id": format!("chat.id.{n}"), "error": null, "IsDelta": false, "object": "chat.completion.chunk"});
        format!("data: {body}\n\n")
    };
    let stream = [
        foundry(0, json!("Wh"), Value::Null),
        foundry(1, json!("isper"), Value::Null),
        foundry(2, Value::Null, json!("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    // Two choices asked for: the first alone is the reply.
    let two = |index: usize, content: &str, finish_reason: Value| {
        let body =
            json!({"choices": [{"index": index, "delta": {"content": content}, "finish_reason": finish_reason}]});
        format!("data: {body}\n\n")
    };
    let both =
        [two(0, "a", Value::Null), two(1, "b", Value::Null), two(1, "", json!("length")), two(0, "", json!("stop"))]
            .concat()
            + "data: [DONE]\n\n";
    let server = ReplayServer::start(vec![Reply::events(&stream), Reply::events(&both)]).await;

    let message = AssistantMessage { text: "Whisper".into(), ..AssistantMessage::default() };
    assert_eq!(
        kinds(run(openai(&server), request(), 1).await),
        vec![Ok(text("Wh")), Ok(text("isper")), Ok(completed(message, StopReason::EndTurn, Usage::default()))]
    );
    let message = AssistantMessage { text: "a".into(), ..AssistantMessage::default() };
    assert_eq!(
        kinds(run(openai(&server), request().extra("n", json!(2)), 1).await),
        vec![Ok(text("a")), Ok(completed(message, StopReason::EndTurn, Usage::default()))]
    );
}

#[tokio::test]
async fn a_whole_completion_in_place_of_the_stream_is_read_as_the_reply() {
    // A server that ignores `"stream": true`: the whole chat completion,
    // as JSON, with `200`. First a reply of text, then one of tool calls
    // (content `null`, no `index` on the calls, as the non-stream format
    // has none).
    let text_reply = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there", "refusal": null},
                     "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
    });
    let calls = json!([
        {"id": "call_a", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "now", "arguments": "{}"}}
    ]);
    let tools_reply = json!({
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls},
                     "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 3}
    });
    let server = ReplayServer::start(vec![
        Reply::status(200, &text_reply.to_string()),
        Reply::status(200, &tools_reply.to_string()).header("content-type", "application/json; charset=utf-8"),
    ])
    .await;

    let log = run(openai(&server), request(), 1).await;
    let usage = Usage::new(9, 2);
    let message = AssistantMessage { text: "Hello there".to_owned(), ..AssistantMessage::default() };
    assert_eq!(log, vec![Ok(text("Hello there")), Ok(completed(message, StopReason::EndTurn, usage))]);

    let log = run(openai(&server), request(), 1).await;
    let Some(Ok(StreamEvent::Completed { message, stop_reason, usage })) = log.last() else {
        panic!("no completed reply: {log:?}")
    };
    assert_eq!(*stop_reason, StopReason::ToolUse);
    assert_eq!((usage.input_tokens, usage.output_tokens), (4, 3));
    assert_eq!(message.text, "");
    let calls: Vec<(&str, &str, Value)> =
        message.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone())).collect();
    assert_eq!(calls, vec![("call_a", "read", json!({"path": "a.rs"})), ("call_b", "now", json!({}))]);
}

#[tokio::test]
async fn an_error_object_in_place_of_the_stream_is_classified() {
    // A proxy that answers `200` with the provider's error object.
    let body = json!({"error": {"message": "This model's maximum context length is 8192 tokens",
                                "type": "invalid_request_error", "code": "context_length_exceeded"}});
    let server = ReplayServer::start(vec![Reply::status(200, &body.to_string())]).await;
    let log = run(openai(&server), request(), 1).await;
    assert_eq!(kinds(log), vec![Err(ErrorKind::ContextTooLong)]);
}

#[tokio::test]
async fn reasoning_deltas_are_delivered_and_not_kept_in_the_reply() {
    // DeepSeek's `reasoning_content`, then the answer; then a server that
    // writes `reasoning` (OpenRouter's, Groq's) and one that writes both
    // with the same text (read once).
    let deepseek = [
        chunk(json!({"role": "assistant", "content": null, "reasoning_content": "Two and"}), Value::Null),
        chunk(json!({"content": null, "reasoning_content": " two."}), Value::Null),
        chunk(json!({"content": "4", "reasoning_content": null}), Value::Null),
        chunk(json!({}), json!("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let openrouter = [
        chunk(json!({"role": "assistant", "content": "", "reasoning": "Hm."}), Value::Null),
        chunk(json!({"content": "4", "reasoning": "Sure.", "reasoning_content": "Sure."}), json!("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&deepseek), Reply::events(&openrouter)]).await;
    let reasoning = |t: &str| StreamEvent::ReasoningDelta(t.to_owned());
    let message = AssistantMessage { text: "4".into(), ..AssistantMessage::default() };

    let log = run(openai(&server), request(), 1).await;
    let done = completed(message.clone(), StopReason::EndTurn, Usage::default());
    assert_eq!(log, vec![Ok(reasoning("Two and")), Ok(reasoning(" two.")), Ok(text("4")), Ok(done.clone())]);

    let log = run(openai(&server), request(), 1).await;
    assert_eq!(log, vec![Ok(reasoning("Hm.")), Ok(reasoning("Sure.")), Ok(text("4")), Ok(done)]);
}

#[tokio::test]
async fn groq_usage_in_x_groq_is_the_replys() {
    // Groq's stream: `x_groq` on the first chunk with the request's id, and
    // on the last, with the usage, where other servers put `usage`.
    let first = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "llama-3.3-70b-versatile",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}],
        "x_groq": {"id": "req_01"}});
    let usage = json!({"queue_time": 0.01, "prompt_tokens": 40, "prompt_time": 0.006, "completion_tokens": 25,
        "completion_time": 0.03, "total_tokens": 65, "total_time": 0.04});
    let last = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "llama-3.3-70b-versatile",
        "choices": [{"index": 0, "delta": {}, "logprobs": null, "finish_reason": "stop"}],
        "x_groq": {"id": "req_01", "usage": usage}});
    let stream = [
        format!("data: {first}\n\n"),
        chunk(json!({"content": "Hi"}), Value::Null),
        format!("data: {last}\n\n"),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = ReplayServer::start(vec![Reply::events(&stream)]).await;
    let message = AssistantMessage { text: "Hi".into(), ..AssistantMessage::default() };
    assert_eq!(
        kinds(run(openai(&server), request(), 1).await),
        vec![Ok(text("Hi")), Ok(completed(message, StopReason::EndTurn, Usage::new(40, 25)))]
    );
}

#[tokio::test(start_paused = true)]
async fn a_reply_with_its_finish_reason_and_then_only_keep_alives_ends_without_done() {
    // A server (or a proxy before it) that sends the whole reply, its
    // finish reason and usage, then keep-alive comments and never `[DONE]`:
    // each comment restarts the read timeout, so the call must not wait
    // for the end marker for good.
    let usage = json!({"prompt_tokens": 3, "completion_tokens": 1});
    let body = chunk(json!({"content": "ok"}), json!("stop"))
        + &format!("data: {}\n\n", json!({"choices": [], "usage": usage}));
    let url = replay::keeping_alive(body, ": keep-alive\n\n".to_owned()).await;
    let client = agent_fsm::llm::OpenAiConfig::without_key().base_url(url).build().expect("client");
    let start = tokio::time::Instant::now();
    let message = AssistantMessage { text: "ok".into(), ..AssistantMessage::default() };
    assert_eq!(
        kinds(run(client, request(), 1).await),
        vec![Ok(text("ok")), Ok(completed(message, StopReason::EndTurn, Usage::new(3, 1)))]
    );
    // About 10 s after the finish reason, far within the read timeout.
    assert!(start.elapsed() <= std::time::Duration::from_secs(15), "{:?}", start.elapsed());
}
