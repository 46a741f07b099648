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
//! The server runs in its own process group, with `AGENT_FSM_MCP_SERVER`
//! set in its environment to a value of its own. When the last handle to
//! it is dropped (the [`McpServer`] and every tool it listed), or when the
//! server exits, that whole group is killed (`SIGKILL`), and on Linux so
//! is every descendant that left it (`setsid`, a daemon's double fork):
//! found by its parent, or, its parent gone, by that value in its
//! environment, each is stopped as soon as found, so that the search
//! catches what it starts, and all are killed once none is left to find.
//! So a server's own processes do not outlive it, nor keep its stdout
//! open: a call pending when the server exits, and every later call, fails
//! ([`CallError::Failed`]) rather than waiting. (Beyond reach: a
//! descendant that both loses its parent and clears that variable, and, on
//! another Unix, one that left the group.) Its stderr is the agent's.

use std::fmt;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, CustomResult, ServerResult};
use rmcp::service::{ClientCacheConfig, Peer, RoleClient, RunningService};
use rmcp::{ServiceError, ServiceExt};
use serde_json::Value;

use super::error::CallError;
use super::set::{RawTool, ToolSet};
use super::typed::not_an_object;
use crate::llm::ToolDefinition;

mod list;
mod names;
mod reap;
mod request;
mod schema;
mod stdio;

use list::{ListError, list_all_tools};
pub use list::{MAX_TOOL_BYTES, MAX_TOOLS};
use reap::Group;
use request::send_cancel_on_drop;

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
    /// The server listed more than [`MAX_TOOLS`] tools.
    #[error("the MCP server `{program}` lists more than {max} tools")]
    TooManyTools {
        /// The command's program.
        program: String,
        /// The most it may list, [`MAX_TOOLS`].
        max: usize,
    },
    /// One of the server's tools takes more than [`MAX_TOOL_BYTES`] of
    /// JSON (its name, description and input schema), which every request
    /// to the model would carry.
    #[error(
        "the MCP server `{program}` lists the tool `{tool}`, whose name, description and input schema take {size} bytes, over {max}"
    )]
    ToolTooLarge {
        /// The command's program.
        program: String,
        /// The tool's name (its first 128 characters).
        tool: String,
        /// How many bytes of JSON it takes.
        size: usize,
        /// The most it may take, [`MAX_TOOL_BYTES`].
        max: usize,
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
        let mark = reap::new_mark();
        command.env(reap::MARK, &*mark);
        command.kill_on_drop(true).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let spawn_error = |source| McpError::Spawn { program: program.clone(), source };
        let mut child = command.spawn().map_err(spawn_error)?;
        // Made before the handshake, so that a failed one kills the group.
        let group = Group::new(child.id(), Arc::clone(&mark));
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(spawn_error(std::io::Error::other("the server's stdio is not piped")));
        };
        // The connection ends when the server's stdout does. A child of the
        // server that inherited it would hold it open after the server
        // exits, and every call would wait for an answer that never comes:
        // so the server's exit ends its group and descendants too. The wait
        // also reaps it.
        let (pid, running) = (child.id(), group.pid_cell());
        tokio::spawn(async move {
            let status = child.wait().await;
            tracing::debug!(?pid, ?status, "MCP server exited");
            // Reaped: its own pid is not to be walked from, but what it
            // started is found by its mark.
            reap::kill_all(None, &mark);
            if let Some(pid) = pid {
                reap::kill_group(pid);
            }
            // Reaped, its pid may soon be another process's: not to be
            // shown, nor killed as a group, any more.
            running.store(0, std::sync::atomic::Ordering::Release);
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
    /// 16 MiB of JSON in all, is a [`McpError::ListTools`]; one of more
    /// than [`MAX_TOOLS`] tools, a [`McpError::TooManyTools`]; one with a
    /// tool whose name, description and input schema take more than
    /// [`MAX_TOOL_BYTES`] of JSON, a [`McpError::ToolTooLarge`] (both
    /// checked page by page, as the pages come).
    pub async fn tools(&self) -> Result<ToolSet, McpError> {
        let program = &self.inner.program;
        let listed = match tokio::time::timeout(self.inner.timeout, list_all_tools(self.inner.service.peer())).await {
            Ok(Ok(listed)) => listed,
            Ok(Err(error)) => {
                let program = program.clone();
                return Err(match error {
                    ListError::TooManyTools => McpError::TooManyTools { program, max: MAX_TOOLS },
                    ListError::ToolTooLarge { tool, size } => {
                        McpError::ToolTooLarge { program, tool, size, max: MAX_TOOL_BYTES }
                    }
                    ListError::Failed(source) => McpError::ListTools { program, source },
                });
            }
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
