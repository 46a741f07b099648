//! MCP servers that misbehave: this test binary, run again with
//! `AGENT_FSM_TEST_MCP_HOSTILE` set, is a hand-written MCP server on stdio
//! whose tools misbehave (one exits mid-call, one leaving a child behind;
//! one never answers; one writes noise on stdout; one answers what is not
//! a result; some answer with blocks the SDK cannot read; some have names
//! or schemas no provider takes, or are not tools at all; some have names
//! the spec allows but the providers refuse, and say the name they were
//! called by; one list's pages never end). The tests spawn it through
//! [`McpServer`] and check that each call or list ends with an error in
//! bounded time, that no process outlives the server, and that what the
//! set hands the model is what the providers accept.
//!
//! No libtest harness (`harness = false`): libtest writes to stdout, which
//! is the server's protocol channel; `main` runs the tests itself, each
//! under a timeout.
#![cfg(feature = "mcp")]

#[path = "support/stdio_server.rs"]
mod stdio_server;

use std::io::{BufRead, Write};
use std::time::Duration;

use agent_fsm::llm::{ToolCall, ToolDefinition};
use agent_fsm::tool::mcp::{McpError, McpServer};
use serde_json::{Value, json};
use stdio_server::{Test, run_tests, send, within};

/// Set in the server's environment: run as the server, listing the tools
/// its value names ([`listed`]).
const SERVER: &str = "AGENT_FSM_TEST_MCP_HOSTILE";

fn main() {
    if std::env::var_os(SERVER).is_some() {
        serve();
        return;
    }
    let tests: [(&str, Test); 13] = [
        ("a_server_that_exits_leaving_a_child_on_its_stdout_fails_its_calls", || {
            Box::pin(a_server_that_exits_leaving_a_child_on_its_stdout_fails_its_calls())
        }),
        ("tools_the_providers_would_refuse_are_renamed_or_left_out", || {
            Box::pin(tools_the_providers_would_refuse_are_renamed_or_left_out())
        }),
        ("renamed_tools_are_named_alike_on_every_spawn_and_call_the_servers_name", || {
            Box::pin(renamed_tools_are_named_alike_on_every_spawn_and_call_the_servers_name())
        }),
        ("a_server_whose_pages_never_end_fails_the_list", || Box::pin(a_server_whose_pages_never_end_fails_the_list())),
        ("a_list_in_pages_is_read_to_its_end", || Box::pin(a_list_in_pages_is_read_to_its_end())),
        ("a_list_whose_fresh_pages_never_end_fails_within_its_budget", || {
            Box::pin(a_list_whose_fresh_pages_never_end_fails_within_its_budget())
        }),
        ("a_server_that_has_exited_has_no_pid", || Box::pin(a_server_that_has_exited_has_no_pid())),
        ("a_call_the_set_drops_is_cancelled_on_the_server", || {
            Box::pin(a_call_the_set_drops_is_cancelled_on_the_server())
        }),
        ("a_server_that_exits_at_start_leaving_a_child_fails_the_handshake", || {
            Box::pin(a_server_that_exits_at_start_leaving_a_child_fails_the_handshake())
        }),
        ("noise_on_the_servers_stdout_does_not_hold_up_its_answers", || {
            Box::pin(noise_on_the_servers_stdout_does_not_hold_up_its_answers())
        }),
        ("an_answer_that_is_not_a_tool_result_says_so", || Box::pin(an_answer_that_is_not_a_tool_result_says_so())),
        ("a_tool_the_sdk_cannot_read_is_left_out_not_the_whole_list", || {
            Box::pin(a_tool_the_sdk_cannot_read_is_left_out_not_the_whole_list())
        }),
        ("blocks_the_sdk_cannot_read_are_named_not_a_failed_call", || {
            Box::pin(blocks_the_sdk_cannot_read_are_named_not_a_failed_call())
        }),
    ];
    run_tests(&tests, Duration::from_secs(60));
}

/// This binary as a hostile MCP server, listing the tools `list` names.
fn server_command(list: &str) -> tokio::process::Command {
    stdio_server::server_command(SERVER, list)
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments }
}

/// A server that exits mid-call, while a child of its own still holds
/// its stdout open: the call, and every later one, fails at once rather
/// than waiting for an answer; the child is killed and the server reaped.
async fn a_server_that_exits_leaving_a_child_on_its_stdout_fails_its_calls() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let pid_file = dir.path().join("child.pid");
    let server = McpServer::spawn(server_command("exit")).await.expect("the server starts");
    let server_pid = server.pid().expect("the server's pid");
    // No timeout on the set: only the server's exit can end the call.
    let tools = server.tools().await.expect("the list");

    let exiting = call("c1", "exit_leaving_child", json!({"pid_file": pid_file}));
    let result = within(tools.call(&exiting)).await;
    assert!(result.is_error, "{result:?}");
    assert!(
        result.content.starts_with("`exit_leaving_child` failed: the MCP server did not answer"),
        "{}",
        result.content
    );
    let later = within(tools.call(&call("c2", "exit_leaving_child", json!({})))).await;
    assert!(later.is_error && later.content.starts_with("`exit_leaving_child` failed: "), "{later:?}");

    let child: u32 = std::fs::read_to_string(&pid_file).expect("the child's pid").trim().parse().expect("a pid");
    for _ in 0..200 {
        if !alive(child) && !zombie_of_ours(server_pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server's child ({child}) outlived it, or the server ({server_pid}) was not reaped");
}

/// A server's tool whose name a provider refuses (a space, a slash, a dot
/// as the MCP spec allows, over 64 long) is given one it takes; one whose
/// name has none of the providers' characters (empty, dots only), or whose
/// schema is not an object's as the spec has it (another `type`, a
/// property's schema that is not one, `required` not a list of names),
/// would fail every model request that lists it, however deep in the
/// schema that is (a `type` no type has): it is left out. A schema without
/// a `type` is an object's; `properties` as an empty list is an empty
/// object, at any depth.
async fn tools_the_providers_would_refuse_are_renamed_or_left_out() {
    let server = McpServer::spawn(server_command("odd")).await.expect("the server starts");
    let tools = server.tools().await.expect("the list");
    let long = "y".repeat(64);
    let object = || json!({"type": "object", "properties": {}});
    let renamed = |name: &str| format!("(The MCP server's name for this tool is `{name}`.)");
    let x65 = "x".repeat(65);
    assert_eq!(
        tools.definitions(),
        [
            ToolDefinition::new("untyped", "", object()),
            ToolDefinition::new("has_space", renamed("has space"), object()),
            ToolDefinition::new("a_b", renamed("a/b"), object()),
            ToolDefinition::new(format!("{}_3400e322", "x".repeat(55)), renamed(&x65), object()),
            ToolDefinition::new("devserver_stop", renamed("devserver.stop"), object()),
            ToolDefinition::new(&*long, "", object()),
            ToolDefinition::new(
                "files_read-2_B",
                "Reads",
                json!({"type": "object", "properties": {"p": {"type": "string"}}})
            ),
            ToolDefinition::new("php_empty", "", json!({"type": "object", "properties": {}, "required": []})),
            ToolDefinition::new(
                "boolean_property",
                "",
                json!({"type": "object", "properties": {"any": true}, "required": ["any"]})
            ),
            ToolDefinition::new(
                "deep",
                "",
                json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object",
                    "properties": {}, "additionalProperties": false}}}})
            ),
        ]
    );
    for definition in tools.definitions() {
        assert!(provider_safe(&definition.name), "{}", definition.name);
    }
    let result = tools.call(&call("c", "has space", json!({}))).await;
    assert!(result.content.starts_with("unknown tool `has space`; the tools are: untyped, has_space, a_b, "));
}

/// Dotted, clashing and long names, as the MCP spec allows: each is given
/// a name the providers take, no two the same, the server's own kept where
/// the providers take it (`a_b` beside `a.b`); a second spawn of the
/// server, listing them in the other order, gives the same names (pinned
/// here: a durable agent's conversation holds them); and a call under each
/// reaches the server's tool by the server's name.
async fn renamed_tools_are_named_alike_on_every_spawn_and_call_the_servers_name() {
    let (first, second) = long_names();
    let expected = [
        ("files.read", "files_read".to_owned()),
        ("a_b", "a_b".to_owned()),
        ("a.b", "a_b_e27bcb35".to_owned()),
        (&*first, format!("{}_a3e882bf", "n".repeat(55))),
        (&*second, format!("{}_c654bed2", "n".repeat(55))),
    ];
    for list in ["names", "names_reversed"] {
        let server = McpServer::spawn(server_command(list)).await.expect("the server starts");
        let tools = within(server.tools()).await.expect("the list");
        let mut given: Vec<String> = tools.names().map(str::to_owned).collect();
        given.sort();
        let mut wanted: Vec<String> = expected.iter().map(|(_, name)| name.clone()).collect();
        wanted.sort();
        assert_eq!(given, wanted, "{list}");
        for (original, name) in &expected {
            assert!(provider_safe(name), "{name}");
            let result = within(tools.call(&call("c", name, json!({"n": 1})))).await;
            let echoed = json!({"name": original, "arguments": {"n": 1}}).to_string();
            assert_eq!((result.content.as_str(), result.is_error), (echoed.as_str(), false), "{list}: {name}");
        }
    }
}

/// Two names 100 long, the same in their first 64 characters.
fn long_names() -> (String, String) {
    let shared = "n".repeat(64);
    (format!("{shared}{}", "1".repeat(36)), format!("{shared}{}", "2".repeat(36)))
}

/// Whether both providers take `name` (OpenAI's `^[a-zA-Z0-9_-]{1,64}$`).
fn provider_safe(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A server whose next page's cursor is one it gave before (`a`, `b`,
/// `a`, ...), and whose pages may be cached (`ttlMs`): the list fails at
/// once, rather than growing until the timeout.
async fn a_server_whose_pages_never_end_fails_the_list() {
    let server = McpServer::spawn_with_timeout(server_command("cycle"), Duration::from_secs(20))
        .await
        .expect("the server starts");
    match within(server.tools()).await {
        Err(error @ McpError::ListTools { .. }) => assert!(
            error.to_string().ends_with(
                "did not list its tools: the server gave a cursor it had given before, so its pages would never end"
            ),
            "{error}"
        ),
        other => panic!("expected a list error, got {other:?}"),
    }
}

/// A list in three pages, each with a cursor of its own: every page is
/// read, in order, and the list ends with the page that gives no cursor.
async fn a_list_in_pages_is_read_to_its_end() {
    let server = McpServer::spawn(server_command("pages")).await.expect("the server starts");
    let tools = within(server.tools()).await.expect("the list");
    let names: Vec<String> = tools.definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["first", "second", "third"]);
}

/// A server whose pages never end, each with a cursor it never gave
/// before and 1 MiB of tools' descriptions: the list fails once it
/// holds 16 MiB, rather than growing until the timeout (the server stops
/// answering after 100 pages, so that without that limit the list fails
/// by timing out, not by exhausting the machine's memory).
async fn a_list_whose_fresh_pages_never_end_fails_within_its_budget() {
    let server = McpServer::spawn_with_timeout(server_command("endless"), Duration::from_secs(15))
        .await
        .expect("the server starts");
    match within(server.tools()).await {
        Err(error @ McpError::ListTools { .. }) => {
            assert!(error.to_string().ends_with("did not list its tools: its list is over 16 MiB"), "{error}");
        }
        other => panic!("expected a list error, got {other:?}"),
    }
}

/// Once the server has exited, and been reaped, its pid is no longer its
/// own: [`McpServer::pid`] no longer gives it.
async fn a_server_that_has_exited_has_no_pid() {
    let server = McpServer::spawn(server_command("exit")).await.expect("the server starts");
    let pid = server.pid().expect("the server's pid");
    let tools = server.tools().await.expect("the list");
    let result = within(tools.call(&call("c", "exit", json!({})))).await;
    assert!(result.is_error, "{result:?}");
    for _ in 0..200 {
        if server.pid().is_none() {
            assert!(!zombie_of_ours(pid), "the server exited but was not reaped");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server ({pid}) exited, but its pid is still given");
}

/// A call the server never answers ends at the set's timeout, and the
/// server is told (`notifications/cancelled` with the call's request id);
/// the connection serves the next call.
async fn a_call_the_set_drops_is_cancelled_on_the_server() {
    let server = McpServer::spawn(server_command("hang")).await.expect("the server starts");
    let tools = server.tools().await.expect("the list");
    let result =
        within(tools.clone().with_timeout(Duration::from_millis(200)).call(&call("c", "hang", json!({})))).await;
    assert_eq!(result.content, "`hang` timed out after 200ms");
    // The notification and the next request may reach the server in
    // either order: asked again until it is there.
    for _ in 0..200 {
        let seen = within(tools.call(&call("s", "seen", json!({})))).await;
        let seen: Value = serde_json::from_str(&seen.content).expect("the ids the server saw");
        let hung = seen["hung"].as_array().expect("the hung calls' ids");
        assert_eq!(hung.len(), 1, "{seen}");
        if !seen["cancelled"].as_array().expect("the cancelled ids").is_empty() {
            assert_eq!(seen["cancelled"], seen["hung"]);
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server was not told the call was cancelled");
}

/// A server that exits before the handshake, while a child of its own
/// holds its stdin and stdout: a handshake error at once, not a wait for
/// the timeout.
async fn a_server_that_exits_at_start_leaving_a_child_fails_the_handshake() {
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", "sleep 1000 <&0 & exit 0"]);
    match within(McpServer::spawn_with_timeout(command, Duration::from_secs(60))).await {
        Err(McpError::Handshake { program, .. }) => assert_eq!(program, "sh"),
        other => panic!("expected a handshake error, got {other:?}"),
    }
}

/// Lines on the server's stdout that are not JSON-RPC (more than a pipe
/// holds), and JSON that is not a message, are passed over: the answer
/// after them is read.
async fn noise_on_the_servers_stdout_does_not_hold_up_its_answers() {
    let server = McpServer::spawn(server_command("noise")).await.expect("the server starts");
    let tools = server.tools().await.expect("the list");
    for id in ["c1", "c2"] {
        let result = within(tools.call(&call(id, "noise", json!({})))).await;
        assert_eq!((result.content.as_str(), result.is_error), ("after the noise", false));
    }
}

/// An answer to the call that is not a tool's result (a string, an object
/// with none of a result's fields): an error result that says the server
/// answered, with what the model cannot use.
async fn an_answer_that_is_not_a_tool_result_says_so() {
    let server = McpServer::spawn(server_command("noise")).await.expect("the server starts");
    let tools = server.tools().await.expect("the list");
    for name in ["not_a_result", "an_object_not_a_result"] {
        let result = within(tools.call(&call("c", name, json!({})))).await;
        let expected = format!("`{name}` failed: the MCP server answered with something that is not a tool's result");
        assert_eq!((result.content.as_str(), result.is_error), (expected.as_str(), true));
    }
}

/// A result with content blocks the SDK cannot read (a kind it does not
/// know, an image without its MIME type, a text block without its text):
/// the tool ran, so its result is read block by block as any other, each
/// such block named, and `isError` still makes it an error result.
async fn blocks_the_sdk_cannot_read_are_named_not_a_failed_call() {
    let server = McpServer::spawn(server_command("noise")).await.expect("the server starts");
    let tools = server.tools().await.expect("the list");
    let result = within(tools.call(&call("c1", "odd_blocks", json!({})))).await;
    assert_eq!(
        (result.content.as_str(), result.is_error),
        ("done\n[video/mp4 video https://example.com/v.mp4]\n[image]\n[text]", false)
    );
    let result = within(tools.call(&call("c2", "odd_error", json!({})))).await;
    assert_eq!((result.content.as_str(), result.is_error), ("`odd_error` failed: no disk\n[video]", true));
}

/// A page of the list with tools the SDK cannot read (no input schema, a
/// schema that is not an object, no name; an annotation of the wrong
/// type), on the second of two pages: those without what a definition
/// needs are left out, and the others, on both pages, are listed and can
/// be called.
async fn a_tool_the_sdk_cannot_read_is_left_out_not_the_whole_list() {
    let server = McpServer::spawn(server_command("sloppy")).await.expect("the server starts");
    let tools = within(server.tools()).await.expect("the list");
    let names: Vec<&str> = tools.names().collect();
    assert_eq!(names, ["first", "before", "annotated", "after"]);
    assert_eq!(tools.definitions()[2].description, "Kept");
    let result = within(tools.call(&call("c", "after", json!({})))).await;
    assert_eq!((result.content.as_str(), result.is_error), ("called", false));
}

/// Whether `pid` runs (a zombie, killed but not yet reaped, does not).
fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|state| !state.starts_with('Z'))
}

/// Whether `pid` is a zombie child of this process: exited, not reaped.
fn zombie_of_ours(pid: u32) -> bool {
    stat(pid).is_some_and(|state| {
        let ppid = state.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok());
        state.starts_with('Z') && ppid == Some(std::process::id())
    })
}

/// `/proc/{pid}/stat` after the parenthesised command name: the state, the
/// parent's pid, and on.
fn stat(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ").map(|(_, rest)| rest.to_owned())
}

/// The server: one JSON-RPC message per line on stdin, one answer per
/// request on stdout, except where a tool's misbehaviour says otherwise.
fn serve() {
    // The request ids of the `hang` calls, never answered, and of the
    // `notifications/cancelled` the client sent.
    let (mut hung, mut cancelled) = (Vec::new(), Vec::new());
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        if message["method"] == "notifications/cancelled" {
            cancelled.push(message["params"]["requestId"].clone());
        }
        let Some(id) = message.get("id").cloned() else { continue };
        let params = &message["params"];
        let result = match message["method"].as_str().unwrap_or_default() {
            "initialize" => json!({
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "agent-fsm-hostile-server", "version": "0.1.0"},
            }),
            "tools/list" => listed(params["cursor"].as_str()),
            "tools/call" => match params["name"].as_str().unwrap_or_default() {
                "exit_leaving_child" => {
                    // The child inherits stdout, the protocol's pipe, and
                    // outlives the server unless killed.
                    let child = std::process::Command::new("sleep").arg("1000").spawn();
                    if let (Ok(child), Some(path)) = (child, params["arguments"]["pid_file"].as_str()) {
                        let _ = std::fs::write(path, child.id().to_string());
                    }
                    std::process::exit(3)
                }
                "exit" => std::process::exit(3),
                "not_a_result" => json!("a string"),
                "an_object_not_a_result" => json!({"answer": 42}),
                "odd_blocks" => json!({"content": [
                    {"type": "text", "text": "done"},
                    {"type": "video", "mimeType": "video/mp4", "uri": "https://example.com/v.mp4"},
                    {"type": "image", "data": "iVBORw0KGgo="},
                    {"type": "text"},
                ]}),
                "odd_error" => {
                    json!({"content": [{"type": "text", "text": "no disk"}, {"type": "video"}], "isError": true})
                }
                "first" | "before" | "after" => json!({"content": [{"type": "text", "text": "called"}]}),
                // The `names` lists' tools say the name they were called by.
                name if std::env::var(SERVER).is_ok_and(|list| list.starts_with("names")) => {
                    let echoed = json!({"name": name, "arguments": params["arguments"]});
                    json!({"content": [{"type": "text", "text": echoed.to_string()}]})
                }
                "hang" => {
                    hung.push(id);
                    continue;
                }
                "noise" => {
                    let mut out = std::io::stdout().lock();
                    for n in 0..10_000 {
                        let _ = writeln!(out, "log line {n}: this is not JSON-RPC");
                    }
                    let _ = writeln!(out, "{}", json!({"jsonrpc": "2.0", "note": "no method, no id"}));
                    let _ = writeln!(out, "[1, 2, 3]");
                    let _ = out.flush();
                    json!({"content": [{"type": "text", "text": "after the noise"}]})
                }
                "seen" => {
                    let seen = json!({"hung": hung, "cancelled": cancelled});
                    json!({"content": [{"type": "text", "text": seen.to_string()}]})
                }
                _ => json!({"content": [], "isError": true}),
            },
            _ => {
                send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no method"}}));
                continue;
            }
        };
        send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }
}

/// The tools the server lists, by the value of [`SERVER`]; `cursor` is the
/// page asked for.
fn listed(cursor: Option<&str>) -> Value {
    match std::env::var(SERVER).unwrap_or_default().as_str() {
        "odd" => json!({"tools": [
            {"name": "", "inputSchema": {"type": "object"}},
            {"name": "untyped", "inputSchema": {}},
            {"name": "has space", "inputSchema": {"type": "object"}},
            {"name": "a/b", "inputSchema": {"type": "object"}},
            {"name": "x".repeat(65), "inputSchema": {"type": "object"}},
            {"name": "devserver.stop", "inputSchema": {"type": "object"}},
            {"name": "y".repeat(64), "inputSchema": {"type": "object"}},
            {"name": "an_array", "inputSchema": {"type": "array", "items": {"type": "string"}}},
            {"name": "two_types", "inputSchema": {"type": ["object", "null"]}},
            {"name": "files_read-2_B", "description": "Reads", "inputSchema": {"properties": {"p": {"type": "string"}}}},
            {"name": "...", "inputSchema": {"type": "object"}},
            // Property schemas, and required names, not as JSON Schema has
            // them: both providers refuse the request.
            {"name": "string_property", "inputSchema": {"type": "object", "properties": {"a": "string"}}},
            {"name": "listed_properties", "inputSchema": {"type": "object", "properties": ["a"]}},
            {"name": "one_required", "inputSchema": {"type": "object", "properties": {}, "required": "a"}},
            {"name": "numbered_required", "inputSchema": {"type": "object", "required": [1]}},
            // An empty object as PHP writes it: an empty list.
            {"name": "php_empty", "inputSchema": {"type": "object", "properties": [], "required": []}},
            {"name": "boolean_property", "inputSchema": {"properties": {"any": true}, "required": ["any"]}},
            // The same, deeper: a property's own property, a list's items.
            {"name": "deep_string_property", "inputSchema": {"properties": {"a": {"properties": {"b": "string"}}}}},
            {"name": "deep_bad_type", "inputSchema": {"properties": {"a": {"type": "array", "items": {"type": "str"}}}}},
            {"name": "deep", "inputSchema": {"properties": {"a": {"type": "array", "items": {"type": "object",
                "properties": [], "additionalProperties": false}}}}},
        ]}),
        list @ ("names" | "names_reversed") => {
            let (first, second) = long_names();
            let mut tools: Vec<Value> = ["files.read", "a_b", "a.b", &first, &second]
                .iter()
                .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}))
                .collect();
            if list == "names_reversed" {
                tools.reverse();
            }
            json!({"tools": tools})
        }
        "noise" => json!({"tools": [
            {"name": "noise", "inputSchema": {"type": "object"}},
            {"name": "not_a_result", "inputSchema": {"type": "object"}},
            {"name": "an_object_not_a_result", "inputSchema": {"type": "object"}},
            {"name": "odd_blocks", "inputSchema": {"type": "object"}},
            {"name": "odd_error", "inputSchema": {"type": "object"}},
        ]}),
        "hang" => json!({"tools": [
            {"name": "hang", "inputSchema": {"type": "object"}},
            {"name": "seen", "inputSchema": {"type": "object"}},
        ]}),
        "pages" => {
            let (name, next) = match cursor {
                None => ("first", Some("p2")),
                Some("p2") => ("second", Some("p3")),
                _ => ("third", None),
            };
            json!({"tools": [{"name": name, "inputSchema": {"type": "object"}}], "nextCursor": next})
        }
        "sloppy" => match cursor {
            None => json!({"tools": [{"name": "first", "inputSchema": {"type": "object"}}], "nextCursor": "p2"}),
            _ => json!({"tools": [
                {"name": "before", "inputSchema": {"type": "object"}},
                // Only its annotation and output schema are not the spec's.
                {"name": "annotated", "description": "Kept", "inputSchema": {"type": "object"},
                 "annotations": {"readOnlyHint": "yes"}, "outputSchema": "text"},
                {"name": "no_schema", "description": "Has no input schema"},
                {"name": "string_schema", "inputSchema": "an object"},
                {"name": "null_schema", "inputSchema": null},
                {"name": 7, "inputSchema": {"type": "object"}},
                {"inputSchema": {"type": "object"}},
                "not a tool",
                {"name": "after", "inputSchema": {"type": "object"}},
            ]}),
        },
        "endless" => {
            let page: u32 = cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
            if page >= 100 {
                // Never answered: the list can end only by its timeout.
                std::thread::sleep(Duration::from_secs(1000));
            }
            // 1 MiB a page, in tools each well under the bound on one tool.
            let description = "d".repeat(128 << 10);
            let tools: Vec<Value> = (0..8)
                .map(|n| json!({"name": format!("t{page}_{n}"), "description": description, "inputSchema": {}}))
                .collect();
            json!({"tools": tools, "nextCursor": (page + 1).to_string()})
        }
        "cycle" => json!({
            "tools": [{"name": "again", "inputSchema": {"type": "object"}}],
            "nextCursor": if cursor == Some("a") { "b" } else { "a" },
            "ttlMs": 600_000,
        }),
        _ => json!({"tools": [
            {"name": "exit_leaving_child", "inputSchema": {"type": "object"}},
            {"name": "exit", "inputSchema": {"type": "object"}},
        ]}),
    }
}
