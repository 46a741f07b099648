//! A model whose stream ends without its reply (a custom provider that
//! yields its text and stops, with neither `Completed` nor an error), run
//! by the coding agent's effects under the executor: the turn is retried
//! and then reported, the agent waits for input again, and the next
//! message the user sends is taken, not refused by an agent still waiting
//! for the reply that never came.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_fsm::llm::{Provider, ProviderError, Request, StreamEvent};
use agent_fsm::runtime::{ExecutorConfig, Notification, RetryPolicy, spawn};
use agent_fsm_examples::coding_agent::inspect::InspectedEffects;
use agent_fsm_examples::coding_agent::{LoomEffects, Output, Workspace};
use agent_fsm_examples::loom::{AgentConfig, AgentEvent, AgentState, Loom, Message};
use agent_fsm_examples::loom_with_permission as careful;
use futures::StreamExt;
use futures::stream::BoxStream;

/// How long a test waits for the agent to settle before it fails.
const WAIT: Duration = Duration::from_secs(20);

/// Says a word and stops: no `Completed`, no error. Counts its calls.
struct Mute {
    calls: Arc<AtomicUsize>,
}

impl Provider for Mute {
    fn stream(&self, _request: &Request) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        futures::stream::iter([Ok(StreamEvent::TextDelta("hmm".into()))]).boxed()
    }
}

/// Loom's effects over [`Mute`] in a temp dir, retrying at once.
fn effects(calls: &Arc<AtomicUsize>, dir: &std::path::Path) -> LoomEffects {
    let llm = Arc::new(Mute { calls: Arc::clone(calls) });
    let mut effects = LoomEffects::new(llm, "mute", Workspace::new(dir)).expect("the tools");
    effects.retry = RetryPolicy::new().base(Duration::from_millis(1)).cap(Duration::from_millis(1));
    effects
}

fn users(conversation: &[Message]) -> Vec<&str> {
    conversation
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_ends_without_its_reply_is_retried_reported_and_the_next_message_taken() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let calls = Arc::new(AtomicUsize::new(0));
    let config = AgentConfig::default();
    let attempts = config.max_retries as usize;
    let handle = spawn(Loom::new(config), effects(&calls, dir.path()), ExecutorConfig::new());
    let mut notifications = handle.subscribe();

    let run = async {
        handle.send(AgentEvent::UserInput(Message::user("first"))).await.expect("sent");
        handle.wait_idle().await.expect("idle");
        handle.send(AgentEvent::UserInput(Message::user("second"))).await.expect("sent");
        handle.wait_idle().await.expect("idle");
    };
    tokio::time::timeout(WAIT, run).await.expect("the agent settles in time");

    let state = handle.state().await.expect("the state");
    assert!(
        matches!(state, AgentState::WaitingForUserInput { .. }),
        "the agent must wait for input again, not for a reply that will never come: {state:?}"
    );
    let conversation = state.conversation().expect("a conversation").messages();
    assert_eq!(users(conversation), ["first", "second"], "the second message was not taken");
    assert_eq!(calls.load(Ordering::SeqCst), 2 * attempts, "each turn tries the model {attempts} times");
    handle.shutdown().await.expect("stopped");

    let mut errors = Vec::new();
    while let Some(n) = notifications.recv().await {
        if let Notification::Output(Output::Error(text)) = n {
            errors.push(text);
        }
    }
    assert_eq!(errors.len(), 2, "each turn's failure is reported once: {errors:?}");
    assert!(errors.iter().all(|e| e.contains("ended without a reply")), "{errors:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspected_demo_is_not_left_waiting_by_a_stream_without_its_reply() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let calls = Arc::new(AtomicUsize::new(0));
    let effects = InspectedEffects::new(effects(&calls, dir.path()), Duration::ZERO);
    let config = AgentConfig::default();
    let attempts = config.max_retries as usize;
    let handle = spawn(careful::LoomWithPermission::new(config), effects, ExecutorConfig::new());

    let run = async {
        handle.send(careful::AgentEvent::UserInput(Message::user("first"))).await.expect("sent");
        handle.wait_idle().await.expect("idle");
    };
    tokio::time::timeout(WAIT, run).await.expect("the agent settles in time");

    let state = handle.state().await.expect("the state");
    assert!(matches!(state, careful::AgentState::WaitingForUserInput { .. }), "{state:?}");
    assert_eq!(calls.load(Ordering::SeqCst), attempts);
    handle.shutdown().await.expect("stopped");
}
