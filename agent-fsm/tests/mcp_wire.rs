//! MCP servers that bend the wire protocol: this test binary, run again
//! with `AGENT_FSM_TEST_MCP_WIRE` set, is a hand-written MCP server on
//! stdio whose answers are not JSON-RPC as the spec has it (no `jsonrpc`,
//! an error without its message, both a result and an error), or that
//! sends requests of its own without end while it does not read its
//! stdin, that says its list may be kept (`ttlMs`) and then exits, that
//! never answers a list asked for again, or that writes its last answer
//! without the line's end and exits. The tests spawn it through
//! [`McpServer`] and check that each call ends with the server's answer
//! rather than waiting for ever, that the server's requests waiting for
//! their answers are bounded, that a server gone does not list its tools,
//! and that a list abandoned is cancelled on the server.
//!
//! No libtest harness (`harness = false`): libtest writes to stdout, which
//! is the server's protocol channel; `main` runs the tests itself, each
//! under a timeout.
#![cfg(feature = "mcp")]

#[path = "support/stdio_server.rs"]
mod stdio_server;

use std::io::{BufRead, Write};
use std::time::Duration;

use agent_fsm::llm::ToolCall;
use agent_fsm::tool::mcp::{McpError, McpServer};
use serde_json::{Value, json};
use stdio_server::{Test, run_tests, send, within};

/// Set in the server's environment: run as the server, in the mode its
/// value names (`bare`: no answer has `jsonrpc`).
const SERVER: &str = "AGENT_FSM_TEST_MCP_WIRE";

/// How many pings the `flood` tool sends before its answer.
const PINGS: usize = 20_000;

fn main() {
    if let Some(mode) = std::env::var_os(SERVER) {
        serve(mode.to_str().unwrap_or_default());
        return;
    }
    let tests: [(&str, Test); 6] = [
        ("an_answer_that_is_not_json_rpc_is_still_the_calls_answer", || {
            Box::pin(an_answer_that_is_not_json_rpc_is_still_the_calls_answer())
        }),
        ("a_server_whose_answers_have_no_jsonrpc_is_served", || {
            Box::pin(a_server_whose_answers_have_no_jsonrpc_is_served())
        }),
        ("the_servers_requests_waiting_for_answers_are_bounded", || {
            Box::pin(the_servers_requests_waiting_for_answers_are_bounded())
        }),
        ("a_server_that_has_exited_does_not_list_its_tools", || {
            Box::pin(a_server_that_has_exited_does_not_list_its_tools())
        }),
        ("a_list_asked_again_and_timed_out_is_cancelled_on_the_server", || {
            Box::pin(a_list_asked_again_and_timed_out_is_cancelled_on_the_server())
        }),
        ("a_last_answer_without_its_newline_is_the_calls_answer", || {
            Box::pin(a_last_answer_without_its_newline_is_the_calls_answer())
        }),
    ];
    run_tests(&tests, Duration::from_secs(60));
}

/// This binary as the server, in `mode`.
fn server_command(mode: &str) -> tokio::process::Command {
    stdio_server::server_command(SERVER, mode)
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments: json!({}) }
}

/// Answers under the call's id that the SDK cannot read (no `jsonrpc`; an
/// error without its message; a result and an error): each is the call's
/// answer, read as well as it can be, and the call ends with it, with no
/// timeout on the set, rather than waiting for ever.
async fn an_answer_that_is_not_json_rpc_is_still_the_calls_answer() {
    let server = McpServer::spawn(server_command("sloppy")).await.expect("the server starts");
    let tools = within(server.tools()).await.expect("the list");
    let expected = [
        ("no_jsonrpc", "hi", false),
        (
            "no_message",
            "`no_message` failed: the MCP server refused the call: an error it did not describe as JSON-RPC does: {\"code\":-32000}",
            true,
        ),
        ("result_and_error", "`result_and_error` failed: the MCP server refused the call: no disk", true),
    ];
    for (name, content, is_error) in expected {
        let result = within(tools.call(&call("c", name))).await;
        assert_eq!((result.content.as_str(), result.is_error), (content, is_error), "{name}");
    }
}

/// A server none of whose answers has `jsonrpc` (the handshake's, the
/// list's, the calls'): it starts, lists its tools and answers calls.
async fn a_server_whose_answers_have_no_jsonrpc_is_served() {
    let server = within(McpServer::spawn(server_command("bare"))).await.expect("the server starts");
    let tools = within(server.tools()).await.expect("the list");
    assert!(tools.contains("no_jsonrpc"), "{tools:?}");
    let result = within(tools.call(&call("c", "no_jsonrpc"))).await;
    assert_eq!((result.content.as_str(), result.is_error), ("hi", false));
}

/// A server that sends 20 000 pings without reading its stdin: the pings
/// the client has not yet managed to answer wait in its memory, and past
/// 64 of those one more is passed over, never answered, rather than each
/// taking memory for as long as the server sends them. Counted by the
/// server once it reads again: what a pipe holds, and 64, are answered;
/// not all.
async fn the_servers_requests_waiting_for_answers_are_bounded() {
    let server = McpServer::spawn(server_command("sloppy")).await.expect("the server starts");
    let tools = within(server.tools()).await.expect("the list");
    let result = within(tools.call(&call("c1", "flood"))).await;
    assert_eq!((result.content.as_str(), result.is_error), ("flooded", false));
    // The answers waiting when the server read again reach it before the
    // next call, whose answer says how many it has read.
    let result = within(tools.call(&call("c2", "pongs"))).await;
    let answered: usize = result.content.parse().expect("a count");
    assert!((64..PINGS / 2).contains(&answered), "{answered} of {PINGS} pings answered");
}

/// A server whose list may be kept for ten minutes (`ttlMs`), and that
/// then exits: [`McpServer::tools`] fails, rather than giving the list it
/// gave while it ran, whose every tool would now fail.
async fn a_server_that_has_exited_does_not_list_its_tools() {
    let server = McpServer::spawn(server_command("sloppy")).await.expect("the server starts");
    let tools = within(server.tools()).await.expect("the list");
    let result = within(tools.call(&call("c", "exit"))).await;
    assert!(result.is_error, "{result:?}");
    match within(server.tools()).await {
        Err(McpError::ListTools { .. }) => {}
        other => panic!("expected a list error, got {other:?}"),
    }
}

/// A server that writes its last answer without the line's `\n` and
/// exits: the answer is the call's, as the SDK reads it, not a failure
/// for the server having gone.
async fn a_last_answer_without_its_newline_is_the_calls_answer() {
    let server = McpServer::spawn(server_command("sloppy")).await.expect("the server starts");
    let tools = within(server.tools()).await.expect("the list");
    let result = within(tools.call(&call("c", "unterminated"))).await;
    assert_eq!((result.content.as_str(), result.is_error), ("bye", false), "{result:?}");
}

/// A list the SDK cannot read is asked for again and read tool by tool;
/// if the server never answers that, the list times out, and the server
/// is told (`notifications/cancelled` with the request's id), as it is of
/// a call. The server's later lists say what it saw.
async fn a_list_asked_again_and_timed_out_is_cancelled_on_the_server() {
    let server = McpServer::spawn_with_timeout(server_command("slow_list"), Duration::from_secs(2))
        .await
        .expect("the server starts");
    match within(server.tools()).await {
        Err(McpError::TimedOut { .. }) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    // The notification and the next list may reach the server in either
    // order: asked again until it is there.
    for _ in 0..200 {
        let tools = within(server.tools()).await.expect("the list");
        let seen: Value = serde_json::from_str(&tools.definitions()[0].description).expect("what the server saw");
        assert_eq!(seen["hung"].as_array().map(Vec::len), Some(1), "{seen}");
        if !seen["cancelled"].as_array().expect("the cancelled ids").is_empty() {
            assert_eq!(seen["cancelled"], seen["hung"]);
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server was not told the list was cancelled");
}

/// The server: one JSON-RPC message per line on stdin, one answer per
/// request on stdout, not always as JSON-RPC has it; without `jsonrpc` in
/// any answer in mode `bare`. In mode `slow_list` its first list has a
/// tool the SDK cannot read, the second is never answered, and the later
/// ones list one tool, whose description says the ids of the lists not
/// answered and of the `notifications/cancelled` the client sent.
fn serve(mode: &str) {
    // The answers to the server's pings it has read.
    let mut pongs = 0usize;
    let (mut lists, mut hung, mut cancelled) = (0usize, Vec::new(), Vec::new());
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        if message["method"] == "notifications/cancelled" {
            cancelled.push(message["params"]["requestId"].clone());
        }
        let Some(id) = message.get("id").cloned() else { continue };
        if message.get("method").is_none() {
            pongs += 1;
            continue;
        }
        let params = &message["params"];
        let result = match message["method"].as_str().unwrap_or_default() {
            "initialize" => json!({
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "agent-fsm-wire-server", "version": "0.1.0"},
            }),
            "tools/list" if mode == "slow_list" => {
                lists += 1;
                match lists {
                    1 => json!({"tools": [{"name": "no_schema"}]}),
                    2 => {
                        hung.push(id);
                        continue;
                    }
                    _ => {
                        let seen = json!({"hung": hung, "cancelled": cancelled}).to_string();
                        json!({"tools": [{"name": "seen", "description": seen, "inputSchema": {"type": "object"}}]})
                    }
                }
            }
            "tools/list" => {
                let names = ["no_jsonrpc", "no_message", "result_and_error", "flood", "pongs", "exit", "unterminated"];
                let tools = names.map(|name| json!({"name": name, "inputSchema": {"type": "object"}}));
                // The list may be kept for ten minutes (`ttlMs`).
                json!({"tools": tools, "ttlMs": 600_000})
            }
            "tools/call" => match params["name"].as_str().unwrap_or_default() {
                "no_jsonrpc" => {
                    send(&json!({"id": id, "result": {"content": [{"type": "text", "text": "hi"}]}}));
                    continue;
                }
                "no_message" => {
                    send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000}}));
                    continue;
                }
                "exit" => std::process::exit(3),
                "unterminated" => {
                    let answer = json!({"jsonrpc": "2.0", "id": id,
                                        "result": {"content": [{"type": "text", "text": "bye"}]}});
                    let mut out = std::io::stdout().lock();
                    let _ = write!(out, "{answer}").and_then(|()| out.flush());
                    std::process::exit(0);
                }
                "result_and_error" => {
                    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": []},
                                        "error": {"code": "x", "message": "no disk"}});
                    send(&answer);
                    continue;
                }
                "flood" => {
                    // Written without reading stdin meanwhile: the client's
                    // answers fill the pipe and wait.
                    let mut out = std::io::stdout().lock();
                    for n in 0..PINGS {
                        let _ = writeln!(out, "{}", json!({"jsonrpc": "2.0", "id": format!("p{n}"), "method": "ping"}));
                    }
                    let _ = out.flush();
                    json!({"content": [{"type": "text", "text": "flooded"}]})
                }
                "pongs" => json!({"content": [{"type": "text", "text": pongs.to_string()}]}),
                _ => json!({"content": [], "isError": true}),
            },
            _ => {
                send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no method"}}));
                continue;
            }
        };
        let mut answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
        if mode == "bare"
            && let Some(answer) = answer.as_object_mut()
        {
            answer.remove("jsonrpc");
        }
        send(&answer);
    }
}
