//! Typed tools: a tool is a Rust type whose arguments' JSON schema is
//! derived from it, and a [`ToolSet`] turns a model's tool calls into
//! results.
//!
//! ```
//! use agent_fsm::llm::{Message, Request, ToolCall};
//! use agent_fsm::tool::{Tool, ToolSet};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! /// Adds numbers.
//! struct Add;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     /// The numbers to add.
//!     numbers: Vec<i64>,
//!     /// Added once more, if given.
//!     bonus: Option<i64>,
//! }
//!
//! impl Tool for Add {
//!     const NAME: &'static str = "add";
//!     type Args = AddArgs;
//!     type Output = i64;
//!     type Error = String;
//!
//!     fn description(&self) -> String {
//!         "Adds numbers".to_owned()
//!     }
//!
//!     async fn call(&self, args: AddArgs) -> Result<i64, String> {
//!         let sum = args.numbers.iter().try_fold(0i64, |sum, n| sum.checked_add(*n));
//!         sum.and_then(|s| s.checked_add(args.bonus.unwrap_or(0))).ok_or_else(|| "overflow".to_owned())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let tools = ToolSet::new().with(Add);
//! let request = Request::new("gpt-4o-mini").message(Message::user("1 + 2 + 3?"));
//! let request = tools.definitions().into_iter().fold(request, Request::tool);
//! assert_eq!(request.tools[0].parameters["required"], json!(["numbers"]));
//!
//! // The model's reply calls the tool twice, once with bad arguments.
//! let calls = [
//!     ToolCall { id: "call_1".into(), name: "add".into(), arguments: json!({"numbers": [1, 2, 3]}) },
//!     ToolCall { id: "call_2".into(), name: "add".into(), arguments: json!({"numbers": "1 2 3"}) },
//! ];
//! let results = tools.call_all(&calls).await;
//! assert_eq!(results[0].content, "6");
//! assert!(results[1].is_error);
//! assert_eq!(
//!     results[1].content,
//!     "invalid arguments for `add`: at `numbers`: invalid type: string \"1 2 3\", expected a sequence"
//! );
//! // Back to the model, in call order.
//! let request = results.into_iter().fold(request, Request::message);
//! assert_eq!(request.messages.len(), 3);
//! # }
//! ```
//!
//! | item | feature | what it is |
//! | --- | --- | --- |
//! | [`Tool`], [`schema_for`] | `tool` | a tool as a type: name, description, typed arguments, their schema |
//! | [`ToolSet`], [`RawTool`] | `tool` | the tools a model may call, by name; their calls as futures or keyed tasks |
//! | [`ToolRound`] | `tool` | one reply's results, collected as tasks end, handed back in call order |
//! | [`CallError`] | `tool` | why a call failed, written for the model |
//! | [`McpServer`](mcp::McpServer) | `mcp` | the tools of a Model Context Protocol server, beside native ones |
//! | [`workspace_tools`], [`ReadFile`], [`WriteFile`], [`EditFile`], [`ListFiles`], [`RunCommand`] | `tool` and `tools` | the confined workspace tools of [`crate::tools`] as typed tools |
//!
//! # A call's life
//! The model sees each tool's [`ToolDefinition`](crate::llm::ToolDefinition)
//! ([`ToolSet::definitions`] in the [`Request`](crate::llm::Request)),
//! and answers with [`ToolCall`](crate::llm::ToolCall)s. Each call runs as
//! its own future; a machine starts one keyed task per call with
//! [`ToolSet::spawn_calls`] (the key is the call's id, so
//! [`cancel_task`](crate::runtime::EffectContext::cancel_task) stops one)
//! and keeps a [`ToolRound`] in its state, which orders the results as
//! the model made the calls, whatever order they end in.
//!
//! A call that goes wrong is an error result the model reads, never a
//! panic of the agent:
//!
//! | what happened | the model reads |
//! | --- | --- |
//! | a tool the set does not have | ``unknown tool `grep`; the tools are: read_file, search`` |
//! | arguments that are not an object, miss a field, have a wrong type | ``invalid arguments for `read_file`: missing field `path` ``, ``invalid arguments for `search`: at `scope.globs`: invalid type: string "*.rs", expected a sequence`` |
//! | the tool returned `Err(e)` | ``read_file` failed: {e}`` |
//! | the tool panicked (caught with `catch_unwind`) | ``read_file` panicked: {message}`` |
//! | the call outlived [`ToolSet::with_timeout`] (dropped) | ``read_file` timed out after 30s`` |
//! | the executor timed out or cancelled the task | ``read_file` timed out``, ``read_file` was cancelled before it ended`` |
//!
//! # Schemas
//! [`schema_for`] derives an object schema with `properties` and `required`
//! (an `Option` field is not required), doc comments as descriptions, no
//! `$schema` key, and nested types inlined rather than referenced through
//! `$defs` (several OpenAI-compatible servers refuse `$ref`); only a
//! recursive type keeps its `$defs`. The derive is schemars'
//! (`#[derive(JsonSchema)]`, re-exported here as [`schemars`]), and its
//! attributes (`#[schemars(description = ...)]`, serde's `rename`) apply.
//!
//! # In a machine
//! The effects start the calls as tasks, and the table collects them:
//!
//! ```
//! # use agent_fsm::llm::{ToolCall, ToolResult};
//! # use agent_fsm::runtime::EffectContext;
//! # use agent_fsm::tool::ToolSet;
//! # enum Event { ToolDone(ToolResult) }
//! # enum Action { RunTools(Vec<ToolCall>) }
//! # fn perform<M: agent_fsm::StateMachine<Action = Action, Event = Event>>(tools: &ToolSet, action: Action, cx: &mut EffectContext<'_, M, ()>) {
//! match action {
//!     // One task per call, keyed by its id; each ends with `ToolDone`,
//!     // which the table records in the `ToolRound` it keeps.
//!     Action::RunTools(calls) => tools.spawn_calls(&calls, cx, Event::ToolDone),
//! }
//! # }
//! ```

mod error;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
mod round;
mod set;
mod typed;
#[cfg(feature = "tools")]
mod workspace;

pub use error::CallError;
pub use round::ToolRound;
pub use schemars;
#[cfg(any(feature = "otel", feature = "metrics"))]
pub(crate) use set::to_result;
pub use set::{RawTool, ToolSet};
pub use typed::{Tool, parse_arguments, schema_for};
#[cfg(feature = "tools")]
#[cfg_attr(docsrs, doc(cfg(feature = "tools")))]
pub use workspace::{
    EditFile, EditFileArgs, ListFiles, ListFilesArgs, ReadFile, ReadFileArgs, WriteFile, WriteFileArgs, workspace_tools,
};
#[cfg(all(feature = "tools", unix))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "tools", unix))))]
pub use workspace::{RunCommand, RunCommandArgs, workspace_tools_with};
