//! MCP tools in a tool set: this test binary, run again with
//! `AGENT_FSM_TEST_MCP_SERVER` set, is a small MCP server speaking
//! newline-delimited JSON-RPC on stdio, written by hand from the spec
//! (`initialize`, `notifications/initialized`, `tools/list`, `tools/call`)
//! rather than with rmcp's server side, so that the client is checked
//! against the protocol and not against its own SDK. The tests spawn it
//! through [`McpServer`], list its tools beside a native one and call them
//! through the [`ToolSet`].
//!
//! No libtest harness (`harness = false`): libtest writes to stdout, which
//! is the server's protocol channel; `main` runs the tests itself, each
//! under a timeout.
#![cfg(feature = "mcp")]

#[path = "support/stdio_server.rs"]
mod stdio_server;

use std::io::BufRead;
use std::time::Duration;

use agent_fsm::llm::{ToolCall, ToolDefinition, ToolResult};
use agent_fsm::tool::mcp::{McpError, McpServer};
use agent_fsm::tool::{Tool, ToolSet};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use stdio_server::{Test, run_tests, send};

/// Set in the server's environment: run as the server.
const SERVER: &str = "AGENT_FSM_TEST_MCP_SERVER";

fn main() {
    if std::env::var_os(SERVER).is_some() {
        serve();
        return;
    }
    let tests: [(&str, Test); 4] = [
        ("server_tools_sit_beside_native_ones_and_are_called_through_the_set", || {
            Box::pin(server_tools_sit_beside_native_ones_and_are_called_through_the_set())
        }),
        ("dropping_the_server_kills_its_whole_process_group", || {
            Box::pin(dropping_the_server_kills_its_whole_process_group())
        }),
        ("a_server_that_is_not_mcp_fails_the_handshake", || Box::pin(a_server_that_is_not_mcp_fails_the_handshake())),
        ("a_program_that_does_not_exist_is_a_spawn_error", || {
            Box::pin(a_program_that_does_not_exist_is_a_spawn_error())
        }),
    ];
    run_tests(&tests, Duration::from_secs(120));
}

/// This binary as an MCP server.
fn server_command() -> tokio::process::Command {
    stdio_server::server_command(SERVER, "1")
}

/// Doubles a number, natively.
struct Double;

/// The number.
#[derive(Deserialize, JsonSchema)]
struct DoubleArgs {
    /// Any integer.
    n: i64,
}

impl Tool for Double {
    const NAME: &'static str = "double";
    type Args = DoubleArgs;
    type Output = i64;
    type Error = String;

    fn description(&self) -> String {
        "Doubles a number".to_owned()
    }

    async fn call(&self, args: DoubleArgs) -> Result<i64, String> {
        args.n.checked_mul(2).ok_or_else(|| "overflow".to_owned())
    }
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments }
}

fn ok(id: &str, content: &str) -> ToolResult {
    ToolResult { call_id: id.into(), content: content.into(), is_error: false }
}

fn error(id: &str, content: &str) -> ToolResult {
    ToolResult { call_id: id.into(), content: content.into(), is_error: true }
}

async fn server_tools_sit_beside_native_ones_and_are_called_through_the_set() {
    let server = McpServer::spawn(server_command()).await.expect("the server starts");
    let mut tools = ToolSet::new().with(Double);
    tools.extend(server.tools().await.expect("the server lists its tools"));

    assert_eq!(
        tools.definitions(),
        [
            ToolDefinition::new(
                "double",
                "Doubles a number",
                json!({"type": "object", "properties": {"n": {"type": "integer", "format": "int64", "description": "Any integer."}}, "required": ["n"], "description": "The number."})
            ),
            // `$schema` dropped, as the server wrote it otherwise.
            ToolDefinition::new(
                "add",
                "Adds two integers",
                json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]})
            ),
            // `properties` added: OpenAI refuses an object schema without.
            ToolDefinition::new("fail", "Always fails", json!({"type": "object", "properties": {}})),
            ToolDefinition::new("describe", "", json!({"type": "object", "properties": {}})),
            ToolDefinition::new(
                "sleeper",
                "Starts `sleep 1000` and says its pid",
                json!({"type": "object", "properties": {}})
            ),
        ]
    );

    let calls = [
        call("c1", "add", json!({"a": 2, "b": 40})),
        call("c2", "double", json!({"n": 21})),
        call("c3", "fail", json!({})),
        call("c4", "add", json!({"a": "two", "b": 40})),
        call("c5", "add", json!([2, 40])),
        call("c6", "describe", json!({})),
        call("c7", "nope", json!({})),
    ];
    let results = tools.call_all(&calls).await;
    assert_eq!(
        results,
        [
            ok("c1", "42"),
            ok("c2", "42"),
            // `isError` from the server.
            error("c3", "`fail` failed: the disk is full"),
            error("c4", "`add` failed: `a` and `b` must be integers"),
            // Refused before it reaches the server.
            error("c5", "invalid arguments for `add`: expected a JSON object, got an array: [2,40]"),
            // Blocks one per line; an image named; an embedded text
            // resource's text; another resource named with its URI.
            ok(
                "c6",
                "first\nsecond\n[image/png image]\nthe notes\n[application/pdf resource file:///a.pdf]\n[resource_link file:///big.log]"
            ),
            error("c7", "unknown tool `nope`; the tools are: double, add, fail, describe, sleeper"),
        ]
    );

    // A tool the set knows but the server no longer does: the server's
    // JSON-RPC error is the model's error result.
    let mut tools = server.tools().await.expect("the list");
    assert!(tools.contains("add"));
    let gone = call("c8", "add", json!({"a": 1, "b": 2, "gone": true}));
    assert_eq!(tools.call(&gone).await, error("c8", "`add` failed: the MCP server refused the call: no such tool"));
    tools.extend(ToolSet::new());
}

async fn dropping_the_server_kills_its_whole_process_group() {
    let server = McpServer::spawn(server_command()).await.expect("the server starts");
    let server_pid = server.pid().expect("the server's pid");
    let tools = server.tools().await.expect("the list");
    let result = tools.call(&call("s", "sleeper", json!({}))).await;
    let sleeper: u32 = result.content.parse().expect("the sleeper's pid");
    assert!(alive(sleeper) && alive(server_pid));

    // The tools hold the connection too: the group lives until both go.
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(alive(sleeper), "the tools still hold the server");
    drop(tools);
    for _ in 0..200 {
        if !alive(sleeper) && !alive(server_pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server ({server_pid}) or its child ({sleeper}) outlived the connection");
}

/// Whether `pid` runs (a zombie, killed but not yet reaped, does not).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

async fn a_server_that_is_not_mcp_fails_the_handshake() {
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", "echo hello; echo world"]);
    match McpServer::spawn_with_timeout(command, Duration::from_secs(30)).await {
        Err(McpError::Handshake { program, .. }) => assert_eq!(program, "sh"),
        other => panic!("expected a handshake error, got {other:?}"),
    }
    let mut command = tokio::process::Command::new("sleep");
    command.arg("1000");
    match McpServer::spawn_with_timeout(command, Duration::from_millis(300)).await {
        Err(error @ McpError::TimedOut { .. }) => {
            assert_eq!(error.to_string(), "the MCP server `sleep` did not answer within 300ms");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
}

async fn a_program_that_does_not_exist_is_a_spawn_error() {
    let command = tokio::process::Command::new("/nonexistent/mcp-server");
    match McpServer::spawn(command).await {
        Err(error @ McpError::Spawn { .. }) => {
            assert!(error.to_string().starts_with("cannot start the MCP server `/nonexistent/mcp-server`: "));
        }
        other => panic!("expected a spawn error, got {other:?}"),
    }
}

/// The server: one JSON-RPC message per line on stdin, one answer per
/// request on stdout; notifications get none.
fn serve() {
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        let Some(id) = message.get("id").cloned() else { continue };
        let answer = match answer(&message) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, text)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}}),
        };
        send(&answer);
    }
}

fn answer(message: &Value) -> Result<Value, (i64, String)> {
    let params = &message["params"];
    match message["method"].as_str().unwrap_or_default() {
        // The version the client asks for is answered as is.
        "initialize" => Ok(json!({
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "agent-fsm-test-server", "version": "0.1.0"},
        })),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": [
            {"name": "add", "description": "Adds two integers", "inputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}},
            {"name": "fail", "description": "Always fails", "inputSchema": {"type": "object"}},
            {"name": "describe", "inputSchema": {"type": "object"}},
            {"name": "sleeper", "description": "Starts `sleep 1000` and says its pid", "inputSchema": {"type": "object"}},
        ]})),
        "tools/call" => call_tool(&params["name"], &params["arguments"]),
        other => Err((-32601, format!("no method `{other}`"))),
    }
}

fn text(text: &str, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

fn call_tool(name: &Value, arguments: &Value) -> Result<Value, (i64, String)> {
    if arguments.get("gone").is_some() {
        return Err((-32602, "no such tool".to_owned()));
    }
    match name.as_str().unwrap_or_default() {
        "add" => Ok(match (arguments["a"].as_i64(), arguments["b"].as_i64()) {
            (Some(a), Some(b)) => text(&(a + b).to_string(), false),
            _ => text("`a` and `b` must be integers", true),
        }),
        "fail" => Ok(text("the disk is full", true)),
        "describe" => Ok(json!({"content": [
            {"type": "text", "text": "first"},
            {"type": "text", "text": "second"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "the notes"}},
            {"type": "resource", "resource": {"uri": "file:///a.pdf", "mimeType": "application/pdf", "blob": "JVBERi0="}},
            {"type": "resource_link", "uri": "file:///big.log", "name": "big.log"},
        ]})),
        "sleeper" => {
            let child = std::process::Command::new("sleep").arg("1000").spawn().map_err(|e| (-32603, e.to_string()))?;
            Ok(text(&child.id().to_string(), false))
        }
        other => Err((-32602, format!("no tool `{other}`"))),
    }
}
