//! The Shadow runtime agent with a checkpoint store (a real SQLite file in
//! a temp dir): a session crashed while it waits for a permission is
//! resumed by a new runtime on the same store and the permission answered
//! then is applied to the request it was asked for; a session paused while
//! a subagent works resumes parent and child, the child's task reaching it
//! once; a child that answered before the restart, its parent not having
//! recorded it, still gives the parent its answer.
//!
//! A crash is the tokio runtime dropped under the agents (their workers
//! dropped mid-step, nothing of a stop written); a pause is
//! `AgentRuntime::shutdown_all`. Every wait has a timeout.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_fsm::llm::{ProviderError, StreamEvent};
use agent_fsm::store::{CheckpointStore, SqliteStore, restore};
use agent_fsm_examples::coding_agent::Workspace;
use agent_fsm_examples::shadow::{Message, Permission, Shadow, ShadowContext, ShadowEvent, ShadowState};
use agent_fsm_examples::shadow_agent::{AgentRuntime, AgentUpdate, Llm, Output, ScriptedLlm, prepare_workspace};
use futures::stream::BoxStream;
use tokio::sync::broadcast;

/// How long a test waits for the next update before it fails.
const WAIT: Duration = Duration::from_secs(30);

const RULES: [(&str, Permission); 2] = [("read_file", Permission::Allow), ("Task", Permission::Allow)];

/// The release session: a permission, a subagent, a question, a command.
const RELEASE: &str = "Draft the release notes";

/// A session that hands its task to a subagent.
const DELEGATE: &str = "Delegate the summary";

/// The subagent [`DELEGATE`]'s model asks for, and its task.
const CHILD: &str = "main/toolu_1";
const CHILD_TASK: &str = "Summarise CHANGELOG.md";
const SUMMARY: &str = "CHANGELOG.md lists 3 changes, the latest: Subagents run as child machines.";

/// A session's files: the workspace and the store.
struct Files {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    store: PathBuf,
}

impl Files {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let workspace = dir.path().join("workspace");
        std::fs::create_dir(&workspace).expect("workspace dir");
        prepare_workspace(&workspace).expect("workspace");
        let store = dir.path().join("session.sqlite");
        Files { _dir: dir, workspace, store }
    }

    /// A runtime over the workspace, durable if `store` is given.
    fn runtime(&self, store: Option<Arc<dyn CheckpointStore>>) -> AgentRuntime {
        // Slow enough that a pause lands mid-reply.
        self.runtime_with(ScriptedLlm { delay: Duration::from_millis(20) }, store)
    }

    fn runtime_with(&self, llm: impl Llm, store: Option<Arc<dyn CheckpointStore>>) -> AgentRuntime {
        let runtime = AgentRuntime::new(llm, Workspace::new(&self.workspace));
        match store {
            Some(store) => runtime.with_store(store),
            None => runtime,
        }
    }

    /// The store file, opened again (as a new process would).
    fn open(&self) -> Arc<dyn CheckpointStore> {
        Arc::new(SqliteStore::open(&self.store).expect("the store opens"))
    }

    fn notes(&self) -> String {
        std::fs::read_to_string(self.workspace.join("NOTES.md")).expect("NOTES.md")
    }
}

/// The next update, within [`WAIT`].
async fn next(updates: &mut broadcast::Receiver<AgentUpdate>) -> AgentUpdate {
    tokio::time::timeout(WAIT, updates.recv())
        .await
        .expect("an update in time")
        .expect("the runtime's channel neither lagged nor closed")
}

fn at_rest(state: &ShadowState) -> bool {
    matches!(state, ShadowState::Idle | ShadowState::Done | ShadowState::Error { .. })
}

/// Plays the user until `session` rests: approves every permission
/// (remembered), answers every question "1.2.0". Returns the updates seen.
async fn drive(
    runtime: &AgentRuntime,
    updates: &mut broadcast::Receiver<AgentUpdate>,
    session: &str,
) -> Vec<AgentUpdate> {
    let mut seen = Vec::new();
    loop {
        let update = next(updates).await;
        seen.push(update.clone());
        let agent = || runtime.get(&update.session_id).expect("the asking agent runs");
        match update.output {
            Output::PermissionRequested { request_id, .. } => {
                let reply = ShadowEvent::PermissionReply { request_id, allowed: true, remember: true };
                agent().send(reply).await.expect("reply sent");
            }
            Output::Question { request_id, .. } => {
                let answer = ShadowEvent::QuestionAnswered { request_id, answers: vec!["1.2.0".to_owned()] };
                agent().send(answer).await.expect("answer sent");
            }
            Output::StateChanged { state, .. } if &*update.session_id == session && at_rest(&state) => {
                return seen;
            }
            _ => {}
        }
    }
}

/// Waits for the first update matching `matches`.
async fn until(updates: &mut broadcast::Receiver<AgentUpdate>, matches: impl Fn(&AgentUpdate) -> bool) -> AgentUpdate {
    loop {
        let update = next(updates).await;
        if matches(&update) {
            return update;
        }
    }
}

fn entered(update: &AgentUpdate, session: &str, name: &str) -> bool {
    &*update.session_id == session
        && matches!(&update.output, Output::StateChanged { state, .. } if state.name() == name)
}

/// The agent `session` as its store holds it.
fn stored(store: &dyn CheckpointStore, session: &str) -> Shadow {
    restore::<Shadow, _>(store, session).expect("the agent is in the store").machine
}

/// The `UserInput` events the store logged for `session`.
fn inputs_logged(store: &dyn CheckpointStore, session: &str) -> Vec<String> {
    let last = store.agent(session).expect("read").expect("the agent is in the store").next_seq - 1;
    store
        .events(session, 0, last)
        .expect("the log")
        .into_iter()
        .filter_map(|record| match serde_json::from_str(&record.event).expect("an event") {
            ShadowEvent::UserInput(text) => Some(text),
            _ => None,
        })
        .collect()
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

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a tokio runtime")
}

/// The release session run once, without a store: its NOTES.md and main's
/// conversation.
fn uninterrupted_release() -> (String, Vec<Message>) {
    let files = Files::new();
    multi_thread().block_on(async {
        let runtime = files.runtime(None);
        let mut updates = runtime.subscribe();
        let main = runtime.spawn("main", &RULES).expect("spawned");
        main.send(ShadowEvent::UserInput(RELEASE.to_owned())).await.expect("sent");
        drive(&runtime, &mut updates, "main").await;
        let conversation = main.inspect(|m| m.context().conversation.clone()).await.expect("inspect");
        runtime.shutdown_all().await;
        (files.notes(), conversation)
    })
}

#[test]
fn a_permission_asked_before_a_crash_is_answered_after_it() {
    let files = Files::new();

    // The first process: main asks to write NOTES.md, then the process dies.
    let first = multi_thread();
    let (request, runtime) = first.block_on(async {
        let runtime = files.runtime(Some(files.open()));
        let mut updates = runtime.subscribe();
        let main = runtime.spawn("main", &RULES).expect("spawned");
        main.send(ShadowEvent::UserInput(RELEASE.to_owned())).await.expect("sent");
        let asked = until(&mut updates, |u| matches!(u.output, Output::PermissionRequested { .. })).await;
        let Output::PermissionRequested { request_id, .. } = asked.output else { unreachable!("matched") };
        // The worker answers once the step is over, so it is written.
        assert!(matches!(main.state().await.expect("state"), ShadowState::WaitingForPermission { .. }));
        (request_id, runtime)
    });
    drop(first);
    drop(runtime);

    // The second process: the same command on the same store.
    let store = files.open();
    let resumed = multi_thread().block_on(async {
        let runtime = files.runtime(Some(Arc::clone(&store)));
        let mut updates = runtime.subscribe();
        let main = runtime.spawn("main", &RULES).expect("resumed");
        let ShadowState::WaitingForPermission { request_id, tool_name, .. } = main.state().await.expect("state") else {
            panic!("main resumes waiting for its permission");
        };
        assert_eq!((request_id.as_str(), tool_name.as_str()), (request.as_str(), "write_file"));
        // A reply for another request is refused; the pending one is still pending.
        let stale =
            ShadowEvent::PermissionReply { request_id: "permission-9".to_owned(), allowed: true, remember: true };
        main.send(stale).await.expect("sent");
        until(&mut updates, |u| matches!(u.output, Output::Rejected(_))).await;
        assert!(matches!(main.state().await.expect("state"), ShadowState::WaitingForPermission { .. }));
        let reply = ShadowEvent::PermissionReply { request_id, allowed: true, remember: true };
        main.send(reply).await.expect("sent");
        drive(&runtime, &mut updates, "main").await;
        assert_eq!(main.state().await.expect("state"), ShadowState::Idle);
        let resumed = main.inspect(|m| m.context().conversation.clone()).await.expect("inspect");
        runtime.shutdown_all().await;
        resumed
    });
    let (notes, conversation) = uninterrupted_release();
    assert!(notes.starts_with("# Release notes for 1.2.0\n"));
    assert_eq!(files.notes(), notes, "NOTES.md as an uninterrupted run leaves it");
    assert_eq!(resumed, conversation, "the conversation of an uninterrupted run");
    assert_eq!(inputs_logged(&*store, "main"), [RELEASE], "the prompt reached main once");
}

/// Runs [`DELEGATE`] on a durable runtime until the child enters
/// `Processing`, then pauses every agent.
async fn pause_while_the_child_works(files: &Files, store: &Arc<dyn CheckpointStore>) {
    let runtime = files.runtime(Some(Arc::clone(store)));
    let mut updates = runtime.subscribe();
    let main = runtime.spawn("main", &RULES).expect("spawned");
    main.send(ShadowEvent::UserInput(DELEGATE.to_owned())).await.expect("sent");
    until(&mut updates, |u| entered(u, CHILD, "Processing")).await;
    let outcomes = runtime.shutdown_all().await;
    assert_eq!(outcomes.len(), 2, "main and its child: {outcomes:?}");

    // The store kept both mid-task: the child has its task, no answer.
    let main = stored(&**store, "main");
    assert_eq!(main.state(), &ShadowState::WaitingForSubAgent { session_id: CHILD.to_owned() });
    let child = stored(&**store, CHILD);
    assert!(!at_rest(child.state()), "the child is paused mid-task, in {:?}", child.state());
    assert_eq!(users(&child.context().conversation), [CHILD_TASK]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_paused_mid_task_resumes_with_its_parent_and_gets_its_task_once() {
    let files = Files::new();
    let store = files.open();
    tokio::time::timeout(WAIT, pause_while_the_child_works(&files, &store)).await.expect("paused in time");

    // Run again: only main is spawned; its child resumes with it.
    let runtime = files.runtime(Some(Arc::clone(&store)));
    let mut updates = runtime.subscribe();
    let main = runtime.spawn("main", &RULES).expect("resumed");
    let seen = drive(&runtime, &mut updates, "main").await;
    assert!(
        seen.iter().any(|u| &*u.session_id == CHILD && matches!(u.output, Output::Response(_))),
        "the child answered after the restart"
    );
    assert_eq!(main.state().await.expect("state"), ShadowState::Idle);
    let conversation = main.inspect(|m| m.context().conversation.clone()).await.expect("inspect");
    assert_eq!(conversation.last(), Some(&Message::assistant(format!("The helper says: {SUMMARY}"))));
    runtime.shutdown_all().await;

    let child = stored(&*store, CHILD);
    assert_eq!(users(&child.context().conversation), [CHILD_TASK], "the task reached the child once");
    assert_eq!(inputs_logged(&*store, CHILD), [CHILD_TASK]);
    assert_eq!(child.state(), &ShadowState::Idle);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_that_answered_before_the_restart_gives_its_parent_the_answer() {
    let files = Files::new();
    let store = files.open();
    tokio::time::timeout(WAIT, pause_while_the_child_works(&files, &store)).await.expect("paused in time");

    // The child alone goes on and answers; its parent is not running to
    // hear it, and is paused still.
    let runtime = files.runtime(Some(Arc::clone(&store)));
    let mut updates = runtime.subscribe();
    runtime.spawn_with_context(ShadowContext::new(CHILD)).expect("the child resumed");
    until(&mut updates, |u| entered(u, CHILD, "Idle")).await;
    runtime.shutdown_all().await;
    let child = stored(&*store, CHILD);
    assert_eq!(child.state(), &ShadowState::Idle);
    assert_eq!(child.context().conversation.last(), Some(&Message::assistant(SUMMARY)));
    assert_eq!(stored(&*store, "main").state(), &ShadowState::WaitingForSubAgent { session_id: CHILD.to_owned() });

    // Run again: main resumes, and its child, at rest, answers it.
    let runtime = files.runtime(Some(Arc::clone(&store)));
    let mut updates = runtime.subscribe();
    let main = runtime.spawn("main", &RULES).expect("resumed");
    let seen = drive(&runtime, &mut updates, "main").await;
    // Its model stream, whose end no later step wrote, is performed
    // again (its items skipped); it neither runs a tool nor answers again.
    assert!(
        !seen.iter().any(|u| &*u.session_id == CHILD
            && matches!(u.output, Output::Response(_) | Output::ToolStarted(_) | Output::Text(_))),
        "the child did not work again"
    );
    let conversation = main.inspect(|m| m.context().conversation.clone()).await.expect("inspect");
    assert_eq!(conversation.last(), Some(&Message::assistant(format!("The helper says: {SUMMARY}"))));
    runtime.shutdown_all().await;
    assert_eq!(inputs_logged(&*store, CHILD), [CHILD_TASK], "the answered child was not given its task again");
}

/// The scripted model, except that the subagent's task starts with a
/// slow command (half a second) before anything else.
struct SlowChild(ScriptedLlm);

impl Llm for SlowChild {
    fn stream(&self, conversation: &[Message]) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let child = users(conversation).first() == Some(&CHILD_TASK);
        if child && !conversation.iter().any(|m| matches!(m, Message::Tool(_))) {
            // The scripted model's `sleep` script: `run_command` sleeps,
            // writes slept.txt; then a `write_file`.
            return self.0.stream(&[Message::user("sleep")]);
        }
        self.0.stream(conversation)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_paused_while_it_interrupts_its_child_interrupts_it_again_after_the_restart() {
    let files = Files::new();
    let store = files.open();
    let rules = [("Task", Permission::Allow), ("run_command", Permission::Allow)];
    let llm = || SlowChild(ScriptedLlm { delay: Duration::from_millis(1) });

    // Main is interrupted while its child runs its slow command; the
    // session is paused before the command is over.
    let paused = async {
        let runtime = files.runtime_with(llm(), Some(Arc::clone(&store)));
        let mut updates = runtime.subscribe();
        let main = runtime.spawn("main", &rules).expect("spawned");
        main.send(ShadowEvent::UserInput(DELEGATE.to_owned())).await.expect("sent");
        until(&mut updates, |u| {
            &*u.session_id == CHILD && matches!(&u.output, Output::ToolStarted(c) if c.name == "run_command")
        })
        .await;
        main.interrupt("the user pressed Esc").await.expect("interrupted");
        runtime.shutdown_all().await;
    };
    tokio::time::timeout(WAIT, paused).await.expect("paused in time");
    let main = stored(&*store, "main");
    assert!(main.context().interrupt_requested, "main was interrupting its child");
    assert_eq!(main.state(), &ShadowState::WaitingForSubAgent { session_id: CHILD.to_owned() });
    assert!(matches!(stored(&*store, CHILD).state(), ShadowState::ExecutingTool { .. }));
    assert!(!files.workspace.join("slept.txt").exists(), "paused before the command was over");

    // Run again: main interrupts the child again, which lets its command
    // finish (as an interrupt in `ExecutingTool` does) and ends.
    let runtime = files.runtime_with(llm(), Some(Arc::clone(&store)));
    let mut updates = runtime.subscribe();
    let main = runtime.spawn("main", &rules).expect("resumed");
    drive(&runtime, &mut updates, "main").await;
    assert_eq!(main.state().await.expect("state"), ShadowState::Done);
    runtime.shutdown_all().await;
    assert_eq!(stored(&*store, CHILD).state(), &ShadowState::Done, "the child resumed and was interrupted");
    assert!(files.workspace.join("slept.txt").exists(), "the child's command ran to its end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_that_cannot_be_spawned_again_after_the_restart_fails_its_parent_call() {
    let files = Files::new();
    let store = files.open();
    tokio::time::timeout(WAIT, pause_while_the_child_works(&files, &store)).await.expect("paused in time");

    // Run again with the child's session id taken: main performs its
    // `SpawnSubAgent` again, which is refused; the refusal reaches main.
    let runtime = files.runtime(Some(Arc::clone(&store)));
    let mut updates = runtime.subscribe();
    runtime.spawn_with_context(ShadowContext::new(CHILD)).expect("the child's id taken");
    let main = runtime.spawn("main", &RULES).expect("resumed");
    let seen = drive(&runtime, &mut updates, "main").await;
    let Some(ShadowState::Error { message }) = seen.iter().rev().find_map(|u| match &u.output {
        Output::StateChanged { state, .. } if &*u.session_id == "main" => Some(state.clone()),
        _ => None,
    }) else {
        panic!("main ends in Error");
    };
    assert!(message.contains("already has the session id"), "{message}");
    assert!(matches!(main.state().await.expect("state"), ShadowState::Error { .. }));
    runtime.shutdown_all().await;
}
