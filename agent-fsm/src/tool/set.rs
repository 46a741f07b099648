//! [`ToolSet`]: the tools a model may call, by name, and how its calls
//! become results: one future (or one keyed task of the executor) per call,
//! every failure an error result the model reads.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, join_all};
use serde_json::Value;

use super::error::CallError;
use super::typed::{Tool, Typed};
use crate::StateMachine;
use crate::llm::{ToolCall, ToolDefinition, ToolResult};
use crate::panics::panic_message;
use crate::runtime::work::deadline_in;
use crate::runtime::{EffectContext, EffectFailure};

/// A tool whose arguments are plain JSON: what a [`ToolSet`] holds. A
/// [`Tool`] becomes one when added; an MCP server's tools are others.
/// Implement it for a tool whose schema is only known at run time.
pub trait RawTool: Send + Sync + 'static {
    /// What the model reads about the tool. Read once, when the tool is
    /// added to a set.
    fn definition(&self) -> ToolDefinition;

    /// Runs the tool on the `arguments` the model wrote; `Ok` is the text
    /// the model reads. A panic or a timeout is caught by the set.
    fn call(self: Arc<Self>, arguments: Value) -> BoxFuture<'static, Result<String, CallError>>;
}

/// One tool of a set, with its definition read once.
#[derive(Clone)]
struct Entry {
    definition: ToolDefinition,
    tool: Arc<dyn RawTool>,
}

/// The tools a model may call, by name: native [`Tool`]s and
/// [`RawTool`]s (an MCP server's) side by side.
///
/// - [`definitions`](Self::definitions) is what a
///   [`Request`](crate::llm::Request) carries, in the order the tools were
///   added.
/// - [`call`](Self::call) turns one of the model's calls into a future of
///   its [`ToolResult`]; [`call_all`](Self::call_all) runs a reply's calls
///   concurrently and returns their results in call order;
///   [`spawn_calls`](Self::spawn_calls) starts one keyed task per call on
///   the executor, for a machine to collect with a
///   [`ToolRound`](super::ToolRound).
///
/// Whatever goes wrong becomes an error result the model can read, never a
/// panic: an unknown tool, arguments that are not a JSON object or do not
/// match the tool's type, the tool's own error, a panic inside the tool
/// (caught), or a call that outlives the set's
/// [timeout](Self::with_timeout) (dropped).
///
/// Cloning a set is cheap: the tools are shared.
#[derive(Clone, Default)]
pub struct ToolSet {
    entries: Vec<Entry>,
    by_name: BTreeMap<String, usize>,
    timeout: Option<Duration>,
}

impl fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSet")
            .field("tools", &self.names().collect::<Vec<_>>())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl ToolSet {
    /// A set with no tool and no timeout.
    #[must_use]
    pub fn new() -> Self {
        ToolSet::default()
    }

    /// Adds `tool` (see [`add`](Self::add)).
    #[must_use]
    pub fn with<T: Tool>(mut self, tool: T) -> Self {
        self.add(tool);
        self
    }

    /// Adds `tool`, replacing a tool of the same name; returns the
    /// replaced tool's definition.
    pub fn add<T: Tool>(&mut self, tool: T) -> Option<ToolDefinition> {
        self.add_raw(Arc::new(Typed(tool)))
    }

    /// Adds a tool whose arguments are plain JSON, replacing a tool of the
    /// same name (it keeps the replaced tool's place); returns the replaced
    /// tool's definition.
    pub fn add_raw(&mut self, tool: Arc<dyn RawTool>) -> Option<ToolDefinition> {
        self.insert(Entry { definition: tool.definition(), tool })
    }

    /// Adds `entry` under the name of its definition as read already,
    /// replacing a tool of the same name in its place.
    fn insert(&mut self, entry: Entry) -> Option<ToolDefinition> {
        match self.by_name.get(&entry.definition.name) {
            Some(&at) => {
                tracing::warn!(tool = %entry.definition.name, "a tool of the same name is replaced");
                Some(std::mem::replace(&mut self.entries[at], entry).definition)
            }
            None => {
                self.by_name.insert(entry.definition.name.clone(), self.entries.len());
                self.entries.push(entry);
                None
            }
        }
    }

    /// Adds the tools of `other` (an MCP server's, say) whose names this
    /// set does not have yet. A tool of `other` named as one already here
    /// is left out, with a warning: a server cannot take the place of a
    /// tool the agent trusts by name (one an approval rule lets run
    /// unasked, such as `read_file`). To replace a tool, [`add_raw`](Self::add_raw)
    /// it. This set's timeout is kept. Each tool joins under the
    /// definition `other` read when it was added there, the one checked
    /// here: its [`RawTool::definition`] is not read again, so a tool whose
    /// definition changes meanwhile (one kept up to date from a server)
    /// cannot pass the check under one name and join under another.
    pub fn extend(&mut self, other: ToolSet) {
        for entry in other.entries {
            if self.by_name.contains_key(&entry.definition.name) {
                tracing::warn!(tool = %entry.definition.name, "a tool of a name already in the set is left out");
                continue;
            }
            self.insert(entry);
        }
    }

    /// Drops every call that has not ended after `timeout`: the call
    /// becomes a [`CallError::TimedOut`] result. A result is judged by
    /// when it came: one that comes at the timeout or later (from a tool
    /// that blocked its thread past it) has timed out too, whatever it
    /// says, as a task of the executor has. A timeout of 30 years or more
    /// is taken as none.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The definitions a [`Request`](crate::llm::Request) carries, in the
    /// order the tools were added.
    #[must_use]
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.entries.iter().map(|e| e.definition.clone()).collect()
    }

    /// The tools' names, in the order they were added.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.definition.name.as_str())
    }

    /// Whether the set has a tool named `name`.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// How many tools the set has.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the set has no tool.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Runs the tool `name` on `arguments`: the text the model reads, or
    /// why the call failed. The future owns what it needs.
    pub fn run(
        &self,
        name: &str,
        arguments: Value,
    ) -> impl Future<Output = Result<String, CallError>> + Send + 'static {
        let found = self.by_name.get(name).map(|&at| Arc::clone(&self.entries[at].tool));
        let known: Vec<String> = if found.is_none() { self.names().map(str::to_owned).collect() } else { Vec::new() };
        let (name, timeout) = (name.to_owned(), self.timeout);
        async move {
            let Some(tool) = found else {
                return Err(CallError::UnknownTool { name, known });
            };
            // A timeout of 30 years or more never comes (see the executor's
            // timers), and a deadline that far would overflow tokio's clock.
            let deadline = timeout.and_then(|after| Some((after, deadline_in(after)?)));
            let tool_name = name.clone();
            // The tool's future is made inside the caught one, so that a
            // `RawTool::call` that panics before returning it is caught
            // too; the timeout is inside as well, so that a tool that panics
            // as the timeout drops it is caught.
            let timed = async move {
                let run = async move { tool.call(arguments).await };
                let Some((after, deadline)) = deadline else {
                    return run.await;
                };
                match tokio::time::timeout_at(deadline, run).await {
                    // `timeout_at` polls the call before its clock, so a call
                    // that blocked its thread past the deadline and then
                    // returned would count as on time: its result is judged
                    // by when it came, as the executor judges its tasks (at
                    // the deadline is too late).
                    Ok(_) if tokio::time::Instant::now() >= deadline => {
                        Err(CallError::TimedOut { tool: tool_name, after: Some(after) })
                    }
                    Ok(result) => result,
                    Err(_) => Err(CallError::TimedOut { tool: tool_name, after: Some(after) }),
                }
            };
            AssertUnwindSafe(timed)
                .catch_unwind()
                .await
                .unwrap_or_else(|payload| Err(CallError::Panicked { tool: name, message: panic_message(&*payload) }))
        }
    }

    /// Runs one of the model's calls: its result, an error result if the
    /// call failed. The future owns what it needs.
    pub fn call(&self, call: &ToolCall) -> impl Future<Output = ToolResult> + Send + 'static {
        let run = self.run(&call.name, call.arguments.clone());
        // The `execute_tool` span and the tool metrics, if either is on:
        // they read the error itself, before it becomes the model's text.
        #[cfg(any(feature = "otel", feature = "metrics"))]
        let result = crate::telemetry::observe_tool(call, self.contains(&call.name), run);
        #[cfg(not(any(feature = "otel", feature = "metrics")))]
        let result = {
            let call_id = call.id.clone();
            run.map(move |outcome| to_result(outcome, call_id))
        };
        result
    }

    /// Runs a reply's calls concurrently; their results come in call
    /// order, whichever ends first.
    pub fn call_all(&self, calls: &[ToolCall]) -> impl Future<Output = Vec<ToolResult>> + Send + 'static {
        join_all(calls.iter().map(|call| self.call(call)).collect::<Vec<_>>())
    }

    /// Starts one task per call on the executor, keyed by the call's id
    /// ([`EffectContext::spawn_task`]); each delivers `to_event(result)`.
    ///
    /// Tasks end in any order: collect the results with a
    /// [`ToolRound`](super::ToolRound) made from the same calls, which puts
    /// them back in call order. A task the executor ends early still
    /// delivers one result, an error: [`CallError::TimedOut`] past the
    /// executor's task timeout, [`CallError::Cancelled`] on an interrupt, a
    /// shutdown or `cx.cancel_task(call_id)` (a panic is caught before it
    /// reaches the executor, as [`CallError::Panicked`]).
    pub fn spawn_calls<M, O, F>(&self, calls: &[ToolCall], cx: &mut EffectContext<'_, M, O>, to_event: F)
    where
        M: StateMachine,
        M::Event: Send + 'static,
        O: Clone + Send + fmt::Debug + 'static,
        F: Fn(ToolResult) -> M::Event + Clone + Send + 'static,
    {
        for call in calls {
            let (on_result, on_failure) = (to_event.clone(), to_event.clone());
            let run = self.call(call);
            let tool = call.name.clone();
            cx.spawn_task(
                call.id.clone(),
                async move {
                    let result = run.await;
                    on_result(result)
                },
                move |call_id, failure| on_failure(failure_error(tool, failure).into_result(call_id)),
            );
        }
    }
}

/// The result answering the call `call_id`, whose run ended with `outcome`.
pub(crate) fn to_result(outcome: Result<String, CallError>, call_id: String) -> ToolResult {
    match outcome {
        Ok(content) => ToolResult { call_id, content, is_error: false },
        Err(error) => {
            tracing::debug!(call_id = %call_id, error = %error, "tool call failed");
            error.into_result(call_id)
        }
    }
}

/// What the executor's ending of a tool's task tells the model.
fn failure_error(tool: String, failure: EffectFailure) -> CallError {
    match failure {
        EffectFailure::Panicked(message) => CallError::Panicked { tool, message },
        EffectFailure::TimedOut => CallError::TimedOut { tool, after: None },
        _ => CallError::Cancelled { tool },
    }
}
