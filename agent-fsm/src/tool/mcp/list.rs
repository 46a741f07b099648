//! The server's list of tools, every page of it, within bounds a failing
//! or hostile server cannot push past: [`MAX_TOOLS`] tools,
//! [`MAX_TOOL_BYTES`] of JSON for one tool's name, description and input
//! schema (what every request to the model carries), 16 MiB of JSON in
//! all, and pages that end. A page the SDK cannot read is read tool by
//! tool, so that one malformed tool is left out rather than the list.

use std::collections::HashSet;

use rmcp::ServiceError;
use rmcp::model::{ClientRequest, CustomResult, ListToolsRequest, PaginatedRequestParams, ServerResult};
use rmcp::service::{Peer, RoleClient};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::request::send_cancel_on_drop;

/// The most tools a server may list: its list fails with
/// [`McpError::TooManyTools`](super::McpError::TooManyTools) past them.
/// OpenAI takes at most 128 tools in a request; a server listing
/// thousands is failing or hostile, and each of its tools would be sent
/// to the model on every request.
pub const MAX_TOOLS: usize = 1_024;

/// The most bytes of JSON one tool's name, description and input schema
/// may take together (256 KiB, some 60,000 tokens, which every request to
/// the model would carry): a tool past it fails the list with
/// [`McpError::ToolTooLarge`](super::McpError::ToolTooLarge).
pub const MAX_TOOL_BYTES: usize = 256 << 10;

/// Why the list failed.
#[derive(Debug)]
pub(super) enum ListError {
    /// More than [`MAX_TOOLS`] tools.
    TooManyTools,
    /// A tool over [`MAX_TOOL_BYTES`]: its name (cut to 128 characters)
    /// and size.
    ToolTooLarge { tool: String, size: usize },
    /// Any other failure, as the MCP client or the checks here say it.
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

impl From<ServiceError> for ListError {
    fn from(error: ServiceError) -> Self {
        ListError::Failed(error.into())
    }
}

impl From<&str> for ListError {
    fn from(error: &str) -> Self {
        ListError::Failed(error.into())
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
/// timeout. So does a list over [`LIST_BUDGET`], [`MAX_TOOLS`] or, in
/// one of its tools, [`MAX_TOOL_BYTES`].
pub(super) async fn list_all_tools(peer: &Peer<RoleClient>) -> Result<Vec<rmcp::model::Tool>, ListError> {
    let (mut tools, mut cursors, mut cursor, mut size) = (Vec::new(), HashSet::new(), None, 0usize);
    loop {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let (page, next_cursor) = match peer.list_tools(Some(params.clone())).await {
            Ok(page) => (page.tools, page.next_cursor),
            // One tool the SDK cannot read (no input schema, say) makes
            // the whole page unreadable to it: the page is asked for again
            // and read tool by tool, so that one tool is left out, not all.
            Err(ServiceError::UnexpectedResponse) => {
                list_page_leniently(peer, params).await.map_err(ListError::Failed)?
            }
            Err(error) => return Err(error.into()),
        };
        if tools.len().saturating_add(page.len()) > MAX_TOOLS {
            return Err(ListError::TooManyTools);
        }
        if let Some((tool, size)) =
            page.iter().map(|tool| (tool, tool_len(tool))).find(|(_, size)| *size > MAX_TOOL_BYTES)
        {
            return Err(ListError::ToolTooLarge { tool: tool.name.chars().take(128).collect(), size });
        }
        size = page.iter().map(json_len).chain(next_cursor.as_ref().map(String::len)).fold(size, usize::saturating_add);
        if size > LIST_BUDGET {
            return Err(ListError::Failed(format!("its list is over {} MiB", LIST_BUDGET >> 20).into()));
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

/// How much of a request to the model `tool` takes: its name, description
/// and input schema as JSON.
fn tool_len(tool: &rmcp::model::Tool) -> usize {
    json_len(&tool.name).saturating_add(json_len(&tool.description)).saturating_add(json_len(&tool.input_schema))
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
