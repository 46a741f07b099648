//! The coding agent's spans, exported to OpenTelemetry's in-memory
//! exporter: one tree per turn, `invoke_agent` at its root and the turn's
//! `chat`, `execute_tool` and `transition` spans beneath it, with the GenAI
//! conventions' attributes (the scripted model's token usage, the tools'
//! names and call ids).

#[path = "support/coding_agent.rs"]
mod demo_session;

use agent_fsm::telemetry::{layer, opentelemetry};
use agent_fsm_examples::coding_agent::{
    LoomEffects, SCRIPTED_USAGE, ScriptedLlm, Workspace, prepare_workspace, run_session,
};
use demo_session::{STATES, TASK};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use std::sync::Arc;
use std::time::Duration;
use tracing_subscriber::prelude::*;

/// The attribute `key` of `span`, as text (numbers written out).
fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

/// `span`'s attribute `key`, which must be there.
fn must(span: &SpanData, key: &str) -> String {
    attr(span, key).unwrap_or_else(|| panic!("{} has no {key}: {:?}", span.name, span.attributes))
}

/// The spans of `turn` whose name starts with `prefix`, in the order they
/// started.
fn children<'a>(spans: &'a [SpanData], turn: &SpanData, prefix: &str) -> Vec<&'a SpanData> {
    let mut found: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.parent_span_id == turn.span_context.span_id() && s.name.starts_with(prefix))
        .collect();
    found.sort_by_key(|s| s.start_time);
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_exports_one_span_tree_per_turn() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    // INFO: the telemetry spans, not the executor's `debug` step spans.
    tracing_subscriber::registry()
        .with(layer(&provider).with_filter(tracing_subscriber::filter::LevelFilter::INFO))
        .init();

    let dir = tempfile::tempdir().expect("temp dir");
    prepare_workspace(dir.path()).expect("workspace");
    let effects =
        LoomEffects::new(Arc::new(ScriptedLlm { delay: Duration::ZERO }), "scripted-model", Workspace::new(dir.path()))
            .expect("effects");
    // Two turns: the task (four model calls, four tools), then a question
    // the model answers at once.
    let session = run_session(effects, &[TASK, "Thanks. Anything else?"], |_| {});
    tokio::time::timeout(Duration::from_secs(60), session).await.expect("in time").expect("session");
    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("spans");

    // The roots: one `invoke_agent` per turn, numbered.
    let mut turns: Vec<&SpanData> = spans.iter().filter(|s| s.name.starts_with("invoke_agent")).collect();
    turns.sort_by_key(|s| s.start_time);
    assert_eq!(turns.len(), 2, "one invoke_agent span per turn");
    for (n, turn) in turns.iter().enumerate() {
        assert_eq!(turn.name, "invoke_agent coding-agent");
        assert_eq!(turn.parent_span_id, opentelemetry::trace::SpanId::INVALID, "a turn is a root");
        assert_eq!(must(turn, "gen_ai.operation.name"), "invoke_agent");
        assert_eq!(must(turn, "gen_ai.agent.name"), "coding-agent");
        assert_eq!(must(turn, "agent_fsm.machine"), "Loom");
        assert_eq!(must(turn, "agent_fsm.turn"), (n + 1).to_string());
    }

    // The model calls, each under its turn, with the scripted usage.
    let chats: Vec<Vec<&SpanData>> = turns.iter().map(|t| children(&spans, t, "chat")).collect();
    let usage: Vec<Vec<(String, String)>> = chats
        .iter()
        .map(|calls| {
            calls
                .iter()
                .map(|c| (must(c, "gen_ai.usage.input_tokens"), must(c, "gen_ai.usage.output_tokens")))
                .collect()
        })
        .collect();
    let scripted = |i: usize| (SCRIPTED_USAGE[i].0.to_string(), SCRIPTED_USAGE[i].1.to_string());
    assert_eq!(usage, [vec![scripted(0), scripted(1), scripted(2), scripted(3)], vec![scripted(3)]]);
    for chat in chats.iter().flatten() {
        assert_eq!(chat.name, "chat scripted-model");
        assert_eq!(chat.span_kind, opentelemetry::trace::SpanKind::Client);
        assert_eq!(must(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(must(chat, "gen_ai.provider.name"), "scripted");
        assert_eq!(must(chat, "gen_ai.request.model"), "scripted-model");
    }
    // An array of strings, as the conventions type it (a backend that
    // reads it as such finds no plain string there).
    let finish: Vec<Vec<String>> = chats[0]
        .iter()
        .map(|c| {
            let value = c.attributes.iter().find(|kv| kv.key.as_str() == "gen_ai.response.finish_reasons");
            match value.map(|kv| &kv.value) {
                Some(opentelemetry::Value::Array(opentelemetry::Array::String(reasons))) => {
                    reasons.iter().map(|r| r.as_str().to_owned()).collect()
                }
                other => panic!("finish reasons not an array of strings: {other:?}"),
            }
        })
        .collect();
    assert_eq!(finish, [["tool_calls"], ["tool_calls"], ["tool_calls"], ["stop"]]);

    // The tool calls of the first turn, by name and call id.
    let tools: Vec<(String, String, String)> = children(&spans, turns[0], "execute_tool")
        .iter()
        .map(|t| (t.name.to_string(), must(t, "gen_ai.tool.name"), must(t, "gen_ai.tool.call.id")))
        .collect();
    let expected =
        [("list_files", "call_1"), ("read_file", "call_2"), ("edit_file", "call_3"), ("run_command", "call_4")];
    let mut tools_sorted = tools.clone();
    tools_sorted.sort_by(|a, b| a.2.cmp(&b.2));
    assert_eq!(
        tools_sorted,
        expected.map(|(name, id)| (format!("execute_tool {name}"), name.to_owned(), id.to_owned())),
    );
    assert!(children(&spans, turns[1], "execute_tool").is_empty(), "the second turn runs no tool");

    // The hops: each turn's run from the user's input back to waiting.
    for turn in &turns {
        let hops: Vec<(String, String)> = children(&spans, turn, "transition")
            .iter()
            .map(|h| (must(h, "agent_fsm.state.from"), must(h, "agent_fsm.state.to")))
            .collect();
        assert_eq!(hops.first().map(|h| (h.0.as_str(), h.1.as_str())), Some(("WaitingForUserInput", "CallingLlm")));
        assert_eq!(hops.last().map(|h| h.1.as_str()), Some("WaitingForUserInput"));
    }
    // The first turn's hops trace the session's states, up to the shutdown.
    let hops = children(&spans, turns[0], "transition");
    let mut states = vec![must(hops[0], "agent_fsm.state.from")];
    // A self-transition (one tool of two done) enters no new state.
    states.extend(
        hops.iter()
            .filter(|h| must(h, "agent_fsm.state.from") != must(h, "agent_fsm.state.to"))
            .map(|h| must(h, "agent_fsm.state.to")),
    );
    assert_eq!(states, STATES[..STATES.len() - 1]);
    let first = hops[0];
    assert_eq!(first.name, "transition WaitingForUserInput -> CallingLlm");
    assert_eq!(must(first, "agent_fsm.event"), "UserInput");
    assert_eq!(must(first, "agent_fsm.action"), "SendLlmRequest");

    // Nothing else: every span is a turn, in a turn's tree (its trace),
    // or the shutdown's hop, which happens between turns.
    for span in &spans {
        if turns.iter().any(|t| t.span_context.span_id() == span.span_context.span_id()) {
            continue;
        }
        match turns.iter().find(|t| t.span_context.span_id() == span.parent_span_id) {
            Some(turn) => assert_eq!(span.span_context.trace_id(), turn.span_context.trace_id()),
            None => assert_eq!(
                (span.name.as_ref(), span.parent_span_id),
                ("transition WaitingForUserInput -> ShuttingDown", opentelemetry::trace::SpanId::INVALID),
                "a span outside every turn"
            ),
        }
    }
}
