//! A model that delegates every task it is given to a subagent, run by
//! the Shadow runtime: the subagents nest `MAX_SUBAGENT_DEPTH` deep and no
//! deeper (the deepest one's call fails, and with it each turn above it),
//! instead of agents spawned without end, each waiting for the next.

use std::time::Duration;

use agent_fsm::llm::{ProviderError, StopReason, StreamEvent, Usage};
use agent_fsm_examples::coding_agent::Workspace;
use agent_fsm_examples::shadow::{AssistantMessage, Message, Permission, ShadowEvent, ShadowState, ToolCall};
use agent_fsm_examples::shadow_agent::{AgentRuntime, Llm, MAX_SUBAGENT_DEPTH, Output, prepare_workspace};
use futures::StreamExt;
use futures::stream::BoxStream;

/// How long the test waits for the next update before it fails.
const WAIT: Duration = Duration::from_secs(30);

/// Answers every conversation with a `Task` call passing the task on.
struct Delegator;

impl Llm for Delegator {
    fn stream(&self, _conversation: &[Message]) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let call =
            ToolCall { id: "t".into(), name: "Task".into(), arguments: serde_json::json!({ "prompt": "do it" }) };
        let message = AssistantMessage { text: String::new(), tool_calls: vec![call], ..Default::default() };
        let completed = StreamEvent::Completed { message, stop_reason: StopReason::ToolUse, usage: Usage::default() };
        futures::stream::iter([Ok(completed)]).boxed()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subagents_nest_no_deeper_than_the_limit() {
    let dir = tempfile::tempdir().expect("temp dir");
    prepare_workspace(dir.path()).expect("workspace");
    let runtime = AgentRuntime::new(Delegator, Workspace::new(dir.path()));
    let mut updates = runtime.subscribe();
    let main = runtime.spawn("main", &[("Task", Permission::Allow)]).expect("spawned");
    main.send(ShadowEvent::UserInput("do it".into())).await.expect("sent");

    let mut spawned = Vec::new();
    let message = loop {
        let update = tokio::time::timeout(WAIT, updates.recv()).await.expect("an update in time").expect("no lag");
        match update.output {
            Output::SubAgentSpawned { session_id, .. } => {
                spawned.push(session_id);
                assert!(spawned.len() <= MAX_SUBAGENT_DEPTH, "subagents nested deeper than the limit: {spawned:?}");
            }
            Output::StateChanged { state: ShadowState::Error { message }, .. } if &*update.session_id == "main" => {
                break message;
            }
            Output::StateChanged { state: state @ (ShadowState::Idle | ShadowState::Done), .. }
                if &*update.session_id == "main" =>
            {
                panic!("main ended in {state:?}")
            }
            _ => {}
        }
    };
    let expected: Vec<String> = (1..=MAX_SUBAGENT_DEPTH).map(|depth| format!("main{}", "/t".repeat(depth))).collect();
    assert_eq!(spawned, expected, "one subagent per level, down to the limit");
    assert!(message.contains(&format!("subagents nest at most {MAX_SUBAGENT_DEPTH} deep")), "{message}");
    runtime.shutdown_all().await;
}
