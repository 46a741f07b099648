//! The scripted effects of the executor tests: an LLM that streams deltas
//! with small delays and tools that sleep, panic or hang, each counting
//! what it produced so that a test can check the machine received exactly
//! that.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_fsm::Named;
use agent_fsm::runtime::{EffectContext, EffectFailure, Effects, RetryPolicy};
use futures::StreamExt;

use super::{Action, Agent, Event};

/// One scripted LLM reply: text deltas, then how it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) deltas: Vec<String>,
    pub(crate) end: End,
}

/// How a scripted reply ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// `Completed` with these tool calls (ids like `t1:100` sleep 100 ms,
    /// `p1:panic` panics, `h1:hang` never finishes).
    Completed(Vec<String>),
    /// `LlmError`.
    Error,
    /// The stream ends without a final event (a broken connection).
    Hang,
}

impl Reply {
    pub(crate) fn text(deltas: &[&str]) -> Self {
        Self { deltas: deltas.iter().map(|d| (*d).to_owned()).collect(), end: End::Completed(Vec::new()) }
    }

    pub(crate) fn tools(tools: &[&str]) -> Self {
        Self {
            deltas: vec!["calling tools".to_owned()],
            end: End::Completed(tools.iter().map(|t| (*t).to_owned()).collect()),
        }
    }

    pub(crate) fn error() -> Self {
        Self { deltas: vec!["oops".to_owned()], end: End::Error }
    }
}

/// Everything the scripted effects did, for assertions.
#[derive(Debug, Default, Clone)]
pub(crate) struct Produced {
    pub(crate) llm_requests: u32,
    /// Events yielded by LLM streams, by name.
    pub(crate) stream_events: BTreeMap<&'static str, u32>,
    /// `LlmError`s produced by a failed (timed out or panicked) stream.
    pub(crate) stream_failure_events: u32,
    /// Tool events produced (result or failure), by tool id.
    pub(crate) tool_events: BTreeMap<String, u32>,
    pub(crate) tools_spawned: Vec<String>,
    pub(crate) tool_failures: Vec<(String, EffectFailure)>,
    pub(crate) retries_scheduled: u32,
    pub(crate) actions: Vec<&'static str>,
}

/// The scripted LLM and tools.
#[derive(Debug, Clone)]
pub(crate) struct Scripted {
    pub(crate) replies: Arc<Mutex<VecDeque<Reply>>>,
    pub(crate) produced: Arc<Mutex<Produced>>,
    pub(crate) policy: RetryPolicy,
    /// Delay before each streamed item.
    pub(crate) delta_delay: Duration,
}

impl Scripted {
    pub(crate) fn new(replies: impl IntoIterator<Item = Reply>) -> Self {
        Self {
            replies: Arc::new(Mutex::new(replies.into_iter().collect())),
            produced: Arc::default(),
            policy: RetryPolicy::default().seed(42),
            delta_delay: Duration::from_millis(10),
        }
    }

    pub(crate) fn produced(&self) -> Produced {
        self.produced.lock().unwrap().clone()
    }

    fn llm_stream(&self, reply: Reply) -> impl futures::Stream<Item = Event> + Send + 'static {
        let mut items: Vec<Event> = reply.deltas.into_iter().map(Event::Delta).collect();
        match reply.end {
            End::Completed(tool_calls) => items.push(Event::Completed { tool_calls }),
            End::Error => items.push(Event::LlmError),
            End::Hang => {}
        }
        let delay = self.delta_delay;
        let produced = Arc::clone(&self.produced);
        futures::stream::iter(items)
            .then(move |item| async move {
                tokio::time::sleep(delay).await;
                item
            })
            .inspect(move |item| {
                *produced.lock().unwrap().stream_events.entry(item.name()).or_default() += 1;
            })
    }
}

/// Runs one scripted tool call.
async fn run_tool(id: String, produced: Arc<Mutex<Produced>>) -> Event {
    let behaviour = id.split(':').nth(1).unwrap_or("0").to_owned();
    match behaviour.as_str() {
        "panic" => panic!("tool {id} panicked"),
        "hang" => std::future::pending::<()>().await,
        ms => tokio::time::sleep(Duration::from_millis(ms.parse().unwrap_or(0))).await,
    }
    *produced.lock().unwrap().tool_events.entry(id.clone()).or_default() += 1;
    Event::ToolDone { id, ok: true }
}

impl Effects<Agent> for Scripted {
    type Output = String;

    fn perform(&mut self, action: Action, cx: &mut EffectContext<'_, Agent, String>) {
        self.produced.lock().unwrap().actions.push(action.name());
        match action {
            Action::SendLlmRequest { .. } => {
                self.produced.lock().unwrap().llm_requests += 1;
                let reply = self.replies.lock().unwrap().pop_front().unwrap_or_else(|| Reply::text(&["ok"]));
                let hang = reply.end == End::Hang;
                let stream = self.llm_stream(reply);
                let produced = Arc::clone(&self.produced);
                let on_failure = move |failure| match failure {
                    EffectFailure::Cancelled => None,
                    _ => {
                        produced.lock().unwrap().stream_failure_events += 1;
                        Some(Event::LlmError)
                    }
                };
                if hang {
                    cx.stream(stream.chain(futures::stream::pending()), on_failure);
                } else {
                    cx.stream(stream, on_failure);
                }
            }
            Action::ExecuteTools(ids) => {
                for id in ids {
                    self.produced.lock().unwrap().tools_spawned.push(id.clone());
                    let produced = Arc::clone(&self.produced);
                    let on_failure_produced = Arc::clone(&self.produced);
                    cx.spawn_task(id.clone(), run_tool(id, produced), move |id, failure| {
                        let mut p = on_failure_produced.lock().unwrap();
                        *p.tool_events.entry(id.clone()).or_default() += 1;
                        p.tool_failures.push((id.clone(), failure));
                        Event::ToolDone { id, ok: false }
                    });
                }
            }
            Action::ScheduleRetry { retry } => {
                self.produced.lock().unwrap().retries_scheduled += 1;
                cx.pause(self.policy.delay(retry), Event::RetryFired);
            }
            Action::Display(text) => cx.output(text),
            Action::DisplayError => cx.output("error: the LLM failed".to_owned()),
            Action::WaitForInput | Action::Shutdown => {}
        }
    }
}
