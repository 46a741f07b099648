//! A model that uses one tool call id again in a later turn (as some
//! OpenAI-compatible servers do, numbering each reply's calls from
//! `call_0`) against the Shadow runtime: each `Task` call gets a subagent
//! of its own, under a session id no earlier subagent had. With a
//! checkpoint store (a real SQLite file in a temp dir) the new subagent is
//! given its own task, rather than the earlier one resumed and its old
//! answer taken as the new call's result; without one, a late reply to the
//! earlier subagent's permission request, sent to its session, cannot
//! release the new subagent's call.

use std::sync::Arc;
use std::time::Duration;

use agent_fsm::llm::{ProviderError, StopReason, StreamEvent, Usage};
use agent_fsm::store::{CheckpointStore, SqliteStore, restore};
use agent_fsm_examples::coding_agent::Workspace;
use agent_fsm_examples::shadow::{
    AssistantMessage, Message, Permission, Shadow, ShadowContext, ShadowEvent, ShadowState, ToolCall,
};
use agent_fsm_examples::shadow_agent::{AgentRuntime, AgentUpdate, Llm, Output, prepare_workspace};
use futures::StreamExt;
use futures::stream::BoxStream;

/// How long a test waits for the next update before it fails.
const WAIT: Duration = Duration::from_secs(30);

/// What a child is told: its task follows.
const CHILD: &str = "child: ";

/// Every reply of main that delegates calls `Task` under the id `call_0`;
/// a child answers `done {task}`; main then says what it got.
struct SameIdEveryTurn;

fn users(conversation: &[Message]) -> impl DoubleEndedIterator<Item = &str> {
    conversation.iter().filter_map(|m| match m {
        Message::User { content } => Some(content.as_str()),
        _ => None,
    })
}

impl Llm for SameIdEveryTurn {
    fn stream(&self, conversation: &[Message]) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let first = users(conversation).next().unwrap_or_default();
        let last = users(conversation).next_back().unwrap_or_default();
        // The tool result of this turn, if its call was answered.
        let result =
            conversation.iter().rev().take_while(|m| !matches!(m, Message::User { .. })).find_map(|m| match m {
                Message::Tool(result) => Some(result.content.clone()),
                _ => None,
            });
        let message = match (first.strip_prefix(CHILD), result) {
            // A child told to run something asks to: `run_command` waits
            // for a permission.
            (Some(task), None) if task.starts_with("run ") => {
                let command = format!("echo {}", &task[4..]);
                let call = ToolCall {
                    id: "call_0".into(),
                    name: "run_command".into(),
                    arguments: serde_json::json!({ "command": command }),
                };
                AssistantMessage { text: String::new(), tool_calls: vec![call], ..Default::default() }
            }
            (Some(task), _) => AssistantMessage { text: format!("done {task}"), ..Default::default() },
            (None, Some(result)) => AssistantMessage { text: format!("main got: {result}"), ..Default::default() },
            (None, None) => {
                let prompt = format!("{CHILD}{last}");
                let call = ToolCall {
                    id: "call_0".into(),
                    name: "Task".into(),
                    arguments: serde_json::json!({ "prompt": prompt }),
                };
                AssistantMessage { text: String::new(), tool_calls: vec![call], ..Default::default() }
            }
        };
        let stop_reason = if message.tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
        futures::stream::iter([Ok(StreamEvent::Completed { message, stop_reason, usage: Usage::default() })]).boxed()
    }
}

/// Gives main `tasks`, one turn each, and returns its answers.
async fn answers(runtime: &AgentRuntime, tasks: &[&str]) -> Vec<String> {
    let mut updates = runtime.subscribe();
    let main = runtime.spawn("main", &[("Task", Permission::Allow)]).expect("spawned");
    let mut answers = Vec::new();
    for task in tasks {
        main.send(ShadowEvent::UserInput((*task).to_owned())).await.expect("sent");
        loop {
            let update = tokio::time::timeout(WAIT, updates.recv()).await.expect("an update in time").expect("no lag");
            if &*update.session_id != "main" {
                continue;
            }
            match update.output {
                Output::Response(text) => {
                    answers.push(text);
                    break;
                }
                Output::StateChanged { state: state @ (ShadowState::Error { .. } | ShadowState::Done), .. } => {
                    panic!("main ended its turn without an answer: {state:?}")
                }
                _ => {}
            }
        }
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_call_id_used_again_gets_a_new_subagent_that_does_the_new_task() {
    let dir = tempfile::tempdir().expect("temp dir");
    let workspace = dir.path().join("workspace");
    std::fs::create_dir(&workspace).expect("workspace dir");
    prepare_workspace(&workspace).expect("workspace");
    let store: Arc<dyn CheckpointStore> = Arc::new(SqliteStore::open(dir.path().join("s.db")).expect("store"));
    let runtime = AgentRuntime::new(SameIdEveryTurn, Workspace::new(&workspace)).with_store(Arc::clone(&store));
    let got = answers(&runtime, &["alpha", "beta", "gamma"]).await;
    runtime.shutdown_all().await;
    assert_eq!(got, ["main got: done alpha", "main got: done beta", "main got: done gamma"]);

    // Three subagents, each given its own task once; main resumes from
    // the store and holds to its invariants.
    let main = restore::<Shadow, _>(&*store, "main").expect("main is stored").machine;
    let children: Vec<&String> = main.context().children.iter().collect();
    assert_eq!(children.len(), 3, "{children:?}");
    for (child, task) in children.iter().zip(["alpha", "beta", "gamma"]) {
        let child = restore::<Shadow, _>(&*store, child).expect("the child is stored").machine;
        let given: Vec<&str> = users(&child.context().conversation).collect();
        assert_eq!(given, [format!("{CHILD}{task}")]);
    }
}

#[test]
fn child_session_ids_are_distinct_even_for_ids_chosen_to_collide() {
    let mut ctx = ShadowContext::new("main");
    let ids: Vec<String> =
        ["call_0", "call_0~2", "call_0", "call_0", "call_0~2"].iter().map(|id| ctx.spawn_child(id)).collect();
    assert_eq!(ids, ["main/call_0", "main/call_0~2", "main/call_0~3", "main/call_0~4", "main/call_0~2~2"]);
    assert_eq!(ctx.children.len(), ids.len());
}

/// A call id holding a `/` names no session of another level: the call
/// `a/b` of `main` and the call `b` of its child `main/a` get two ids.
#[test]
fn a_call_id_cannot_name_a_grandchild_session() {
    let mut main = ShadowContext::new("main");
    let child = main.spawn_child("a");
    let grandchild = ShadowContext::new(child).spawn_child("b");
    assert_eq!(grandchild, "main/a/b");
    assert_eq!(main.spawn_child("a/b"), "main/a%2Fb");
    assert_eq!(main.spawn_child("a%2Fb"), "main/a%252Fb", "the escape is escaped too");
}

/// The next update matching `matches`, within [`WAIT`].
async fn until(
    updates: &mut tokio::sync::broadcast::Receiver<AgentUpdate>,
    matches: impl Fn(&AgentUpdate) -> bool,
) -> AgentUpdate {
    loop {
        let update = tokio::time::timeout(WAIT, updates.recv()).await.expect("an update in time").expect("no lag");
        if matches(&update) {
            return update;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_reply_to_an_earlier_subagent_does_not_release_the_call_of_one_spawned_under_a_reused_id() {
    let dir = tempfile::tempdir().expect("temp dir");
    prepare_workspace(dir.path()).expect("workspace");
    let runtime = AgentRuntime::new(SameIdEveryTurn, Workspace::new(dir.path()));
    let mut updates = runtime.subscribe();
    let main = runtime.spawn("main", &[("Task", Permission::Allow)]).expect("spawned");
    let asked = |update: &AgentUpdate| matches!(update.output, Output::PermissionRequested { .. });

    // The first subagent asks to run its command; the user interrupts the
    // session instead of answering.
    main.send(ShadowEvent::UserInput("run first".to_owned())).await.expect("sent");
    let first = until(&mut updates, asked).await;
    let Output::PermissionRequested { request_id: stale, .. } = first.output else { unreachable!("matched") };
    main.interrupt("the user pressed Esc").await.expect("interrupted");
    until(&mut updates, |u| &*u.session_id == "main" && matches!(u.output, Output::Interrupted)).await;

    // The next turn's subagent, spawned for the same call id, asks too.
    main.send(ShadowEvent::UserInput("run second".to_owned())).await.expect("sent");
    let second = until(&mut updates, asked).await;

    // The answer to the first request reaches whatever runs under its
    // session now: nothing, or at least not the second subagent's call.
    if let Some(agent) = runtime.get(&first.session_id) {
        let reply = ShadowEvent::PermissionReply { request_id: stale, allowed: true, remember: false };
        let _ = agent.send(reply).await;
    }
    let child = runtime.get(&second.session_id).expect("the second subagent runs");
    tokio::time::timeout(WAIT, child.wait_idle()).await.expect("idle in time").expect("idle");
    assert!(
        matches!(child.state().await.expect("state"), ShadowState::WaitingForPermission { .. }),
        "the second subagent's command still waits for its own answer"
    );
    assert_ne!(second.session_id, first.session_id, "the second subagent has a session of its own");
    runtime.shutdown_all().await;
}

/// A snapshot waiting for a subagent resumes only with a session id its
/// context gave the current call: the first, or one with `~n` it recorded;
/// and, from a snapshot taken before children were recorded, the id as it
/// was written then. Any other is refused, so a tampered or mixed-up
/// snapshot cannot make the parent take another session's answer.
#[test]
fn a_snapshot_waiting_for_a_subagent_names_a_child_its_context_gave() {
    use agent_fsm::snapshot::{self, SnapshotError};
    let waiting = |spawned_before: &[&str]| {
        let mut context = ShadowContext::new("main");
        context.permissions.insert("Task".into(), Permission::Allow);
        for id in spawned_before {
            context.spawn_child(id);
        }
        let mut machine = Shadow::new(context);
        machine.handle_event(ShadowEvent::UserInput("go".into()));
        let call = ToolCall { id: "a/b".into(), name: "Task".into(), arguments: serde_json::json!({}) };
        machine.handle_event(ShadowEvent::LlmEvent(StreamEvent::Completed {
            message: AssistantMessage { text: String::new(), tool_calls: vec![call], ..Default::default() },
            stop_reason: StopReason::ToolUse,
            usage: Usage::default(),
        }));
        machine.handle_event(ShadowEvent::SubAgentRequested { tool_use_id: "a/b".into(), prompt: "task".into() });
        serde_json::from_str::<serde_json::Value>(&snapshot::to_json(&machine).expect("snapshot")).expect("json")
    };
    let resume = |v: &serde_json::Value| snapshot::from_json::<Shadow>(&v.to_string()).map(|_| ());
    let with_session = |mut v: serde_json::Value, id: &str| {
        v["state"]["data"]["session_id"] = serde_json::json!(id);
        v
    };
    let recorded = |mut v: serde_json::Value, id: &str| {
        v["context"]["children"].as_array_mut().expect("children").push(serde_json::json!(id));
        v
    };
    // As spawned: the first child, then `~2` for an id used before.
    let first = waiting(&[]);
    assert_eq!(first["state"]["data"]["session_id"], "main/a%2Fb");
    assert!(resume(&first).is_ok());
    let second = waiting(&["a/b"]);
    assert_eq!(second["state"]["data"]["session_id"], "main/a%2Fb~2");
    assert!(resume(&second).is_ok());
    // Before children were recorded: the first id, and the unescaped form
    // written then.
    let mut legacy = waiting(&[]);
    legacy["context"]["children"] = serde_json::json!([]);
    assert!(resume(&legacy).is_ok());
    assert!(resume(&with_session(legacy.clone(), "main/a/b")).is_ok());
    for (what, v) in [
        ("a child of another call", with_session(first.clone(), "main/c")),
        ("a `~n` the context did not record", with_session(first.clone(), "main/a%2Fb~2")),
        ("a `~n` written two ways", with_session(second.clone(), "main/a%2Fb~02")),
        ("the unescaped form once children are recorded", with_session(first.clone(), "main/a/b")),
        ("another call's child in a legacy snapshot", with_session(legacy, "main/c")),
        // Recorded as children too, which `spawn_child` never makes.
        ("a `~1`", recorded(with_session(first.clone(), "main/a%2Fb~1"), "main/a%2Fb~1")),
        ("a `~2` written `~02`", recorded(with_session(second.clone(), "main/a%2Fb~02"), "main/a%2Fb~02")),
    ] {
        let err = resume(&v).expect_err(what);
        assert!(matches!(err, SnapshotError::Invariant { .. }), "{what}: {err}");
    }
}
