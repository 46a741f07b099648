//! Tools of a Model Context Protocol server, beside native ones: an
//! [`McpServer`] spawned as a child process speaking MCP over stdio (the
//! official SDK, `rmcp`, as the client), whose tools join a
//! [`ToolSet`] as [`RawTool`]s.
//!
//! ```no_run
//! use agent_fsm::tool::ToolSet;
//! use agent_fsm::tool::mcp::McpServer;
//! use tokio::process::Command;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut command = Command::new("npx");
//! command.args(["-y", "@modelcontextprotocol/server-filesystem", "/tmp/workspace"]);
//! let server = McpServer::spawn(command).await?;
//!
//! let mut tools = ToolSet::new();
//! tools.extend(server.tools().await?);
//! // `tools.definitions()` now lists the server's tools, with their input
//! // schemas, for the model; `tools.call(&call)` calls the server.
//! # Ok(())
//! # }
//! ```
//!
//! A tool's name is the server's if the model providers take it (1 to 64
//! of `A-Z a-z 0-9 _ -`). The MCP spec also allows `.` and up to 128
//! characters, which they refuse: such a tool is offered under a name
//! derived from the server's (`files.read` as `files_read`; a long one cut
//! and ended with a hash of the whole), the same on every start of the
//! same server, and called on the server by its own name (see
//! [`McpServer::tools`]).
//!
//! A call's result is the text the model reads: the text of each content
//! block (of an embedded text resource too), one per line (a block of
//! another kind is named, as `[image/png image]`, with its URI if it has
//! one, as `[application/pdf resource file:///a.pdf]`; so is a block the
//! SDK does not know or cannot read, rather than failing the result), or
//! the structured content as JSON if there is no block. A result the
//! server marks `isError`, and a request the server refuses or cannot
//! answer, are error results ([`CallError::Failed`]).
//!
//! A call waits for the server's answer as long as the server runs: one
//! that never answers, answers under another id, or answers with a line
//! over 16 MiB (which is passed over, as the SDK does) leaves the call
//! waiting. Give the set a [timeout](ToolSet::with_timeout): a call it
//! drops, or that the executor cancels, is cancelled on the server too
//! (`notifications/cancelled`). An answer under the call's id that is not
//! JSON-RPC as the spec has it (no `jsonrpc`, an error without its
//! `message`), which the SDK would drop, is still the call's answer, read
//! as well as it can be: its result, or an error result with what the
//! server said.
//!
//! The server's own requests (`ping`) are answered; at most 64 of them may
//! wait for their answers to be written (a server that does not read its
//! stdin), and one past those is passed over, so that a server sending
//! them without end cannot fill the agent's memory.
//!
//! The server runs in its own process group. When the last handle to it is
//! dropped (the [`McpServer`] and every tool it listed), or when the server
//! exits, that whole group is killed (`SIGKILL`), so a server's own
//! children do not outlive it, nor keep its stdout open: a call pending
//! when the server exits, and every later call, fails
//! ([`CallError::Failed`]) rather than waiting.
//! Its stderr is the agent's.

use std::collections::HashSet;
use std::fmt;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, CustomResult, ListToolsRequest,
    PaginatedRequestParams, RequestId, ServerResult,
};
use rmcp::service::{ClientCacheConfig, Peer, PeerRequestOptions, RoleClient, RunningService};
use rmcp::{ServiceError, ServiceExt};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::CallError;
use super::set::{RawTool, ToolSet};
use super::typed::not_an_object;
use crate::llm::ToolDefinition;

mod names;
mod schema;
mod stdio;

/// How long [`McpServer::spawn`] waits for the handshake, and
/// [`McpServer::tools`] for the list.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why an MCP server could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The process did not start.
    #[error("cannot start the MCP server `{program}`: {source}")]
    Spawn {
        /// The command's program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// The server did not complete the `initialize` handshake (it exited,
    /// or wrote something that is not MCP).
    #[error("the MCP server `{program}` did not complete the handshake: {source}")]
    Handshake {
        /// The command's program.
        program: String,
        /// Why, as the MCP client says it.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The server did not list its tools.
    #[error("the MCP server `{program}` did not list its tools: {source}")]
    ListTools {
        /// The command's program.
        program: String,
        /// Why, as the MCP client says it.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The server did not answer the handshake or the list in time.
    #[error("the MCP server `{program}` did not answer within {after:?}")]
    TimedOut {
        /// The command's program.
        program: String,
        /// How long it was given.
        after: Duration,
    },
}

/// A connection to an MCP server running as a child process. Cloning it
/// shares the connection.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    service: RunningService<RoleClient, ()>,
    program: String,
    timeout: Duration,
    /// Declared last: the group is killed once the client has stopped.
    group: Group,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer").field("program", &self.inner.program).field("pid", &self.pid()).finish()
    }
}

impl McpServer {
    /// Starts `command` as an MCP server over stdio (its stdin and stdout
    /// are the protocol's, its stderr the agent's), in its own process
    /// group, and completes the `initialize` handshake, waiting at most
    /// [`DEFAULT_TIMEOUT`].
    ///
    /// # Errors
    /// [`McpError::Spawn`], [`McpError::Handshake`] or
    /// [`McpError::TimedOut`]; the process is killed.
    pub async fn spawn(command: tokio::process::Command) -> Result<McpServer, McpError> {
        McpServer::spawn_with_timeout(command, DEFAULT_TIMEOUT).await
    }

    /// [`spawn`](Self::spawn), waiting at most `timeout` for the handshake
    /// and, later, for [`tools`](Self::tools).
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn).
    pub async fn spawn_with_timeout(
        mut command: tokio::process::Command,
        timeout: Duration,
    ) -> Result<McpServer, McpError> {
        let program = command.as_std().get_program().to_string_lossy().into_owned();
        #[cfg(unix)]
        command.process_group(0);
        command.kill_on_drop(true).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let spawn_error = |source| McpError::Spawn { program: program.clone(), source };
        let mut child = command.spawn().map_err(spawn_error)?;
        // Made before the handshake, so that a failed one kills the group.
        let group = Group::new(child.id());
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(spawn_error(std::io::Error::other("the server's stdio is not piped")));
        };
        // The connection ends when the server's stdout does. A child of the
        // server that inherited it would hold it open after the server
        // exits, and every call would wait for an answer that never comes:
        // so the server's exit ends its group too. The wait also reaps it.
        let (pid, running) = (child.id(), Arc::clone(&group.pid));
        tokio::spawn(async move {
            let status = child.wait().await;
            tracing::debug!(?pid, ?status, "MCP server exited");
            if let Some(pid) = pid {
                kill_group(pid);
            }
            // Reaped, its pid may soon be another process's: not to be
            // shown, nor killed as a group, any more.
            running.store(0, Ordering::Release);
        });
        let service = match tokio::time::timeout(timeout, ().serve(stdio::Stdio::new(stdout, stdin))).await {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => return Err(McpError::Handshake { program, source: Box::new(error) }),
            Err(_) => return Err(McpError::TimedOut { program, after: timeout }),
        };
        // The SDK keeps a list as long as the server's `ttlMs` says, and
        // gives it back without asking, or after failing to: a server that
        // has exited would still list its tools. `tools` asks every time.
        service.peer().set_response_cache_config(ClientCacheConfig::disabled()).await;
        tracing::debug!(program = %program, pid = ?group.pid(), "MCP server started");
        Ok(McpServer { inner: Arc::new(Inner { service, program, timeout, group }) })
    }

    /// The server's process id, while it runs: `None` once it has exited
    /// (and been reaped, after which the id may be another process's).
    #[must_use]
    pub fn pid(&self) -> Option<u32> {
        self.inner.group.pid()
    }

    /// Lists the server's tools, as a set to [`extend`](ToolSet::extend)
    /// another with: each tool's definition is the server's name,
    /// description and input schema (without its `$schema` key, with
    /// `"type": "object"` and `properties` if it had none), and a call is
    /// a `tools/call` request to the server. The list is asked of the
    /// server each time, even if it said its last may be kept a while
    /// (`ttlMs`): a server that has exited fails it.
    ///
    /// A tool whose name the model providers would refuse (not 1 to 64 of
    /// `A-Z a-z 0-9 _ -`, what both take; the MCP spec allows `.` too,
    /// which both refuse, and up to 128, which OpenAI refuses) is given
    /// one they take, derived from it: each other character made `_`
    /// (`files.read` is `files_read`), and, if that is over 64 long or
    /// another of the server's tools' names, cut and ended with `_` and 8
    /// hex digits of a hash of the server's name. A call under that name
    /// calls the server's tool by its own name, and the description ends
    /// with the server's name. The names depend only on the names the
    /// server lists (not their order): the same server gives the same
    /// names after a restart. A name the server lists as the providers
    /// take it is kept: if `a_b` and `a.b` are both listed, `a.b` is the
    /// one given another name. A name given this way that is a tool's
    /// already in the set being [`extend`](ToolSet::extend)ed is left out
    /// there, as any of the server's tools named as one already in it.
    ///
    /// A tool the providers would refuse whatever its name is left out,
    /// with a warning, rather than failing every request that lists it:
    /// one whose input schema is not an object's as the spec has it (its
    /// `type` not `"object"`, its `properties` not an object of schemas,
    /// its `required` not a list of names; the same of each schema within
    /// it, however deep, whose `type` must also be a type's name; an empty
    /// list as `properties`, as PHP writes an empty object, is taken as
    /// one), or whose name has
    /// none of the providers' characters (empty, `...`). So is an
    /// entry of the list that is not a tool as the spec has it (no input
    /// schema, a schema that is not a JSON object, no name), rather than
    /// the whole list failing with it.
    ///
    /// # Errors
    /// [`McpError::ListTools`] or [`McpError::TimedOut`]. A list whose
    /// pages would never end (a cursor the server gave before), or over
    /// 16 MiB of JSON in all, is a [`McpError::ListTools`].
    pub async fn tools(&self) -> Result<ToolSet, McpError> {
        let program = &self.inner.program;
        let listed = match tokio::time::timeout(self.inner.timeout, list_all_tools(self.inner.service.peer())).await {
            Ok(Ok(listed)) => listed,
            Ok(Err(source)) => return Err(McpError::ListTools { program: program.clone(), source }),
            Err(_) => return Err(McpError::TimedOut { program: program.clone(), after: self.inner.timeout }),
        };
        // Of every name listed, a tool left out for its schema too: a
        // tool's name does not change with another's schema.
        let given = names::provider_names(listed.iter().map(|tool| tool.name.as_ref()));
        let mut set = ToolSet::new();
        for tool in listed {
            // One such tool in a request fails the whole request, every
            // time: better the model goes without it.
            let (Some(parameters), Some(name)) =
                (schema::input_schema(&tool.input_schema), given.get(tool.name.as_ref()).cloned())
            else {
                tracing::warn!(program = %program, tool = %tool.name, "an MCP tool with a name or an input schema no provider takes is left out");
                continue;
            };
            if name != tool.name {
                tracing::debug!(program = %program, tool = %tool.name, given = %name, "an MCP tool is given a name the providers take");
            }
            let description = names::description(tool.description.as_deref().unwrap_or_default(), &tool.name, &name);
            let definition = ToolDefinition::new(name, description, parameters);
            set.add_raw(Arc::new(McpTool {
                definition,
                name: tool.name.into_owned(),
                server: Arc::clone(&self.inner),
            }));
        }
        Ok(set)
    }
}

/// The most JSON a server's list of tools may take, its tools and
/// cursors together. A server whose pages never end, each with a cursor
/// it never gave before, would otherwise have the list grow as fast as it
/// can send until the timeout: gigabytes.
const LIST_BUDGET: usize = 16 << 20;

/// Every page of the server's tools. A cursor the server gave before ends
/// the list with an error: it would list the same pages again, forever,
/// so the list would grow as fast as the server answers until the
/// timeout. So does a list over [`LIST_BUDGET`].
async fn list_all_tools(
    peer: &Peer<RoleClient>,
) -> Result<Vec<rmcp::model::Tool>, Box<dyn std::error::Error + Send + Sync>> {
    let (mut tools, mut cursors, mut cursor, mut size) = (Vec::new(), HashSet::new(), None, 0usize);
    loop {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let (page, next_cursor) = match peer.list_tools(Some(params.clone())).await {
            Ok(page) => (page.tools, page.next_cursor),
            // One tool the SDK cannot read (no input schema, say) makes
            // the whole page unreadable to it: the page is asked for again
            // and read tool by tool, so that one tool is left out, not all.
            Err(ServiceError::UnexpectedResponse) => list_page_leniently(peer, params).await?,
            Err(error) => return Err(error.into()),
        };
        size = page.iter().map(json_len).chain(next_cursor.as_ref().map(String::len)).fold(size, usize::saturating_add);
        if size > LIST_BUDGET {
            return Err(format!("its list is over {} MiB", LIST_BUDGET >> 20).into());
        }
        tools.extend(page);
        match next_cursor {
            None => return Ok(tools),
            Some(next) if !cursors.insert(next.clone()) => {
                return Err("the server gave a cursor it had given before, so its pages would never end".into());
            }
            next => cursor = next,
        }
    }
}

/// How long `value` is as JSON, counted rather than written out.
fn json_len<T: serde::Serialize>(value: &T) -> usize {
    /// Counts what is written to it.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(bytes.len());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter fails only if the value cannot be JSON: it was.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// One page of the server's tools and the next page's cursor, read from
/// the page's JSON one tool at a time, and of each tool only what the set
/// uses (its name, description and input schema: a malformed annotation
/// or output schema does not matter here): a tool without those (no name,
/// no input schema, a schema that is not a JSON object) is left out, with
/// a warning. The request is cancelled on the server if dropped (the
/// list timed out).
async fn list_page_leniently(
    peer: &Peer<RoleClient>,
    params: PaginatedRequestParams,
) -> Result<(Vec<rmcp::model::Tool>, Option<String>), Box<dyn std::error::Error + Send + Sync>> {
    let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
    let page = match send_cancel_on_drop(peer, request).await? {
        ServerResult::ListToolsResult(page) => return Ok((page.tools, page.next_cursor)),
        ServerResult::CustomResult(CustomResult(page)) => page,
        _ => return Err(ServiceError::UnexpectedResponse.into()),
    };
    let Some(listed) = page.get("tools").and_then(Value::as_array) else {
        return Err("the server's answer has no list of tools".into());
    };
    let mut tools = Vec::with_capacity(listed.len());
    for tool in listed {
        match Listed::deserialize(tool) {
            Ok(Listed { name, description, input_schema }) => {
                tools.push(rmcp::model::Tool::new_with_raw(name, description.map(Into::into), input_schema));
            }
            Err(error) => {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                tracing::warn!(tool = %name, %error, "an MCP tool that is not one as the spec has it is left out");
            }
        }
    }
    let next_cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
    Ok((tools, next_cursor))
}

/// What the set reads of a tool the SDK could not read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    name: String,
    #[serde(default)]
    description: Option<String>,
    input_schema: Map<String, Value>,
}

/// One tool of a server.
struct McpTool {
    /// Under the name the model is given (see [`names`]).
    definition: ToolDefinition,
    /// The server's name for it, which calls it.
    name: String,
    server: Arc<Inner>,
}

impl RawTool for McpTool {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn call(self: Arc<Self>, arguments: Value) -> BoxFuture<'static, Result<String, CallError>> {
        Box::pin(async move {
            let tool = self.definition.name.clone();
            let Value::Object(arguments) = arguments else {
                return Err(CallError::InvalidArguments { tool, reason: not_an_object(&arguments) });
            };
            let params = CallToolRequestParams::new(self.name.clone()).with_arguments(arguments);
            let (text, is_error) = match call_tool(self.server.service.peer(), params).await {
                Ok(result) => result,
                Err(error) => return Err(CallError::Failed { tool, message: service_error(&error) }),
            };
            if is_error { Err(CallError::Failed { tool, message: text }) } else { Ok(text) }
        })
    }
}

/// Sends a `tools/call` request and reads its result: the text the model
/// reads, and whether the server marked it `isError`.
///
/// A result the SDK cannot read (a content block of a kind it does not
/// know, or missing a field it wants) is read from its JSON, as
/// [`result_text`] reads every block: the tool ran, and a result the
/// model reads as a failure might have it run again. The request is sent
/// rather than through `Peer::call_tool`, which gives no such result back,
/// and is cancelled on the server if dropped, as `call_tool` does.
async fn call_tool(peer: &Peer<RoleClient>, params: CallToolRequestParams) -> Result<(String, bool), ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    match send_cancel_on_drop(peer, request).await? {
        ServerResult::CallToolResult(result) => {
            Ok((result_text(&result.content, result.structured_content.as_ref()), result.is_error == Some(true)))
        }
        // A tool's result, by its fields: blocks in a list, or no block.
        ServerResult::CustomResult(CustomResult(Value::Object(result)))
            if ["content", "structuredContent", "isError"].iter().any(|key| result.contains_key(*key)) =>
        {
            let blocks = match result.get("content") {
                Some(Value::Array(blocks)) => blocks.as_slice(),
                None => &[],
                Some(_) => return Err(ServiceError::UnexpectedResponse),
            };
            let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
            Ok((result_text(blocks, result.get("structuredContent")), is_error))
        }
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// Sends `request` and waits for its answer; if dropped first (a timeout),
/// tells the server the request was abandoned, which `Peer::send_request`
/// does not: the server would go on with it, and the SDK would keep
/// waiting for its answer.
async fn send_cancel_on_drop(peer: &Peer<RoleClient>, request: ClientRequest) -> Result<ServerResult, ServiceError> {
    let handle = peer.send_request_with_option(request, PeerRequestOptions::no_options()).await?;
    let mut guard = CancelOnDrop { peer: peer.clone(), id: Some(handle.id.clone()) };
    let answer = handle.await_response().await;
    guard.id = None;
    answer
}

/// Tells the server a request was abandoned (`notifications/cancelled`)
/// if dropped while `id` is set: the call was dropped before its answer.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let peer = self.peer.clone();
        let cancelled = CancelledNotificationParam::new(Some(id), Some("the call was dropped".to_owned()));
        runtime.spawn(async move {
            if let Err(error) = peer.notify_cancelled(cancelled).await {
                tracing::debug!(%error, "cannot tell the MCP server a call was cancelled");
            }
        });
    }
}

/// What the model reads of a request the server refused or could not
/// answer.
fn service_error(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(data) => format!("the MCP server refused the call: {}", data.message),
        // It answered, but with something else than a tool's result (the
        // model would otherwise read that it did not answer, and wait).
        ServiceError::UnexpectedResponse => {
            "the MCP server answered with something that is not a tool's result".to_owned()
        }
        other => format!("the MCP server did not answer: {other}"),
    }
}

/// The text of a result's content blocks, one per line: a text block's
/// text, an embedded text resource's text; another block is named, with
/// its URI if it has one (`[image/png image]`,
/// `[application/pdf resource file:///a.pdf]`). Read from the blocks' JSON
/// (the MCP wire shape), which stays put while the SDK's types change.
fn result_text<B: serde::Serialize>(blocks: &[B], structured: Option<&Value>) -> String {
    if blocks.is_empty() {
        return structured.map(Value::to_string).unwrap_or_default();
    }
    let line = |block: &B| {
        let block = serde_json::to_value(block).unwrap_or_default();
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("unknown");
        // An embedded resource's text, MIME type and URI are one level in.
        let inner = block.get("resource").filter(|r| r.is_object()).unwrap_or(&block);
        if let Some(text) = inner.get("text").and_then(Value::as_str) {
            return text.to_owned();
        }
        let mime = inner.get("mimeType").and_then(Value::as_str).map(|m| format!("{m} ")).unwrap_or_default();
        let uri = inner.get("uri").and_then(Value::as_str).map(|u| format!(" {u}")).unwrap_or_default();
        format!("[{mime}{kind}{uri}]")
    };
    blocks.iter().map(line).collect::<Vec<_>>().join("\n")
}

/// The server's process group (its id is the server's pid), killed whole
/// when dropped unless the server has been reaped.
struct Group {
    /// The server's pid; 0 if it has none, or once it has been reaped.
    pid: Arc<AtomicU32>,
}

impl Group {
    fn new(pid: Option<u32>) -> Group {
        Group { pid: Arc::new(AtomicU32::new(pid.unwrap_or(0))) }
    }

    /// The server's pid, until it has been reaped.
    fn pid(&self) -> Option<u32> {
        Some(self.pid.load(Ordering::Acquire)).filter(|&pid| pid != 0)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            kill_group(pid);
        }
    }
}

/// Kills the process group `pid` (`SIGKILL`); one already gone is no error.
fn kill_group(pid: u32) {
    // No server is init, and group 1 would be signalled as `kill(-1)`:
    // every process the agent may signal.
    if pid <= 1 {
        return;
    }
    #[cfg(not(unix))]
    let _ = pid;
    #[cfg(unix)]
    if let Some(pid) = rustix::process::Pid::from_raw(pid.cast_signed()) {
        // ESRCH: the group is gone already.
        if let Err(error) = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL)
            && error != rustix::io::Errno::SRCH
        {
            tracing::warn!(pid = pid.as_raw_nonzero().get(), %error, "cannot kill the MCP server's process group");
        }
    }
}
