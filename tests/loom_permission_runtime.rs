//! `LoomWithPermission` under the executor, with the scripted model and the
//! real workspace tools: a permission reply sent before its request, while
//! the model is still replying, is not held back until the request is made
//! and then taken as its answer; a message the user sends while a request
//! waits reaches the model instead of being dropped.

use std::sync::Arc;
use std::time::Duration;

use agent_fsm::llm::{Provider, ProviderError, Request, StreamEvent};
use agent_fsm::runtime::{ExecutorConfig, spawn};
use agent_fsm_examples::coding_agent::inspect::InspectedEffects;
use agent_fsm_examples::coding_agent::{GREETING_WITH_TYPO, LoomEffects, ScriptedLlm, Workspace, prepare_workspace};
use agent_fsm_examples::loom::{AgentConfig, Message, ToolCall};
use agent_fsm_examples::loom_with_permission::{AgentEvent, AgentState, LoomWithPermission, request_id};
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::Semaphore;

/// The request the scripted session's edit makes: its id is derived from
/// the conversation's length then (the task, the first reply, its two
/// results, the reply asking for the edit) and the edit's call.
fn edit_request() -> usize {
    let edit = ToolCall {
        id: "call_3".into(),
        name: "edit_file".into(),
        arguments: serde_json::json!({ "path": "greeting.sh", "old_text": "wrold", "new_text": "world" }),
    };
    request_id(5, &[edit])
}

/// The scripted model, each reply held back until the gate opens: the
/// test opens it once the early reply is sent, so that the model's first
/// reply is still to come then however slowly the test is scheduled.
struct Held {
    llm: ScriptedLlm,
    gate: Arc<Semaphore>,
}

impl Provider for Held {
    fn stream(&self, request: &Request) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let gate = Arc::clone(&self.gate);
        let opened =
            futures::stream::once(async move { drop(gate.acquire().await) }).filter_map(|()| std::future::ready(None));
        opened.chain(self.llm.stream(request)).boxed()
    }
}

async fn early_reply_leaves_the_edit_waiting(early: AgentEvent) {
    let dir = tempfile::tempdir().expect("a temp dir");
    prepare_workspace(dir.path()).expect("the workspace");
    let gate = Arc::new(Semaphore::new(0));
    let llm = Arc::new(Held { llm: ScriptedLlm { delay: Duration::from_millis(2) }, gate: Arc::clone(&gate) });
    let inner = LoomEffects::new(llm, "scripted", Workspace::new(dir.path())).expect("the tools");
    let effects = InspectedEffects::new(inner, Duration::ZERO);
    let config = ExecutorConfig::<LoomWithPermission>::new().task_timeout(Duration::from_secs(20));
    let handle = spawn(LoomWithPermission::new(AgentConfig::default()), effects, config);

    let run = async {
        handle.send(AgentEvent::UserInput(Message::user("fix the greeting"))).await.expect("the task");
        // Sent while the model's first reply is under way, before any request.
        handle.send(early).await.expect("the early reply");
        gate.add_permits(1);
        handle.wait_idle().await.expect("idle");
    };
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("the agent settles in time");

    let state = handle.state().await.expect("the state");
    assert!(
        matches!(&state, AgentState::WaitingForPermission { request_id, .. } if *request_id == edit_request()),
        "the edit must still wait for the user, in {state:?}"
    );
    let greeting = std::fs::read_to_string(dir.path().join("greeting.sh")).expect("the script");
    assert_eq!(greeting, GREETING_WITH_TYPO, "the edit ran without being allowed");
    handle.shutdown().await.expect("stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_sent_before_its_request_does_not_run_the_edit() {
    early_reply_leaves_the_edit_waiting(AgentEvent::PermissionGranted { request_id: edit_request() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_sent_before_its_request_does_not_answer_it() {
    let denial = AgentEvent::PermissionDenied { request_id: edit_request(), reason: "early".into() };
    early_reply_leaves_the_edit_waiting(denial).await;
}

/// While a request waits nothing is in flight, so the executor hands the
/// user's next message to the machine at once: it must reach the model
/// (after a denial of the waiting edit), not vanish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_while_a_request_waits_reaches_the_model() {
    let dir = tempfile::tempdir().expect("a temp dir");
    prepare_workspace(dir.path()).expect("the workspace");
    let llm = Arc::new(ScriptedLlm { delay: Duration::from_millis(1) });
    let inner = LoomEffects::new(llm, "scripted", Workspace::new(dir.path())).expect("the tools");
    let effects = InspectedEffects::new(inner, Duration::ZERO);
    let config = ExecutorConfig::<LoomWithPermission>::new().task_timeout(Duration::from_secs(20));
    let handle = spawn(LoomWithPermission::new(AgentConfig::default()), effects, config);
    let note = "leave greeting.sh alone";

    let run = async {
        handle.send(AgentEvent::UserInput(Message::user("fix the greeting"))).await.expect("the task");
        handle.wait_idle().await.expect("idle");
        let state = handle.state().await.expect("the state");
        assert!(
            matches!(&state, AgentState::WaitingForPermission { request_id, .. } if *request_id == edit_request()),
            "the edit waits, in {state:?}"
        );
        handle.send(AgentEvent::UserInput(Message::user(note))).await.expect("the message");
        handle.wait_idle().await.expect("idle");
    };
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("the agent settles in time");

    let state = handle.state().await.expect("the state");
    let conversation = state.conversation().expect("a conversation").messages().to_vec();
    assert!(
        conversation.iter().any(|m| matches!(m, Message::User { content } if content == note)),
        "the message was dropped: {conversation:?}"
    );
    // The edit never ran; the model went on from the message (its next
    // tool asks in turn).
    let greeting = std::fs::read_to_string(dir.path().join("greeting.sh")).expect("the script");
    assert_eq!(greeting, GREETING_WITH_TYPO, "the edit ran without being allowed");
    assert!(
        matches!(&state, AgentState::WaitingForPermission { request_id, .. } if *request_id != edit_request()),
        "the model was not asked again, in {state:?}"
    );
    handle.shutdown().await.expect("stopped");
}
