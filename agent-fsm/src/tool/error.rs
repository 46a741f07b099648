//! Why a tool call did not succeed: [`CallError`], whose text is what the
//! model reads in the error result.

use std::time::Duration;

use crate::llm::ToolResult;

/// Why a tool call failed. Its `Display` is written for the model, which
/// reads it as the call's error result and may try again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The model called a tool the set does not have.
    #[error("unknown tool `{name}`; the tools are: {}", list(known))]
    UnknownTool {
        /// The name it called.
        name: String,
        /// The names it may call, in the set's order.
        known: Vec<String>,
    },
    /// The arguments are not what the tool's schema describes: not a JSON
    /// object, a missing field, a wrong type.
    #[error("invalid arguments for `{tool}`: {reason}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What is wrong, as serde says it (`missing field `path``).
        reason: String,
    },
    /// The tool ran and returned an error (for an MCP tool, the server's
    /// error result, or the connection's failure).
    #[error("`{tool}` failed: {message}")]
    Failed {
        /// The tool.
        tool: String,
        /// The tool's error.
        message: String,
    },
    /// The tool panicked.
    #[error("`{tool}` panicked: {message}")]
    Panicked {
        /// The tool.
        tool: String,
        /// The panic's message, if it was a string.
        message: String,
    },
    /// The tool outlived its timeout and was dropped.
    #[error("`{tool}` timed out{}", after.map(|d| format!(" after {d:?}")).unwrap_or_default())]
    TimedOut {
        /// The tool.
        tool: String,
        /// The timeout, when the set's own (the executor's task timeout
        /// does not say it).
        after: Option<Duration>,
    },
    /// The call was cancelled (an interrupt, a shutdown, or the effects
    /// cancelling its key) before it ended.
    #[error("`{tool}` was cancelled before it ended")]
    Cancelled {
        /// The tool.
        tool: String,
    },
}

impl CallError {
    /// The error result answering the call `call_id`.
    #[must_use]
    pub fn into_result(self, call_id: impl Into<String>) -> ToolResult {
        ToolResult { call_id: call_id.into(), content: self.to_string(), is_error: true }
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() { "none".to_owned() } else { names.join(", ") }
}
