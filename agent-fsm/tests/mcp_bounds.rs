//! MCP servers that push past the connection's bounds: this test binary,
//! run again with `AGENT_FSM_TEST_MCP_BOUNDS` set, is a hand-written MCP
//! server on stdio whose processes leave its process group (`setsid`, as a
//! direct child, as a grandchild whose parent exits, and under a
//! cleared environment) or whose list of tools is too long or holds a
//! tool too large. The tests spawn it through [`McpServer`] and check, by
//! pid, that no process it started outlives it, and that each list past
//! a bound fails with its typed error.
//!
//! No libtest harness (`harness = false`): libtest writes to stdout, which
//! is the server's protocol channel; `main` runs the tests itself, each
//! under a timeout.
#![cfg(feature = "mcp")]

#[path = "support/stdio_server.rs"]
mod stdio_server;

use std::io::BufRead;
use std::path::Path;
use std::time::Duration;

use agent_fsm::llm::ToolCall;
use agent_fsm::tool::mcp::{MAX_TOOL_BYTES, MAX_TOOLS, McpError, McpServer};
use serde_json::{Value, json};
use stdio_server::{Test, run_tests, send, within};

/// Set in the server's environment: run as the server, in the mode its
/// value names (see [`listed`] and [`call_tool`]).
const SERVER: &str = "AGENT_FSM_TEST_MCP_BOUNDS";

fn main() {
    if std::env::var_os(SERVER).is_some() {
        serve();
        return;
    }
    // The processes are read from `/proc`, and only Linux's connection
    // finds those that left the group.
    if !cfg!(target_os = "linux") {
        eprintln!("mcp_bounds: skipped, not on Linux");
        return;
    }
    let tests: [(&str, Test); 5] = [
        ("processes_that_left_the_servers_group_die_with_the_connection", || {
            Box::pin(processes_that_left_the_servers_group_die_with_the_connection())
        }),
        ("an_orphan_that_left_the_group_dies_when_the_server_exits", || {
            Box::pin(an_orphan_that_left_the_group_dies_when_the_server_exits())
        }),
        ("a_list_of_more_than_max_tools_fails_typed", || Box::pin(a_list_of_more_than_max_tools_fails_typed())),
        ("a_list_past_max_tools_over_pages_fails_typed", || Box::pin(a_list_past_max_tools_over_pages_fails_typed())),
        ("a_tool_past_max_tool_bytes_fails_the_list_typed", || {
            Box::pin(a_tool_past_max_tool_bytes_fails_the_list_typed())
        }),
    ];
    run_tests(&tests, Duration::from_secs(120));
}

/// This binary as a server in `mode`.
fn server_command(mode: &str) -> tokio::process::Command {
    stdio_server::server_command(SERVER, mode)
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments }
}

/// A server starts three `sleep`s that leave its process group, each in a
/// session of its own: one its own child, one whose parent (a shell)
/// exits at once, so that init adopts it, and one under a cleared
/// environment whose parent (a shell in a session of its own) waits.
/// Dropping the connection kills every one, checked by pid.
async fn processes_that_left_the_servers_group_die_with_the_connection() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = McpServer::spawn(server_command("setsid")).await.expect("the server starts");
    let server_pid = server.pid().expect("the server's pid");
    let tools = server.tools().await.expect("the list");
    let result = within(tools.call(&call("c1", "escape", json!({"dir": dir.path()})))).await;
    assert_eq!((result.content.as_str(), result.is_error), ("started", false), "{result:?}");
    let pids: Vec<u32> = ["direct", "orphan", "bare"].iter().map(|name| pid_in(dir.path(), name)).collect();
    for &pid in &pids {
        wait_until_left_the_group(pid, server_pid).await;
    }

    drop(tools);
    drop(server);
    expect_all_dead(&pids).await;
}

/// A server that starts a `sleep` in a session of its own, whose parent
/// exits at once, then exits itself: the `sleep`, adopted by init, is
/// killed all the same, found by the server's mark in its environment.
async fn an_orphan_that_left_the_group_dies_when_the_server_exits() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = McpServer::spawn(server_command("setsid")).await.expect("the server starts");
    let server_pid = server.pid().expect("the server's pid");
    let tools = server.tools().await.expect("the list");
    let result = within(tools.call(&call("c1", "escape_and_exit", json!({"dir": dir.path()})))).await;
    assert!(result.is_error, "the server exits mid-call: {result:?}");
    let orphan = pid_in(dir.path(), "orphan");
    assert!(stat(orphan).and_then(|stat| group(&stat)) != Some(server_pid), "the orphan left the group");
    // The connection is still held: only the server's exit can kill it.
    expect_all_dead(&[orphan, server_pid]).await;
    drop((tools, server));
}

/// A list of exactly [`MAX_TOOLS`] tools is taken; one more fails the
/// list with [`McpError::TooManyTools`].
async fn a_list_of_more_than_max_tools_fails_typed() {
    let server = McpServer::spawn(server_command(&format!("many:{MAX_TOOLS}"))).await.expect("the server starts");
    let tools = within(server.tools()).await.expect("the list");
    assert_eq!(tools.names().count(), MAX_TOOLS);

    let server = McpServer::spawn(server_command(&format!("many:{}", MAX_TOOLS + 1))).await.expect("starts");
    match within(server.tools()).await {
        Err(error @ McpError::TooManyTools { max: MAX_TOOLS, .. }) => {
            assert_eq!(error.to_string(), format!("the MCP server `{}` lists more than 1024 tools", program()));
        }
        other => panic!("expected too many tools, got {:?}", other.map(|tools| tools.names().count())),
    }
}

/// Pages that each stay under [`MAX_TOOLS`] but pass it together fail the
/// list too, as the page that passes it comes.
async fn a_list_past_max_tools_over_pages_fails_typed() {
    let server = McpServer::spawn(server_command("pages:600:3")).await.expect("the server starts");
    match within(server.tools()).await {
        Err(McpError::TooManyTools { max: MAX_TOOLS, .. }) => {}
        other => panic!("expected too many tools, got {:?}", other.map(|tools| tools.names().count())),
    }
}

/// A tool whose description, or input schema, takes more than
/// [`MAX_TOOL_BYTES`] fails the list with [`McpError::ToolTooLarge`],
/// naming it; one just under the bound is taken.
async fn a_tool_past_max_tool_bytes_fails_the_list_typed() {
    let under = MAX_TOOL_BYTES - 1_000;
    let server = McpServer::spawn(server_command(&format!("large:description:{under}"))).await.expect("starts");
    let tools = within(server.tools()).await.expect("the list");
    assert_eq!(tools.names().collect::<Vec<_>>(), ["small", "large"]);

    for part in ["description", "schema"] {
        let server = McpServer::spawn(server_command(&format!("large:{part}:{MAX_TOOL_BYTES}"))).await.expect("starts");
        match within(server.tools()).await {
            Err(McpError::ToolTooLarge { tool, size, max: MAX_TOOL_BYTES, .. }) => {
                assert_eq!(tool, "large", "{part}");
                assert!(size > MAX_TOOL_BYTES && size < MAX_TOOL_BYTES + 1_000, "{part}: {size}");
            }
            other => panic!("{part}: expected a tool too large, got {:?}", other.map(|tools| tools.names().count())),
        }
    }
}

/// The program the servers run as: this binary.
fn program() -> String {
    std::env::current_exe().expect("the test binary").to_string_lossy().into_owned()
}

/// The pid the server wrote to `dir/{name}.pid`.
fn pid_in(dir: &Path, name: &str) -> u32 {
    let path = dir.join(format!("{name}.pid"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.trim().parse().unwrap_or_else(|e| panic!("{}: {text:?}: {e}", path.display()))
}

/// Waits until `pid` runs in a process group other than the server's
/// (`setsid` has run): the case the test is about.
async fn wait_until_left_the_group(pid: u32, server: u32) {
    for _ in 0..200 {
        match stat(pid) {
            Some(stat) if alive(pid) && group(&stat) != Some(server) => return,
            Some(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            None => panic!("{pid} is not running"),
        }
    }
    kill_all(&[pid]);
    panic!("{pid} did not leave the server's process group");
}

/// Waits until none of `pids` runs; kills those left, and fails, if one
/// still runs after 10 s.
async fn expect_all_dead(pids: &[u32]) {
    for _ in 0..200 {
        if !pids.iter().any(|&pid| alive(pid)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left: Vec<u32> = pids.iter().copied().filter(|&pid| alive(pid)).collect();
    kill_all(&left);
    panic!("processes the server started outlived it: {left:?}");
}

/// Kills what a failed test leaves behind.
fn kill_all(pids: &[u32]) {
    for pid in pids {
        let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
}

/// Whether `pid` runs (a zombie, killed but not yet reaped, does not).
fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|state| !state.starts_with('Z'))
}

/// The process group in `stat` (the state, the parent, then the group).
fn group(stat: &str) -> Option<u32> {
    stat.split(' ').nth(2)?.parse().ok()
}

/// `/proc/{pid}/stat` after the parenthesised command name.
fn stat(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ").map(|(_, rest)| rest.to_owned())
}

// ===== the server =====

/// The server: one JSON-RPC message per line on stdin, one answer per
/// request on stdout; notifications get none.
fn serve() {
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        let Some(id) = message.get("id").cloned() else { continue };
        let params = &message["params"];
        let result = match message["method"].as_str().unwrap_or_default() {
            "initialize" => json!({
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "agent-fsm-bounds-server", "version": "0.1.0"},
            }),
            "tools/list" => listed(params["cursor"].as_str()),
            "tools/call" => call_tool(params["name"].as_str().unwrap_or_default(), &params["arguments"]),
            _ => json!({}),
        };
        send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }
}

/// The tools the server's mode lists: `setsid`, its two tools; `many:N`,
/// `N` tools; `pages:N:M`, `M` pages of `N` tools; `large:PART:BYTES`, a
/// small tool and one whose description or input schema (`PART`) holds a
/// text of `BYTES` bytes.
fn listed(cursor: Option<&str>) -> Value {
    let mode = std::env::var(SERVER).unwrap_or_default();
    let tool = |name: String| json!({"name": name, "inputSchema": {"type": "object"}});
    let parts: Vec<&str> = mode.split(':').collect();
    let number = |at: usize| parts.get(at).and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
    match parts[0] {
        "setsid" => json!({"tools": [tool("escape".into()), tool("escape_and_exit".into())]}),
        "many" => json!({"tools": (0..number(1)).map(|n| tool(format!("t{n}"))).collect::<Vec<_>>()}),
        "pages" => {
            let page = cursor.and_then(|c| c.parse::<usize>().ok()).unwrap_or(0);
            let tools: Vec<Value> = (0..number(1)).map(|n| tool(format!("p{page}_{n}"))).collect();
            let next = (page + 1 < number(2)).then(|| (page + 1).to_string());
            json!({"tools": tools, "nextCursor": next})
        }
        "large" => {
            let text = "x".repeat(number(2));
            let large = if parts[1] == "description" {
                json!({"name": "large", "description": text, "inputSchema": {"type": "object"}})
            } else {
                json!({"name": "large", "inputSchema": {"type": "object", "properties": {"a": {"description": text}}}})
            };
            json!({"tools": [tool("small".into()), large]})
        }
        _ => json!({"tools": []}),
    }
}

/// Runs a tool of the `setsid` mode; `dir` is where each process started
/// writes its pid.
fn call_tool(name: &str, arguments: &Value) -> Value {
    let dir = Path::new(arguments["dir"].as_str().unwrap_or("."));
    let path = |name: &str| dir.join(format!("{name}.pid")).to_string_lossy().into_owned();
    // In a session of its own, adopted by init once its shell exits.
    // The server waits until it has left its group, so that the group
    // killed when it exits is not what kills it.
    let orphan = || {
        let script = r#"setsid sleep 1000 & echo $! > "$0""#;
        let _ = std::process::Command::new("sh").args(["-c", script, &path("orphan")]).status();
        let pid = std::fs::read_to_string(path("orphan")).ok().and_then(|pid| pid.trim().parse::<u32>().ok());
        let own = stat(std::process::id()).and_then(|stat| group(&stat));
        for _ in 0..200 {
            if pid.and_then(stat).is_none_or(|stat| group(&stat) != own) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    match name {
        "escape" => {
            // The server's own child, in a session of its own.
            if let Ok(child) = std::process::Command::new("setsid").args(["sleep", "1000"]).spawn() {
                let _ = std::fs::write(path("direct"), child.id().to_string());
            }
            orphan();
            // Under a cleared environment, its parent in a session of its own.
            let script = r#"env -i sleep 1000 & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; wait"#;
            let _ = std::process::Command::new("setsid").args(["sh", "-c", script, &path("bare")]).spawn();
            for _ in 0..200 {
                if Path::new(&path("bare")).exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            json!({"content": [{"type": "text", "text": "started"}]})
        }
        "escape_and_exit" => {
            orphan();
            std::process::exit(3)
        }
        _ => json!({"content": [{"type": "text", "text": "no such tool"}], "isError": true}),
    }
}
