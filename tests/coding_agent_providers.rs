//! The coding agent end to end against a real provider client: a loopback
//! replay server answers each request with the SSE reply a model would
//! stream for that turn, in OpenAI's and in Anthropic's wire format (list
//! and read, edit, run the script, answer). The tools run for real in a
//! temporary workspace; the tests assert the file, the exact state
//! sequence and what the model was sent. The demo's real-model path
//! (flags, environment, client set-up) is run against the same server.

#[path = "support/coding_agent.rs"]
mod demo_session;
#[path = "../agent-fsm/tests/support/replay.rs"]
mod replay;

use std::sync::Arc;
use std::time::Duration;

use agent_fsm::llm::{AnthropicConfig, OpenAiConfig, Provider};
use agent_fsm_examples::coding_agent::demo::run_demo;
use agent_fsm_examples::coding_agent::{LoomEffects, Workspace, prepare_workspace, run_session};
use demo_session::{STATES, TASK};
use replay::{Recorded, ReplayServer, Reply};
use serde_json::{Value, json};

/// One turn of the model: its text and its tool calls (id, name, arguments).
struct Turn {
    text: &'static str,
    calls: Vec<(&'static str, &'static str, Value)>,
}

fn turns() -> Vec<Turn> {
    vec![
        Turn {
            text: "Let me look first.",
            calls: vec![
                ("call_1", "list_files", json!({ "path": "." })),
                ("call_2", "read_file", json!({ "path": "greeting.sh" })),
            ],
        },
        Turn {
            text: "It says wrold; fixing.",
            calls: vec![(
                "call_3",
                "edit_file",
                json!({ "path": "greeting.sh", "old_text": "wrold", "new_text": "world" }),
            )],
        },
        Turn { text: "Checking.", calls: vec![("call_4", "run_command", json!({ "command": "sh greeting.sh" }))] },
        Turn { text: "Fixed: greeting.sh now prints Hello, world.", calls: vec![] },
    ]
}

/// The arguments in three fragments, as models stream them.
fn fragments(arguments: &Value) -> Vec<String> {
    let text = arguments.to_string();
    let chars: Vec<char> = text.chars().collect();
    let third = chars.len().div_ceil(3).max(1);
    chars.chunks(third).map(|c| c.iter().collect()).collect()
}

fn openai_chunk(delta: Value, finish_reason: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    });
    format!("data: {body}\n\n")
}

fn openai_reply(turn: &Turn) -> Reply {
    let mut sse = openai_chunk(json!({"role": "assistant", "content": ""}), None);
    for word in turn.text.split_inclusive(' ') {
        sse += &openai_chunk(json!({ "content": word }), None);
    }
    for (index, (id, name, arguments)) in turn.calls.iter().enumerate() {
        sse += &openai_chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            None,
        );
        for fragment in fragments(arguments) {
            sse += &openai_chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}), None);
        }
    }
    sse += &openai_chunk(json!({}), Some(if turn.calls.is_empty() { "stop" } else { "tool_calls" }));
    sse += "data: [DONE]\n\n";
    Reply::events(&sse)
}

fn anthropic_event(data: Value) -> String {
    let name = data["type"].as_str().unwrap_or_default().to_owned();
    format!("event: {name}\ndata: {data}\n\n")
}

fn anthropic_reply(turn: &Turn) -> Reply {
    let mut sse = anthropic_event(json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test",
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1},
    }}));
    sse += &anthropic_event(
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    sse += &anthropic_event(json!({"type": "ping"}));
    for word in turn.text.split_inclusive(' ') {
        sse += &anthropic_event(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": word}}),
        );
    }
    sse += &anthropic_event(json!({"type": "content_block_stop", "index": 0}));
    for (i, (id, name, arguments)) in turn.calls.iter().enumerate() {
        let index = i + 1;
        sse += &anthropic_event(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
        for fragment in fragments(arguments) {
            sse += &anthropic_event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": fragment}}));
        }
        sse += &anthropic_event(json!({"type": "content_block_stop", "index": index}));
    }
    let stop = if turn.calls.is_empty() { "end_turn" } else { "tool_use" };
    sse += &anthropic_event(
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 20}}),
    );
    sse += &anthropic_event(json!({"type": "message_stop"}));
    Reply::events(&sse)
}

async fn session(llm: Arc<dyn Provider>, model: &str) -> (Vec<&'static str>, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    prepare_workspace(dir.path()).expect("workspace");
    let effects = LoomEffects::new(llm, model, Workspace::new(dir.path())).expect("effects");
    let summary = tokio::time::timeout(Duration::from_secs(60), run_session(effects, &[TASK], |_| {}))
        .await
        .expect("the session ends")
        .expect("session");
    assert_eq!(summary.tool_calls, 4);
    (summary.states, std::fs::read_to_string(dir.path().join("greeting.sh")).expect("file"))
}

/// Every tool result the model was sent back, in order.
fn tool_results_sent(requests: &[Recorded], pick: impl Fn(&Value) -> Vec<String>) -> Vec<Vec<String>> {
    requests.iter().map(|r| pick(&r.json())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_fixes_the_file_through_the_openai_client() {
    let server = ReplayServer::start(turns().iter().map(openai_reply).collect()).await;
    let llm = OpenAiConfig::new("sk-test").base_url(format!("{}/v1", server.url())).build().expect("client");
    let (states, file) = session(Arc::new(llm), "gpt-test").await;
    assert_eq!(file, "#!/bin/sh\necho \"Hello, world\"\n");
    assert_eq!(states, STATES);

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        requests
            .iter()
            .all(|r| r.path == "/v1/chat/completions" && r.header("authorization") == Some("Bearer sk-test"))
    );
    let first = requests[0].json();
    assert_eq!(first["model"], "gpt-test");
    let tools: Vec<&str> =
        first["tools"].as_array().expect("tools").iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert_eq!(tools, ["read_file", "write_file", "edit_file", "list_files", "run_command"]);
    let results = tool_results_sent(&requests, |body| {
        body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "tool")
            .map(|m| format!("{}: {}", m["tool_call_id"].as_str().unwrap_or(""), m["content"].as_str().unwrap_or("")))
            .collect()
    });
    assert_eq!(results[0], Vec::<String>::new());
    assert_eq!(
        results[1],
        ["call_1: README.md\ngreeting.sh", "call_2: #!/bin/sh\necho \"Hello, wrold\"\n"].map(str::to_owned)
    );
    assert_eq!(results[3].last().map(String::as_str), Some("call_4: Hello, world\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_fixes_the_file_through_the_anthropic_client() {
    let server = ReplayServer::start(turns().iter().map(anthropic_reply).collect()).await;
    let llm = AnthropicConfig::new("sk-ant-test").base_url(server.url()).build().expect("client");
    let (states, file) = session(Arc::new(llm), "claude-test").await;
    assert_eq!(file, "#!/bin/sh\necho \"Hello, world\"\n");
    assert_eq!(states, STATES);

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(|r| r.path == "/v1/messages" && r.header("x-api-key") == Some("sk-ant-test")));
    let first = requests[0].json();
    assert_eq!(first["model"], "claude-test");
    assert!(first["system"].as_str().is_some_and(|s| s.contains("coding agent")));
    let tools: Vec<&str> =
        first["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(tools, ["read_file", "write_file", "edit_file", "list_files", "run_command"]);
    let results = tool_results_sent(&requests, |body| {
        body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|block| block["type"] == "tool_result")
            .map(|b| format!("{}: {}", b["tool_use_id"].as_str().unwrap_or(""), b["content"].as_str().unwrap_or("")))
            .collect()
    });
    assert_eq!(
        results[1],
        ["call_1: README.md\ngreeting.sh", "call_2: #!/bin/sh\necho \"Hello, wrold\"\n"].map(str::to_owned)
    );
    assert_eq!(results[3].last().map(String::as_str), Some("call_4: Hello, world\n"));
}

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_runs_against_a_real_server_from_its_flags_and_environment() {
    let server = ReplayServer::start(turns().iter().map(openai_reply).collect()).await;
    let args = ["--provider", "openai", "--base-url", &format!("{}/v1", server.url()), "--model", "local-model"]
        .map(str::to_owned);
    let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-demo".to_owned());
    let out = Captured::default();
    let report = tokio::time::timeout(Duration::from_secs(60), run_demo(args, env, out.clone()))
        .await
        .expect("the demo ends")
        .expect("demo");
    assert!(report.fixed, "{}", report.greeting);
    assert_eq!(report.summary.states, STATES);
    let requests = server.requests();
    assert_eq!(requests[0].json()["model"], "local-model");
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-demo"));
    let printed = String::from_utf8(out.0.lock().expect("output").clone()).expect("utf-8");
    assert!(printed.contains(&format!("model: local-model via openai at {}/v1", server.url())), "{printed}");
    assert!(printed.contains("model: \"Fixed: greeting.sh now prints Hello, world.\""), "{printed}");
    assert!(printed.contains("tool: run_command {\"command\":\"sh greeting.sh\"}"), "{printed}");
}

#[tokio::test]
async fn the_demo_says_what_is_wrong_with_its_flags() {
    let no_env = |_: &str| None;
    let run =
        |args: &[&str]| run_demo(args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>(), no_env, std::io::sink());
    let message =
        |r: Result<_, Box<dyn std::error::Error + Send + Sync>>| r.err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        message(run(&["--verbose"]).await),
        "unknown argument `--verbose` (expected --provider openai|anthropic, --base-url URL, --model M)"
    );
    assert_eq!(
        message(run(&["--provider", "gemini"]).await),
        "unknown provider `gemini` (expected `openai` or `anthropic`)"
    );
    assert_eq!(message(run(&["--model"]).await), "`--model` needs a value");
    assert_eq!(
        message(run(&["--provider", "anthropic"]).await),
        "the anthropic provider needs ANTHROPIC_API_KEY to be set"
    );
    assert_eq!(message(run(&["--provider", "openai"]).await), "the openai provider needs OPENAI_API_KEY to be set");
    assert_eq!(
        message(run(&["--provider=openai", "--base-url=http://127.0.0.1:9/v1"]).await),
        "no model for the server at http://127.0.0.1:9/v1: pass --model M or set AGENT_MODEL"
    );
    assert!(message(run(&["--model", "m"]).await).starts_with("--base-url and --model need a provider"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_turn_is_retried_after_the_servers_retry_after() {
    let mut replies = vec![
        Reply::status(429, r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#).header("retry-after", "1"),
    ];
    replies.extend(turns().iter().map(openai_reply));
    let server = ReplayServer::start(replies).await;
    let llm = OpenAiConfig::new("sk-test").base_url(format!("{}/v1", server.url())).build().expect("client");
    let dir = tempfile::tempdir().expect("temp dir");
    prepare_workspace(dir.path()).expect("workspace");
    let mut effects = LoomEffects::new(Arc::new(llm), "gpt-test", Workspace::new(dir.path())).expect("effects");
    // No backoff of its own: only the server's wait can space the attempts.
    effects.retry = agent_fsm::runtime::RetryPolicy::new().base(Duration::ZERO);
    let summary = tokio::time::timeout(Duration::from_secs(60), run_session(effects, &[TASK], |_| {}))
        .await
        .expect("the session ends")
        .expect("session");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("greeting.sh")).expect("file"),
        "#!/bin/sh\necho \"Hello, world\"\n"
    );
    assert_eq!(summary.states[..3], ["WaitingForUserInput", "CallingLlm", "Error"]);
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    assert!(requests[1].at - requests[0].at >= Duration::from_secs(1), "{:?}", requests[1].at - requests[0].at);
    assert_eq!(requests[0].body, requests[1].body);
}

#[test]
fn the_environment_picks_the_provider_server_and_model() {
    use agent_fsm_examples::coding_agent::model::{ModelArgs, ProviderKind, choose};
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
    };
    let none = choose(&ModelArgs::default(), env(&[])).expect("no error");
    assert!(none.is_none(), "no key and no flag: the scripted model");
    let openai = choose(&ModelArgs::default(), env(&[("OPENAI_API_KEY", "k")])).expect("ok").expect("openai");
    assert_eq!((openai.provider, openai.model.as_str(), openai.base_url), (ProviderKind::OpenAi, "gpt-4.1-mini", None));
    let anthropic = choose(&ModelArgs::default(), env(&[("ANTHROPIC_API_KEY", "k")])).expect("ok").expect("anthropic");
    assert_eq!((anthropic.provider, anthropic.model.as_str()), (ProviderKind::Anthropic, "claude-sonnet-4-5"));
    let gateway = env(&[("OPENAI_API_KEY", "k"), ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"), ("AGENT_MODEL", "m")]);
    let chosen = choose(&ModelArgs::default(), gateway).expect("ok").expect("openai");
    assert_eq!((chosen.model.as_str(), chosen.base_url.as_deref()), ("m", Some("http://127.0.0.1:9/v1")));
    let local = env(&[("ANTHROPIC_API_KEY", "k"), ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")]);
    let missing = choose(&ModelArgs::default(), local).expect_err("no model for another server");
    assert_eq!(missing.to_string(), "no model for the server at http://127.0.0.1:9: pass --model M or set AGENT_MODEL");
}

#[test]
fn help_is_asked_for_anywhere_and_names_every_flag_and_variable() {
    use agent_fsm_examples::coding_agent::model::{USAGE, wants_help};
    assert!(wants_help(&["--model", "m", "--help"]));
    assert!(wants_help(&["-h"]));
    assert!(!wants_help(&["--model", "m"]));
    assert!(!wants_help::<&str>(&[]));
    for name in [
        "--provider",
        "--base-url",
        "--model",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "AGENT_MODEL",
    ] {
        assert!(USAGE.contains(name), "--help does not mention {name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_server_sends_reaches_the_terminal_as_text_not_as_escape_sequences() {
    // Clear the screen, set the clipboard (OSC 52), in the reply's text and
    // in a tool's name.
    let turns = [
        Turn {
            text: "Hi \u{1b}[2J\u{1b}]52;c;cm0gLXJmIH4=\u{7} there\r\nsecond line",
            calls: vec![("call_1", "\u{1b}[31mred", json!({}))],
        },
        Turn { text: "Done.", calls: vec![] },
    ];
    let server = ReplayServer::start(turns.iter().map(openai_reply).collect()).await;
    let args =
        ["--provider", "openai", "--base-url", &format!("{}/v1", server.url()), "--model", "m"].map(str::to_owned);
    let out = Captured::default();
    let report = tokio::time::timeout(Duration::from_secs(60), run_demo(args, |_| None, out.clone()))
        .await
        .expect("the demo ends")
        .expect("demo");
    assert!(!report.fixed);
    let printed = String::from_utf8(out.0.lock().expect("output").clone()).expect("utf-8");
    assert!(!printed.contains(['\u{1b}', '\u{7}', '\r']), "{printed:?}");
    assert!(printed.contains("Hi \\u{1b}[2J\\u{1b}]52;c;cm0gLXJmIH4=\\u{7} there\\u{d}\nsecond line"), "{printed}");
    assert!(printed.contains("tool: \\u{1b}[31mred {}"), "{printed}");
}
