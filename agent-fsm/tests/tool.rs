//! Typed tools: the exact schema each provider's client sends for a tool
//! with nested and optional arguments (the real clients, to a replay
//! server on loopback), the error results a model reads for bad arguments
//! and failing tools, and a machine under the executor that runs one keyed
//! task per call and gets the results back in call order.
#![cfg(all(feature = "tool", feature = "openai", feature = "anthropic"))]

#[path = "support/replay.rs"]
mod replay;
#[path = "support/search_tool.rs"]
mod search_tool;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_fsm::llm::{
    Anthropic, AnthropicConfig, AssistantMessage, Message, OpenAi, OpenAiConfig, Provider, Request, StreamEvent,
    ToolCall, ToolResult,
};
use agent_fsm::tool::{Tool, ToolRound, ToolSet, schema_for};
use futures::StreamExt;
use replay::{ReplayServer, Reply};
use schemars::JsonSchema;
use search_tool::{Search, SearchArgs, search_schema};
use serde::Deserialize;
use serde_json::{Value, json};

/// `search`'s calls in one reply: bad arguments (a `scope` without
/// `globs`), then good ones.
fn bad_then_good() -> [(&'static str, Value); 2] {
    [
        ("call_bad", json!({"scope": {"dir": "src"}, "mode": "literal"})),
        (
            "call_good",
            json!({"query": "fn main", "scope": {"dir": "src", "globs": ["*.rs"]}, "mode": "regex", "limit": 1}),
        ),
    ]
}

/// What the model reads back for [`bad_then_good`], in call order.
fn bad_then_good_results() -> [(&'static str, &'static str, bool); 2] {
    [
        ("call_bad", "invalid arguments for `search`: at `scope`: missing field `globs`", true),
        ("call_good", r#"[{"line":1,"path":"src/main.rs"}]"#, false),
    ]
}

fn tools() -> ToolSet {
    ToolSet::new().with(Search)
}

/// Streams `request` to the end: the reply's assistant message.
async fn reply(provider: &impl Provider, request: &Request) -> AssistantMessage {
    let events: Vec<_> = tokio::time::timeout(Duration::from_secs(60), provider.stream(request).collect())
        .await
        .expect("the reply ends");
    match events.into_iter().last() {
        Some(Ok(StreamEvent::Completed { message, .. })) => message,
        other => panic!("the reply did not complete: {other:?}"),
    }
}

/// One model turn then the next: asks with the tools, runs the reply's
/// calls through the set, sends their results back.
async fn round_trip(provider: &impl Provider) -> (AssistantMessage, Vec<ToolResult>) {
    let tools = tools();
    let request = tools
        .definitions()
        .into_iter()
        .fold(Request::new("model-test").message(Message::user("find main")).max_tokens(100), Request::tool);
    let first = reply(provider, &request).await;
    let results = tools.call_all(&first.tool_calls).await;
    let request = results.iter().cloned().fold(request.message(first.clone()), Request::message);
    reply(provider, &request).await;
    (first, results)
}

fn openai_chunk(delta: Value, finish_reason: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "model-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    });
    format!("data: {body}\n\n")
}

/// The two calls of [`bad_then_good`], as an OpenAI-compatible server
/// streams them (arguments in two fragments each).
fn openai_tool_calls() -> String {
    let mut chunks = vec![openai_chunk(json!({"role": "assistant", "content": null}), None)];
    for (index, (id, arguments)) in bad_then_good().into_iter().enumerate() {
        let arguments = arguments.to_string();
        let (head, tail) = arguments.split_at(arguments.len() / 2);
        let call =
            json!({"index": index, "id": id, "type": "function", "function": {"name": "search", "arguments": head}});
        chunks.push(openai_chunk(json!({"tool_calls": [call]}), None));
        chunks.push(openai_chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": tail}}]}), None));
    }
    chunks.push(openai_chunk(json!({}), Some("tool_calls")));
    chunks.push("data: [DONE]\n\n".to_owned());
    chunks.concat()
}

fn openai_text() -> String {
    [
        openai_chunk(json!({"content": "Found it."}), None),
        openai_chunk(json!({}), Some("stop")),
        "data: [DONE]\n\n".into(),
    ]
    .concat()
}

fn openai(server: &ReplayServer) -> OpenAi {
    OpenAiConfig::new("sk-test").base_url(server.url()).include_usage(false).build().expect("client")
}

#[test]
fn the_schema_is_derived_inlined_and_without_schema_key() {
    let schema = schema_for::<SearchArgs>();
    assert_eq!(schema, search_schema());
    assert!(!schema.to_string().contains("$ref") && !schema.to_string().contains("$schema"));
}

#[tokio::test]
async fn openai_is_sent_the_exact_schema_and_reads_the_error_results_in_call_order() {
    let server = ReplayServer::start(vec![Reply::events(&openai_tool_calls()), Reply::events(&openai_text())]).await;
    let (first, results) = round_trip(&openai(&server)).await;
    assert_eq!(first.tool_calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["call_bad", "call_good"]);

    let sent = server.requests();
    assert_eq!(
        sent[0].json()["tools"],
        json!([{"type": "function", "function": {"name": "search", "description": "Searches the workspace's files", "parameters": search_schema()}}])
    );
    let expected: Vec<ToolResult> = bad_then_good_results()
        .into_iter()
        .map(|(id, content, is_error)| ToolResult { call_id: id.into(), content: content.into(), is_error })
        .collect();
    assert_eq!(results, expected);
    // OpenAI's format has no error flag: the text alone says it.
    let messages = sent[1].json()["messages"].as_array().expect("messages").clone();
    assert_eq!(
        messages[2..],
        bad_then_good_results().map(|(id, content, _)| json!({"role": "tool", "tool_call_id": id, "content": content}))
    );
}

fn anthropic_event(data: Value) -> String {
    format!("event: {}\ndata: {data}\n\n", data["type"].as_str().expect("a type"))
}

fn anthropic_message(blocks: Vec<String>, stop_reason: &str) -> String {
    let start = json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "content": [], "model": "model-test", "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}});
    let mut events = vec![anthropic_event(start)];
    events.extend(blocks);
    events.push(anthropic_event(
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 9}}),
    ));
    events.push(anthropic_event(json!({"type": "message_stop"})));
    events.concat()
}

/// The two calls of [`bad_then_good`] as `tool_use` blocks, their input
/// in two `input_json_delta`s each.
fn anthropic_tool_calls() -> String {
    let mut blocks = Vec::new();
    for (index, (id, arguments)) in bad_then_good().into_iter().enumerate() {
        let arguments = arguments.to_string();
        let (head, tail) = arguments.split_at(arguments.len() / 2);
        blocks.push(anthropic_event(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": "search", "input": {}}})));
        for part in [head, tail] {
            blocks.push(anthropic_event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": part}})));
        }
        blocks.push(anthropic_event(json!({"type": "content_block_stop", "index": index})));
    }
    anthropic_message(blocks, "tool_use")
}

fn anthropic_text() -> String {
    anthropic_message(
        vec![
            anthropic_event(
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            anthropic_event(
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Found it."}}),
            ),
            anthropic_event(json!({"type": "content_block_stop", "index": 0})),
        ],
        "end_turn",
    )
}

fn anthropic(server: &ReplayServer) -> Anthropic {
    AnthropicConfig::new("sk-ant-test").base_url(server.url()).build().expect("client")
}

#[tokio::test]
async fn anthropic_is_sent_the_exact_schema_and_reads_the_error_results_in_call_order() {
    let server =
        ReplayServer::start(vec![Reply::events(&anthropic_tool_calls()), Reply::events(&anthropic_text())]).await;
    let (first, _) = round_trip(&anthropic(&server)).await;
    assert_eq!(first.tool_calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["call_bad", "call_good"]);

    let sent = server.requests();
    assert_eq!(
        sent[0].json()["tools"],
        json!([{"name": "search", "description": "Searches the workspace's files", "input_schema": search_schema()}])
    );
    // One user message holds both results, in call order, flagged.
    let messages = sent[1].json()["messages"].as_array().expect("messages").clone();
    let blocks: Vec<Value> = bad_then_good_results()
        .into_iter()
        .map(|(id, content, is_error)| {
            let block = json!({"type": "tool_result", "tool_use_id": id, "content": content});
            if is_error { merge(block, json!({"is_error": true})) } else { block }
        })
        .collect();
    assert_eq!(messages[2], json!({"role": "user", "content": blocks}));
}

/// `a` with `b`'s fields added.
fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}

/// The text the model reads for `arguments` given to `search`.
async fn search_with(arguments: Value) -> ToolResult {
    let call = ToolCall { id: "call_1".into(), name: "search".into(), arguments };
    tokio::time::timeout(Duration::from_secs(60), tools().call(&call)).await.expect("the call ends")
}

#[tokio::test]
async fn bad_arguments_and_failures_are_error_results_the_model_reads() {
    let cases = [
        // A string is what the assembler keeps of arguments that are not
        // JSON: the model reads the parse error and what it wrote.
        (
            json!("fn main"),
            "invalid arguments for `search`: the arguments are not valid JSON (expected ident at line 1 column 2): fn main",
        ),
        (
            json!("{\"query\": \"fn"),
            "invalid arguments for `search`: the arguments are not valid JSON (EOF while parsing a string at line 1 column 13): {\"query\": \"fn",
        ),
        // JSON that is not an object is quoted: the conversation shows the
        // call with `{}` in its place, so the model sees it only here.
        (json!("\"fn main\""), "invalid arguments for `search`: expected a JSON object, got a string: \"\\\"fn main\\\"\""),
        (
            json!("{\"query\": \"x\"}"),
            "invalid arguments for `search`: expected a JSON object, got a string: \"{\\\"query\\\": \\\"x\\\"}\"",
        ),
        // Long text is cut to 200 characters, and says so.
        (
            json!(format!("[{}", "1,".repeat(150))),
            &*format!(
                "invalid arguments for `search`: the arguments are not valid JSON (EOF while parsing a value at line 1 column 301): [{}...",
                &"1,".repeat(150)[..199]
            )
            .leak(),
        ),
        (
            json!(["fn main", null, "literal"]),
            "invalid arguments for `search`: expected a JSON object, got an array: [\"fn main\",null,\"literal\"]",
        ),
        (json!(7), "invalid arguments for `search`: expected a JSON object, got a number: 7"),
        (Value::Null, "invalid arguments for `search`: expected a JSON object, got null"),
        (json!({"mode": "literal"}), "invalid arguments for `search`: missing field `query`"),
        (
            json!({"query": 7, "mode": "literal"}),
            "invalid arguments for `search`: at `query`: invalid type: integer `7`, expected a string",
        ),
        (
            json!({"query": "x", "mode": "fuzzy"}),
            "invalid arguments for `search`: at `mode`: unknown variant `fuzzy`, expected `literal` or `regex`",
        ),
        (
            json!({"query": "x", "mode": "regex", "limit": -1}),
            "invalid arguments for `search`: at `limit`: invalid value: integer `-1`, expected u32",
        ),
        (
            json!({"query": "x", "mode": "regex", "scope": {"dir": "src", "globs": "*.rs"}}),
            "invalid arguments for `search`: at `scope.globs`: invalid type: string \"*.rs\", expected a sequence",
        ),
        (json!({"query": "", "mode": "regex"}), "`search` failed: the query is empty"),
        (json!({"query": "f(", "mode": "regex"}), "`search` failed: unbalanced parenthesis"),
        (json!({"query": "boom", "mode": "regex"}), "`search` panicked: the index is corrupt"),
        (json!({"query": "boom!", "mode": "regex"}), "`search` panicked: a panic without a message"),
    ];
    for (arguments, expected) in cases {
        let result = search_with(arguments.clone()).await;
        assert_eq!(
            result,
            ToolResult { call_id: "call_1".into(), content: expected.into(), is_error: true },
            "for {arguments}"
        );
    }

    let unknown = ToolCall { id: "call_2".into(), name: "grep".into(), arguments: json!({}) };
    let tools = tools().with(Sleep { log: Arc::default() });
    assert_eq!(tools.call(&unknown).await.content, "unknown tool `grep`; the tools are: search, sleep");
    assert_eq!(ToolSet::new().call(&unknown).await.content, "unknown tool `grep`; the tools are: none");

    // Good arguments, output serialized as compact JSON.
    let fine = search_with(json!({"query": "x", "mode": "literal"})).await;
    assert_eq!(fine.content, r#"[{"line":1,"path":"./main.rs"},{"line":7,"path":"./lib.rs"}]"#);
    assert!(!fine.is_error);
}

#[tokio::test(start_paused = true)]
async fn a_call_that_outlives_the_set_timeout_is_dropped_as_an_error_result() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let tools = ToolSet::new().with(Sleep { log: Arc::clone(&log) }).with_timeout(Duration::from_secs(5));
    let calls = [sleep_call("a", 4_999), sleep_call("b", 5_001)];
    let started = tokio::time::Instant::now();
    let results = tools.call_all(&calls).await;
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(
        results,
        [
            ToolResult { call_id: "a".into(), content: "slept 4999 ms".into(), is_error: false },
            ToolResult { call_id: "b".into(), content: "`sleep` timed out after 5s".into(), is_error: true },
        ]
    );
    assert_eq!(*log.lock().expect("log"), ["a"]);
}

/// Sleeps, then writes its call's name in the log.
struct Sleep {
    log: Arc<Mutex<Vec<String>>>,
}

/// How long to sleep.
#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    /// Milliseconds.
    ms: u64,
    /// Written in the log when done.
    name: String,
}

impl Tool for Sleep {
    const NAME: &'static str = "sleep";
    type Args = SleepArgs;
    type Output = String;
    type Error = String;

    fn description(&self) -> String {
        "Sleeps".to_owned()
    }

    async fn call(&self, args: SleepArgs) -> Result<String, String> {
        tokio::time::sleep(Duration::from_millis(args.ms)).await;
        self.log.lock().map_err(|e| e.to_string())?.push(args.name);
        Ok(format!("slept {} ms", args.ms))
    }
}

fn sleep_call(id: &str, ms: u64) -> ToolCall {
    ToolCall { id: id.into(), name: "sleep".into(), arguments: json!({"ms": ms, "name": id}) }
}

#[agent_fsm::state_machine(fallback = Nothing)]
mod runner {
    use agent_fsm::llm::{Message, ToolCall, ToolResult};
    use agent_fsm::tool::ToolRound;

    /// Nothing to configure.
    #[context]
    pub(crate) struct Ctx {}

    /// Where the round is.
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum State {
        /// No call yet.
        #[initial]
        Idle,
        /// The calls run.
        Running {
            /// The results so far.
            round: ToolRound,
        },
        /// Every call answered.
        Done {
            /// The results, in call order.
            messages: Vec<Message>,
        },
    }

    /// What the machine hears.
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        /// The model's calls.
        Calls(Vec<ToolCall>),
        /// One call's result.
        ToolDone(ToolResult),
    }

    /// What the effects do.
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        /// Nothing.
        Nothing,
        /// Run the calls.
        Run(Vec<ToolCall>),
    }

    transitions! {
        Idle | Done + Calls(calls) => { let round = ToolRound::new(&calls); } Running { round } / Run(calls),
        Running { round } + ToolDone(result) [round.pending_count() > 1] => { round.record(result); } Running / Nothing,
        Running { mut round } + ToolDone(result) => { round.record(result); } Done { messages: round.into_messages() } / Nothing,
    }
}

#[tokio::test(start_paused = true)]
async fn a_machine_runs_one_keyed_task_per_call_and_gets_the_results_in_call_order() {
    use agent_fsm::runtime::{ExecutorConfig, spawn};

    let log = Arc::new(Mutex::new(Vec::new()));
    let tools = tools().with(Sleep { log: Arc::clone(&log) });
    let effects = {
        let tools = tools.clone();
        agent_fsm::runtime::from_fn(move |action, cx| match action {
            runner::Action::Run(calls) => tools.spawn_calls(&calls, cx, runner::Event::ToolDone),
            runner::Action::Nothing => {}
        })
    };
    // The executor drops a task after 10 s: that call's result says so.
    let config = ExecutorConfig::new().task_timeout(Duration::from_secs(10));
    let handle = spawn(runner::Machine::new(runner::Ctx {}), effects, config);
    let calls = vec![
        sleep_call("slow", 300),
        sleep_call("fast", 100),
        ToolCall { id: "bad".into(), name: "sleep".into(), arguments: json!({"ms": "soon"}) },
        sleep_call("medium", 200),
        sleep_call("stuck", 60_000),
    ];
    let run = async {
        handle.send(runner::Event::Calls(calls)).await.expect("the machine takes the calls");
        handle.wait_idle().await.expect("the machine goes idle");
        handle.state().await.expect("the machine's state")
    };
    let state = tokio::time::timeout(Duration::from_secs(600), run).await.expect("the round ends");
    handle.shutdown().await.expect("the machine shuts down");

    // They ended fastest first...
    assert_eq!(*log.lock().expect("log"), ["fast", "medium", "slow"]);
    // ...and come back as they were called.
    let expected = vec![
        Message::tool_result("slow", "slept 300 ms"),
        Message::tool_result("fast", "slept 100 ms"),
        Message::tool_error(
            "bad",
            "invalid arguments for `sleep`: at `ms`: invalid type: string \"soon\", expected u64",
        ),
        Message::tool_result("medium", "slept 200 ms"),
        Message::tool_error("stuck", "`sleep` timed out"),
    ];
    assert_eq!(state, runner::State::Done { messages: expected });
}

#[test]
fn a_round_gives_every_call_a_result_in_call_order() {
    let calls = [sleep_call("a", 1), sleep_call("b", 1), sleep_call("a", 2)];
    let mut round = ToolRound::new(&calls);
    assert!(!round.record(ToolResult { call_id: "zz".into(), content: "?".into(), is_error: false }));
    assert!(round.record(ToolResult { call_id: "a".into(), content: "A1".into(), is_error: false }));
    // A repeated id answers the next call that has it.
    assert!(round.record(ToolResult { call_id: "a".into(), content: "A2".into(), is_error: false }));
    assert!(!round.record(ToolResult { call_id: "a".into(), content: "A3".into(), is_error: false }));
    assert!(round.is_pending("b") && !round.is_pending("a") && !round.is_complete());
    assert_eq!(round.pending_count(), 1);
    assert_eq!(round.results().map(|r| r.content.as_str()).collect::<Vec<_>>(), ["A1", "A2"]);
    let mut answered = round.clone();
    assert!(answered.record(ToolResult { call_id: "b".into(), content: "B".into(), is_error: false }));
    assert!(answered.is_complete() && answered.pending_count() == 0);
    assert_eq!(
        round.into_messages(),
        [
            Message::tool_result("a", "A1"),
            Message::tool_error("b", "`sleep` returned no result"),
            Message::tool_result("a", "A2"),
        ]
    );
}

/// `search` again, under another description.
struct SearchAgain;

impl Tool for SearchAgain {
    const NAME: &'static str = "search";
    type Args = SearchArgs;
    type Output = String;
    type Error = String;

    fn description(&self) -> String {
        "Searches again".to_owned()
    }

    async fn call(&self, _args: SearchArgs) -> Result<String, String> {
        Ok("again".to_owned())
    }
}

#[tokio::test]
async fn a_tool_added_replaces_the_earlier_in_its_place_and_one_extended_does_not() {
    let empty = ToolSet::new();
    assert!(empty.is_empty() && empty.definitions().is_empty());
    assert_eq!(empty.len(), 0);

    let mut tools = ToolSet::new().with(Search).with(Sleep { log: Arc::default() });
    assert!(!tools.is_empty() && tools.len() == 2 && tools.contains("sleep") && !tools.contains("grep"));
    let replaced = tools.add(SearchAgain).expect("search was there");
    assert_eq!(replaced.description, "Searches the workspace's files");
    assert_eq!(tools.names().collect::<Vec<_>>(), ["search", "sleep"]);
    assert_eq!(tools.definitions()[0].description, "Searches again");
    assert_eq!(format!("{tools:?}"), r#"ToolSet { tools: ["search", "sleep"], timeout: None }"#);
    let result = tools.call(&ToolCall {
        id: "c".into(),
        name: "search".into(),
        arguments: json!({"query": "x", "mode": "regex"}),
    });
    assert_eq!(result.await.content, "again");
    assert!(tools.add(Search).is_some() && tools.len() == 2);

    // Another set's tools join, but not in place of a tool of the same
    // name (an MCP server cannot take over a tool the agent trusts by
    // name); the receiving set's timeout is kept.
    let mut more = ToolSet::new().with(Search).with_timeout(Duration::from_secs(1));
    more.extend(ToolSet::new().with(SearchAgain).with(Sleep { log: Arc::default() }));
    assert_eq!(format!("{more:?}"), r#"ToolSet { tools: ["search", "sleep"], timeout: Some(1s) }"#);
    assert_eq!(more.definitions()[0].description, "Searches the workspace's files");
    let result = more.call(&ToolCall { id: "d".into(), name: "search".into(), arguments: json!({"query": "x"}) });
    assert_ne!(result.await.content, "again", "the set's own search answers");
}
