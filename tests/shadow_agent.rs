//! The Shadow agent under the executor, end to end: the documented flows
//! with their exact state sequences (and the history checked against the
//! table's own path), interrupts in every state through
//! `handle.interrupt(..)`, input sent mid-turn, subagents as child
//! machines (their failure, their handles in the registry), and what a
//! subscriber sees, JSON included.
//!
//! Tests without a subprocess run under paused time, so the scripted
//! model's delays cost nothing and the order of events is exact.

use std::time::Duration;

use agent_fsm::Recorder;
use agent_fsm::runtime::{History, Notification};
use agent_fsm_examples::coding_agent::Workspace;
use agent_fsm_examples::shadow::{
    INTERRUPTED, Message, Permission, Shadow, ShadowContext, ShadowEvent, ShadowState, ToolCall,
};
use agent_fsm_examples::shadow_agent::{
    AgentRuntime, AgentUpdate, Output, STORY, ScriptedLlm, ShadowHandle, SpawnError, prepare_workspace,
};
use serde_json::json;
use tokio::sync::broadcast;

// ---------------------------------------------------------------- helpers

/// How long a test waits for the next update before it fails (virtual
/// time under paused time).
const WAIT: Duration = Duration::from_secs(60);

/// How the test answers permission requests and questions.
#[derive(Debug, Clone, Copy)]
struct Policy {
    allow: bool,
    remember: bool,
    answer: &'static str,
}

const APPROVE: Policy = Policy { allow: true, remember: false, answer: "blue" };

/// A runtime over a fresh workspace, with every update it published.
struct Harness {
    runtime: AgentRuntime,
    updates: broadcast::Receiver<AgentUpdate>,
    seen: Vec<AgentUpdate>,
    dir: tempfile::TempDir,
}

impl Harness {
    fn new() -> Self {
        Self::with_config(AgentRuntime::default_config())
    }

    fn with_config(config: agent_fsm::ExecutorConfig<Shadow>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        prepare_workspace(dir.path()).expect("workspace");
        let llm = ScriptedLlm { delay: Duration::from_millis(10) };
        let runtime = AgentRuntime::with_config(llm, Workspace::new(dir.path()), config);
        let updates = runtime.subscribe();
        Harness { runtime, updates, seen: Vec::new(), dir }
    }

    fn spawn(&self, rules: &[(&str, Permission)]) -> ShadowHandle {
        self.runtime.spawn("main", rules).expect("spawned")
    }

    fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join(name)).ok()
    }

    /// The next update of any agent.
    async fn next(&mut self) -> AgentUpdate {
        let update = tokio::time::timeout(WAIT, self.updates.recv())
            .await
            .expect("an update in time")
            .expect("the runtime's channel neither lagged nor closed");
        self.seen.push(update.clone());
        update
    }

    /// Reads the updates already published (the rest of a step's outputs).
    fn drain(&mut self) {
        loop {
            match self.updates.try_recv() {
                Ok(update) => self.seen.push(update),
                Err(broadcast::error::TryRecvError::Empty) => return,
                Err(error) => panic!("the runtime's channel: {error}"),
            }
        }
    }

    /// The first update matching `matches`.
    async fn until(&mut self, matches: impl Fn(&AgentUpdate) -> bool) -> AgentUpdate {
        loop {
            let update = self.next().await;
            if matches(&update) {
                return update;
            }
        }
    }

    /// Waits until `session` enters the state named `name`.
    async fn until_state(&mut self, session: &str, name: &str) -> ShadowState {
        let update = self
            .until(|u| {
                &*u.session_id == session
                    && matches!(&u.output, Output::StateChanged { state, .. } if state.name() == name)
            })
            .await;
        match update.output {
            Output::StateChanged { state, .. } => state,
            _ => unreachable!("matched a state change"),
        }
    }

    /// Sends `prompt` to `handle` and answers every request per `policy`
    /// until the agent rests (`Idle`, `Done` or `Error`).
    async fn turn(&mut self, handle: &ShadowHandle, prompt: &str, policy: Policy) -> ShadowState {
        handle.send(ShadowEvent::UserInput(prompt.to_owned())).await.expect("input sent");
        self.settle("main", policy).await
    }

    /// Answers requests per `policy` until `session` rests.
    async fn settle(&mut self, session: &str, policy: Policy) -> ShadowState {
        loop {
            let update = self.next().await;
            match update.output {
                Output::PermissionRequested { request_id, .. } => {
                    let reply =
                        ShadowEvent::PermissionReply { request_id, allowed: policy.allow, remember: policy.remember };
                    self.agent(&update.session_id).send(reply).await.expect("reply sent");
                }
                Output::Question { request_id, .. } => {
                    let answer = ShadowEvent::QuestionAnswered { request_id, answers: vec![policy.answer.to_owned()] };
                    self.agent(&update.session_id).send(answer).await.expect("answer sent");
                }
                Output::StateChanged { state, .. } if &*update.session_id == session && at_rest(&state) => {
                    self.drain();
                    return state;
                }
                _ => {}
            }
        }
    }

    fn agent(&self, session: &str) -> ShadowHandle {
        self.runtime.get(session).expect("the agent is running")
    }

    /// The states `session` published, in order.
    fn published(&self, session: &str) -> Vec<&'static str> {
        self.outputs(session)
            .filter_map(|o| match o {
                Output::StateChanged { state, .. } => Some(state.name()),
                _ => None,
            })
            .collect()
    }

    fn outputs<'a>(&'a self, session: &'a str) -> impl Iterator<Item = &'a Output> + 'a {
        self.seen.iter().filter(move |u| &*u.session_id == session).map(|u| &u.output)
    }

    fn responses(&self, session: &str) -> Vec<String> {
        self.outputs(session)
            .filter_map(|o| match o {
                Output::Response(text) => Some(text.clone()),
                _ => None,
            })
            .collect()
    }
}

fn at_rest(state: &ShadowState) -> bool {
    matches!(state, ShadowState::Idle | ShadowState::Done | ShadowState::Error { .. })
}

/// The states the history went through: where it started, then every
/// state a hop changed to.
fn states(history: &History<Shadow>) -> Vec<&'static str> {
    let mut states = vec![history.transitions().next().map_or("Idle", |t| t.from.name())];
    states.extend(history.transitions().filter(|t| t.from != t.to).map(|t| t.to.name()));
    states
}

/// The hops of the history as `(from, event, to, action)`.
fn hops(history: &History<Shadow>) -> Vec<agent_fsm::HopNames> {
    history
        .transitions()
        .map(|t| (t.from.name(), t.event.map(|e| e.name()), t.to.name(), t.action.map(|a| a.name())))
        .collect()
}

/// The agent's history is the table's own path: the recorded events, fed
/// to a fresh machine built like the agent's, take exactly the recorded
/// hops (no hop the table would not take, none missing) and end in the
/// agent's state and context. The states the effects published are the
/// history's changes of state, in order. Returns the history.
async fn assert_history_is_the_tables_path(
    h: &mut Harness,
    handle: &ShadowHandle,
    initial: ShadowContext,
) -> History<Shadow> {
    let history = handle.history().await.expect("history");
    let (state, context) = handle.inspect(|m| (m.state().clone(), m.context().clone())).await.expect("inspect");
    // Every step so far was published before the worker answered.
    h.drain();
    let events = history.events().expect("the runtime records the event log");
    let mut fresh = Shadow::new(initial);
    let mut table = Recorder::default();
    for record in events {
        fresh.handle_event_with(record.event.clone(), &mut table);
    }
    let recorded: Vec<_> = history.transitions().map(|t| (t.from, t.event, t.to, t.action, t.row)).collect();
    let replayed: Vec<_> = table.steps.iter().map(|s| (s.from, s.event, s.to, s.action, s.row)).collect();
    assert_eq!(history.evicted(), 0);
    assert_eq!(recorded, replayed, "the history is the table's path");
    assert_eq!(fresh.state(), &state);
    assert_eq!(fresh.context(), &context);
    let session = context.session_id.as_str();
    assert_eq!(h.published(session), states(&history)[1..].to_vec(), "every change published, nothing else");
    history
}

fn main_context(rules: &[(&str, Permission)]) -> ShadowContext {
    rules.iter().fold(ShadowContext::new("main"), |ctx, (tool, rule)| ctx.with_rule(*tool, *rule))
}

async fn conversation(handle: &ShadowHandle) -> Vec<Message> {
    handle.inspect(|m| m.context().conversation.clone()).await.expect("inspect")
}

fn ok(id: &str, content: &str) -> Message {
    Message::tool_result(id, content)
}

fn err(id: &str, content: &str) -> Message {
    Message::tool_error(id, content)
}

fn interrupted() -> Message {
    Message::user(INTERRUPTED)
}

// ------------------------------------------------------------------- flows

#[tokio::test(start_paused = true)]
async fn flow_simple_reply() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    assert_eq!(h.turn(&main, "hello there", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(states(&history), ["Idle", "Processing", "Idle"]);
    assert_eq!(h.responses("main"), ["Hello! I can write, compare, delegate, ask and run things."]);
}

#[tokio::test(start_paused = true)]
async fn flow_tool_with_permission() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    assert_eq!(h.turn(&main, "write hello.txt", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(states(&history), ["Idle", "Processing", "WaitingForPermission", "ExecutingTool", "Processing", "Idle"]);
    assert_eq!(h.file("hello.txt").as_deref(), Some("hello from Shadow\n"), "the tool ran for real");
    assert_eq!(h.responses("main"), ["Wrote hello.txt."]);
    let permissions = main.inspect(|m| m.context().permissions.clone()).await.expect("inspect");
    assert_eq!(permissions.get("write_file"), None, "not remembered");
}

#[tokio::test(start_paused = true)]
async fn flow_several_tools_allowed_by_rule() {
    let rules = [("read_file", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    assert_eq!(h.turn(&main, "compare a.txt and b.txt", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    assert_eq!(
        states(&history),
        ["Idle", "Processing", "ExecutingTool", "Processing", "ExecutingTool", "Processing", "Idle"]
    );
    assert!(!h.outputs("main").any(|o| matches!(o, Output::PermissionRequested { .. })), "the rule allowed both");
    assert_eq!(h.responses("main"), ["a.txt says \"alpha\" and b.txt says \"beta\"."]);
}

#[tokio::test(start_paused = true)]
async fn flow_subagent() {
    let rules = [("Task", Permission::Allow), ("read_file", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    assert_eq!(h.turn(&main, "delegate the summary", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    assert_eq!(states(&history), ["Idle", "Processing", "ExecutingTool", "WaitingForSubAgent", "Processing", "Idle"]);
    // The child ran under its own session id, as a machine of its own,
    // then was shut down by its parent.
    assert!(h.outputs("main").any(|o| matches!(o, Output::SubAgentSpawned { session_id, prompt }
        if session_id == "main/toolu_1" && prompt == "Summarise CHANGELOG.md")));
    assert_eq!(h.published("main/toolu_1"), ["Processing", "ExecutingTool", "Processing", "Idle", "Done"]);
    let summary = "CHANGELOG.md lists 3 changes, the latest: Subagents run as child machines.";
    assert_eq!(h.responses("main/toolu_1"), [summary]);
    assert_eq!(h.responses("main"), [format!("The helper says: {summary}")]);
    assert_eq!(conversation(&main).await[2], ok("toolu_1", summary));
    assert_eq!(h.runtime.sessions(), ["main"], "the finished child is unregistered");
}

#[tokio::test(start_paused = true)]
async fn flow_question() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    assert_eq!(h.turn(&main, "ask me about the button", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(states(&history), ["Idle", "Processing", "WaitingForUserInput", "Processing", "Idle"]);
    assert!(h.outputs("main").any(|o| o
        == &Output::Question {
            request_id: "question-0".to_owned(),
            questions: json!({ "questions": ["Which colour should the button be?"] })
        }));
    assert_eq!(h.responses("main"), ["Painting the button blue."]);
}

#[tokio::test(start_paused = true)]
async fn a_remembered_permission_skips_the_wait_and_a_reply_for_another_id_is_refused() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    main.send(ShadowEvent::UserInput("write hello.txt".to_owned())).await.expect("sent");
    let asked = h.until(|u| matches!(u.output, Output::PermissionRequested { .. })).await;
    let Output::PermissionRequested { request_id, call } = asked.output else { unreachable!("matched") };
    assert_eq!(call.id, "toolu_1");
    assert_eq!(request_id, "permission-0");

    // A reply for another request changes nothing, and neither does one
    // that names the call (its id is the model's, not the request's).
    for id in ["permission-9", "toolu_1"] {
        let wrong = ShadowEvent::PermissionReply { request_id: id.to_owned(), allowed: true, remember: true };
        main.send(wrong).await.expect("sent");
        let refused = h.until(|u| matches!(u.output, Output::Rejected(_))).await;
        assert_eq!(
            refused.output,
            Output::Rejected(format!("no permission request `{id}` pending (waiting for `permission-0`)"))
        );
    }
    assert_eq!(main.state().await.expect("state").name(), "WaitingForPermission");
    assert_eq!(h.file("hello.txt"), None);

    let right = ShadowEvent::PermissionReply { request_id, allowed: true, remember: true };
    main.send(right).await.expect("sent");
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);
    // Remembered for the session: the next write runs without asking.
    assert_eq!(h.turn(&main, "write it again", Policy { allow: false, ..APPROVE }).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(
        states(&history),
        [
            "Idle",
            "Processing",
            "WaitingForPermission",
            "ExecutingTool",
            "Processing",
            "Idle",
            "Processing",
            "ExecutingTool",
            "Processing",
            "Idle"
        ]
    );
    assert_eq!(h.responses("main"), ["Wrote hello.txt.", "Wrote hello.txt."]);
}

#[tokio::test(start_paused = true)]
async fn a_denied_permission_ends_the_task_and_new_input_starts_another() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    let denied = h.turn(&main, "write hello.txt", Policy { allow: false, ..APPROVE }).await;
    assert_eq!(denied, ShadowState::Done);
    assert_eq!(h.file("hello.txt"), None, "the tool did not run");
    assert!(h.outputs("main").any(|o| o == &Output::PermissionDenied("write_file".into())));
    assert_eq!(h.turn(&main, "hello", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(states(&history), ["Idle", "Processing", "WaitingForPermission", "Done", "Processing", "Idle"]);
}

// ------------------------------------------------------ interrupt per state

#[tokio::test(start_paused = true)]
async fn interrupt_in_idle_keeps_the_agent_alive() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    main.interrupt("Esc").await.expect("interrupted");
    main.interrupt("Esc again").await.expect("a double interrupt is safe");
    assert_eq!(main.state().await.expect("state"), ShadowState::Idle);
    assert!(!main.is_finished(), "the agent did not end");
    // Still takes input.
    assert_eq!(h.turn(&main, "hello", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(history.interrupts().map(|i| &*i.cause).collect::<Vec<_>>(), ["Esc", "Esc again"]);
    assert_eq!(
        hops(&history)[..2],
        [
            ("Idle", Some("Interrupt"), "Idle", Some("NothingToInterrupt")),
            ("Idle", Some("Interrupt"), "Idle", Some("NothingToInterrupt"))
        ]
    );
    assert_eq!(states(&history), ["Idle", "Processing", "Idle"]);
}

#[tokio::test(start_paused = true)]
async fn interrupt_in_processing_keeps_the_partial_text() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    main.send(ShadowEvent::UserInput("tell me a story".to_owned())).await.expect("sent");
    for _ in 0..3 {
        h.until(|u| matches!(u.output, Output::Text(_))).await;
    }
    main.interrupt("Esc").await.expect("interrupted");
    assert_eq!(main.state().await.expect("state"), ShadowState::Done);

    let partial = "Once upon a ";
    assert!(STORY.starts_with(partial));
    assert_eq!(
        conversation(&main).await,
        [Message::user("tell me a story"), Message::assistant(partial), interrupted(),]
    );
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(hops(&history).last(), Some(&("Processing", Some("Interrupt"), "Done", Some("Interrupted"))));
    assert_eq!(states(&history), ["Idle", "Processing", "Done"]);
    // Nothing of the dropped stream arrives later.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(main.state().await.expect("state"), ShadowState::Done);
}

#[tokio::test(start_paused = true)]
async fn interrupt_in_waiting_for_permission_answers_the_tool_as_interrupted() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    main.send(ShadowEvent::UserInput("write hello.txt".to_owned())).await.expect("sent");
    h.until_state("main", "WaitingForPermission").await;
    main.interrupt("Esc").await.expect("interrupted");

    assert_eq!(main.state().await.expect("state"), ShadowState::Done);
    assert_eq!(h.file("hello.txt"), None, "no execution");
    assert_eq!(conversation(&main).await[2..], [err("toolu_1", INTERRUPTED), interrupted()]);
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(states(&history), ["Idle", "Processing", "WaitingForPermission", "Done"]);
    // A late reply finds nothing to approve.
    let late = ShadowEvent::PermissionReply { request_id: "permission-0".to_owned(), allowed: true, remember: false };
    main.call(late).await.expect("delivered");
    assert_eq!(main.state().await.expect("state"), ShadowState::Done);
    assert_eq!(h.file("hello.txt"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_in_executing_tool_lets_the_current_tool_complete() {
    let rules = [("run_command", Permission::Allow), ("write_file", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    main.send(ShadowEvent::UserInput("sleep a little".to_owned())).await.expect("sent");
    let running = h.until_state("main", "ExecutingTool").await;
    assert_eq!(
        running,
        ShadowState::ExecutingTool { tool_name: "run_command".to_owned(), tool_use_id: "toolu_1".to_owned() }
    );
    main.interrupt("Esc").await.expect("interrupted");
    assert_eq!(h.until_state("main", "Done").await, ShadowState::Done);

    // The running command completed; the call after it never ran.
    assert_eq!(h.file("slept.txt").as_deref(), Some("slept\n"));
    assert_eq!(h.file("after.txt"), None);
    assert_eq!(conversation(&main).await[2..], [ok("toolu_1", "slept\n"), err("toolu_2", INTERRUPTED), interrupted()]);
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    assert_eq!(
        hops(&history)[hops(&history).len() - 3..],
        [
            ("Processing", Some("LlmEvent"), "ExecutingTool", Some("ExecuteTool")),
            // The interrupt left the tool's task running (it was spawned to
            // survive one): the configured interrupt event is the only
            // word of it the machine gets...
            ("ExecutingTool", Some("Interrupt"), "ExecutingTool", Some("InterruptAfterCurrentTool")),
            // ...and the tool's own result follows.
            ("ExecutingTool", Some("ToolResult"), "Done", Some("Interrupted")),
        ]
    );
    assert_eq!(states(&history), ["Idle", "Processing", "ExecutingTool", "Done"]);
    assert_eq!(history.interrupts().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn interrupt_in_waiting_for_user_input_ends_in_done() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    main.send(ShadowEvent::UserInput("ask me about the button".to_owned())).await.expect("sent");
    h.until_state("main", "WaitingForUserInput").await;
    main.interrupt("Esc").await.expect("interrupted");

    assert_eq!(main.state().await.expect("state"), ShadowState::Done);
    assert_eq!(conversation(&main).await[2..], [err("toolu_1", INTERRUPTED), interrupted()]);
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert_eq!(states(&history), ["Idle", "Processing", "WaitingForUserInput", "Done"]);
}

#[tokio::test(start_paused = true)]
async fn interrupt_in_waiting_for_subagent_is_passed_on_to_the_child() {
    let rules = [("Task", Permission::Allow), ("read_file", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    main.send(ShadowEvent::UserInput("delegate the summary".to_owned())).await.expect("sent");
    h.until_state("main/toolu_1", "Processing").await;
    assert_eq!(
        main.state().await.expect("state"),
        ShadowState::WaitingForSubAgent { session_id: "main/toolu_1".to_owned() }
    );
    main.interrupt("Esc").await.expect("interrupted");
    assert_eq!(h.until_state("main", "Done").await, ShadowState::Done);

    // The child was interrupted too, then shut down and unregistered.
    assert!(h.outputs("main/toolu_1").any(|o| o == &Output::Interrupted));
    assert_eq!(h.published("main/toolu_1"), ["Processing", "Done"]);
    assert_eq!(h.runtime.sessions(), ["main"]);
    assert_eq!(conversation(&main).await[2..], [err("toolu_1", INTERRUPTED), interrupted()]);
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    let wait = "WaitingForSubAgent";
    assert_eq!(
        hops(&history)[hops(&history).len() - 3..],
        [
            (wait, Some("Interrupt"), wait, Some("InterruptSubAgent")),
            (wait, Some("Interrupt"), wait, Some("InterruptSubAgent")),
            (wait, Some("SubAgentFinished"), "Done", Some("Interrupted")),
        ]
    );
    assert_eq!(states(&history), ["Idle", "Processing", "ExecutingTool", wait, "Done"]);
}

#[tokio::test(start_paused = true)]
async fn interrupt_in_done_and_in_error_changes_nothing() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    // Done: after a denial.
    h.turn(&main, "write hello.txt", Policy { allow: false, ..APPROVE }).await;
    main.interrupt("Esc").await.expect("interrupted");
    assert_eq!(main.state().await.expect("state"), ShadowState::Done);
    // Error: the model fails.
    let failed = h.turn(&main, "attempt the impossible", APPROVE).await;
    let error = ShadowState::Error { message: "LLM call failed: server overloaded: scripted model".to_owned() };
    assert_eq!(failed, error);
    main.interrupt("Esc").await.expect("interrupted");
    assert_eq!(main.state().await.expect("state"), error, "the error stays until new input");
    // New input leaves Error.
    assert_eq!(h.turn(&main, "hello", APPROVE).await, ShadowState::Idle);
    assert_eq!(h.outputs("main").filter(|o| *o == &Output::NothingToInterrupt).count(), 2);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert!(hops(&history).contains(&("Done", Some("Interrupt"), "Done", Some("NothingToInterrupt"))));
    assert!(hops(&history).contains(&("Error", Some("Interrupt"), "Error", Some("NothingToInterrupt"))));
    assert_eq!(
        states(&history),
        ["Idle", "Processing", "WaitingForPermission", "Done", "Processing", "Error", "Processing", "Idle"]
    );
}

// ------------------------------------------------------------ input mid-turn

#[tokio::test(start_paused = true)]
async fn input_sent_while_the_turn_runs_waits_in_the_inbox_and_runs_after() {
    let rules = [("read_file", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    main.send(ShadowEvent::UserInput("compare a.txt and b.txt".to_owned())).await.expect("sent");
    h.until_state("main", "Processing").await;
    // Sent while the model streams: held by the executor's inbox.
    main.send(ShadowEvent::UserInput("hello".to_owned())).await.expect("sent");
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);

    assert_eq!(
        h.responses("main"),
        ["a.txt says \"alpha\" and b.txt says \"beta\".", "Hello! I can write, compare, delegate, ask and run things."]
    );
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    assert_eq!(
        states(&history),
        [
            "Idle",
            "Processing",
            "ExecutingTool",
            "Processing",
            "ExecutingTool",
            "Processing",
            "Idle",
            "Processing",
            "Idle"
        ]
    );
    assert!(hops(&history).iter().all(|hop| hop.3 != Some("DeferInput")), "it never reached the machine mid-turn");
}

#[tokio::test(start_paused = true)]
async fn input_sent_while_waiting_for_permission_is_deferred_then_run() {
    let mut h = Harness::new();
    let main = h.spawn(&[]);
    main.send(ShadowEvent::UserInput("write hello.txt".to_owned())).await.expect("sent");
    let asked = h.until(|u| matches!(u.output, Output::PermissionRequested { .. })).await;
    // Nothing is in flight while the agent waits: the input reaches the
    // machine, which hands it back; the effects keep it.
    main.send(ShadowEvent::UserInput("hello".to_owned())).await.expect("sent");
    let deferred = h.until(|u| matches!(u.output, Output::InputDeferred(_))).await;
    assert_eq!(deferred.output, Output::InputDeferred("hello".to_owned()));
    assert_eq!(main.state().await.expect("state").name(), "WaitingForPermission");

    let Output::PermissionRequested { request_id, .. } = asked.output else { unreachable!("matched") };
    main.send(ShadowEvent::PermissionReply { request_id, allowed: true, remember: false }).await.expect("sent");
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);
    // The deferred input starts the next turn by itself.
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);

    assert_eq!(h.responses("main"), ["Wrote hello.txt.", "Hello! I can write, compare, delegate, ask and run things."]);
    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&[])).await;
    assert!(hops(&history).contains(&(
        "WaitingForPermission",
        Some("UserInput"),
        "WaitingForPermission",
        Some("DeferInput")
    )));
    assert_eq!(
        states(&history),
        ["Idle", "Processing", "WaitingForPermission", "ExecutingTool", "Processing", "Idle", "Processing", "Idle"]
    );
    let messages = conversation(&main).await;
    let users: Vec<&Message> = messages.iter().filter(|m| matches!(m, Message::User { .. })).collect();
    assert_eq!(users, [&Message::user("write hello.txt"), &Message::user("hello")]);
}

// --------------------------------------------------------------- subagents

#[tokio::test(start_paused = true)]
async fn a_failing_subagent_becomes_the_parents_error() {
    let rules = [("Task", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    let failed = h.turn(&main, "delegate the impossible", APPROVE).await;
    let message = "subagent `main/toolu_1` failed: LLM call failed: server overloaded: scripted model";
    assert_eq!(failed, ShadowState::Error { message: message.to_owned() });
    assert_eq!(h.published("main/toolu_1"), ["Processing", "Error", "Done"]);
    assert_eq!(conversation(&main).await[2], err("toolu_1", message));
    assert_eq!(h.runtime.sessions(), ["main"]);
    // New input leaves Error.
    assert_eq!(h.turn(&main, "hello", APPROVE).await, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    assert_eq!(
        states(&history),
        ["Idle", "Processing", "ExecutingTool", "WaitingForSubAgent", "Error", "Processing", "Idle"]
    );
}

#[tokio::test(start_paused = true)]
async fn the_runtime_finds_a_running_child_whose_permission_is_answered_through_its_handle() {
    // `read_file` asks, in the parent and so in the child.
    let rules = [("Task", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    main.send(ShadowEvent::UserInput("delegate the summary".to_owned())).await.expect("sent");
    let asked = h.until(|u| matches!(u.output, Output::PermissionRequested { .. })).await;
    assert_eq!(&*asked.session_id, "main/toolu_1", "the child asks");

    let child = h.runtime.get("main/toolu_1").expect("the child's handle while it runs");
    assert_eq!(h.runtime.sessions(), ["main", "main/toolu_1"]);
    assert_eq!(
        child.state().await.expect("state"),
        ShadowState::WaitingForPermission {
            tool_name: "read_file".to_owned(),
            tool_use_id: "toolu_1".to_owned(),
            input: json!({ "path": "CHANGELOG.md" }),
            request_id: "permission-0".to_owned(),
        }
    );
    assert_eq!(
        main.state().await.expect("state"),
        ShadowState::WaitingForSubAgent { session_id: "main/toolu_1".to_owned() }
    );
    let reply = ShadowEvent::PermissionReply { request_id: "permission-0".to_owned(), allowed: true, remember: false };
    child.send(reply).await.expect("sent");
    assert_eq!(h.settle("main", APPROVE).await, ShadowState::Idle);

    assert_eq!(
        h.published("main/toolu_1"),
        ["Processing", "WaitingForPermission", "ExecutingTool", "Processing", "Idle", "Done"]
    );
    assert!(child.is_finished(), "the parent shut its child down");
    assert!(h.runtime.get("main/toolu_1").is_none());
    assert_eq!(h.runtime.sessions(), ["main"]);
}

#[tokio::test(start_paused = true)]
async fn a_subagent_that_outlives_its_timeout_is_stopped_and_fails_the_parent() {
    let config = AgentRuntime::default_config()
        .action_timeout(agent_fsm_examples::shadow::machine::ActionKind::SpawnSubAgent, Duration::from_secs(5));
    let rules = [("Task", Permission::Allow)];
    let mut h = Harness::with_config(config);
    let main = h.spawn(&rules);
    main.send(ShadowEvent::UserInput("delegate the summary".to_owned())).await.expect("sent");
    // The child asks for `read_file`; nobody answers.
    let asked = h.until(|u| matches!(u.output, Output::PermissionRequested { .. })).await;
    assert_eq!(&*asked.session_id, "main/toolu_1");
    let child = h.runtime.get("main/toolu_1").expect("running");

    let failed = h.until_state("main", "Error").await;
    let message = "subagent `main/toolu_1` failed: the subagent timed out";
    assert_eq!(failed, ShadowState::Error { message: message.to_owned() });
    assert_eq!(child.wait_finished().await.expect("stopped"), agent_fsm_examples::shadow::machine::StateKind::Done);
    assert!(h.runtime.get("main/toolu_1").is_none());
    assert_eq!(h.runtime.sessions(), ["main"]);
}

#[tokio::test(start_paused = true)]
async fn a_session_id_in_use_is_refused() {
    let h = Harness::new();
    let _main = h.spawn(&[]);
    assert!(matches!(h.runtime.spawn("main", &[]), Err(SpawnError::SessionTaken(id)) if id == "main"));
    let outcomes = h.runtime.shutdown_all().await;
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].0, "main");
    assert_eq!(outcomes[0].1.as_ref().ok(), Some(&agent_fsm_examples::shadow::machine::StateKind::Done));
    assert!(h.runtime.spawn("main", &[]).is_ok(), "free again once stopped");
}

// -------------------------------------------------------------- subscriber

#[tokio::test(start_paused = true)]
async fn a_subscriber_sees_every_state_change_with_its_json() {
    let h = Harness::new();
    let main = h.spawn(&[]);
    let mut notifications = main.subscribe();
    main.send(ShadowEvent::UserInput("write hello.txt".to_owned())).await.expect("sent");

    let mut seen = Vec::new();
    loop {
        let n = tokio::time::timeout(WAIT, notifications.recv()).await.expect("in time").expect("open");
        seen.push(n.clone());
        match n {
            Notification::Output(Output::PermissionRequested { request_id, .. }) => {
                let reply = ShadowEvent::PermissionReply { request_id, allowed: true, remember: false };
                main.send(reply).await.expect("sent");
            }
            Notification::Output(Output::StateChanged { state: ShadowState::Idle, .. }) => break,
            Notification::Lagged(missed) => panic!("lagged by {missed}"),
            _ => {}
        }
    }

    // Every hop that changed the state is followed by its state, with
    // data, before anything else changes.
    let mut changes = Vec::new();
    let mut pending: Option<&'static str> = None;
    for n in &seen {
        match n {
            Notification::Transition(step) if step.from != step.to => {
                assert_eq!(pending, None, "a change without its state");
                pending = Some(step.to.name());
            }
            Notification::Output(Output::StateChanged { from, state, .. }) => {
                assert_eq!(pending.take(), Some(state.name()));
                changes.push((*from, serde_json::to_string(state).expect("serializes")));
            }
            _ => {}
        }
    }
    assert_eq!(pending, None);
    assert_eq!(
        changes,
        [
            ("Idle", r#"{"state":"processing"}"#.to_owned()),
            (
                "Processing",
                r#"{"state":"waiting_for_permission","data":{"tool_name":"write_file","tool_use_id":"toolu_1","input":{"content":"hello from Shadow\n","path":"hello.txt"},"request_id":"permission-0"}}"#
                    .to_owned()
            ),
            (
                "WaitingForPermission",
                r#"{"state":"executing_tool","data":{"tool_name":"write_file","tool_use_id":"toolu_1"}}"#.to_owned()
            ),
            ("ExecutingTool", r#"{"state":"processing"}"#.to_owned()),
            ("Processing", r#"{"state":"idle"}"#.to_owned()),
        ]
    );
    // What a UI polling the handle reads is the same JSON.
    let polled = serde_json::to_value(main.state().await.expect("state")).expect("serializes");
    assert_eq!(polled, json!({ "state": "idle" }));
    // The streamed text came through as outputs, in order.
    let text: String = seen
        .iter()
        .filter_map(|n| match n {
            Notification::Output(Output::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Writing hello.txt.Wrote hello.txt.");
}

// ------------------------------------------------------------- the example

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_release_session_runs_end_to_end() {
    let rules = [("read_file", Permission::Allow), ("Task", Permission::Allow)];
    let mut h = Harness::new();
    let main = h.spawn(&rules);
    let prompt = "Draft the release notes";
    let rested = h.turn(&main, prompt, Policy { allow: true, remember: true, answer: "1.2.0" }).await;
    assert_eq!(rested, ShadowState::Idle);

    let history = assert_history_is_the_tables_path(&mut h, &main, main_context(&rules)).await;
    assert_eq!(
        states(&history),
        [
            "Idle",
            "Processing",
            "WaitingForPermission", // write_file asks; approved and remembered
            "ExecutingTool",
            "Processing",
            "ExecutingTool", // read_file: allowed by rule
            "Processing",
            "ExecutingTool", // Task
            "WaitingForSubAgent",
            "Processing",
            "WaitingForUserInput",
            "Processing",
            "ExecutingTool", // write_file: remembered
            "Processing",
            "WaitingForPermission", // run_command asks
            "ExecutingTool",
            "Processing",
            "Idle",
        ]
    );
    assert_eq!(h.published("main/toolu_3"), ["Processing", "ExecutingTool", "Processing", "Idle", "Done"]);
    let asked: Vec<String> = h
        .seen
        .iter()
        .filter_map(|u| match &u.output {
            Output::PermissionRequested { call: ToolCall { name, .. }, .. } => Some(format!("{}:{name}", u.session_id)),
            _ => None,
        })
        .collect();
    assert_eq!(asked, ["main:write_file", "main:run_command"]);
    let summary = "CHANGELOG.md lists 3 changes, the latest: Subagents run as child machines.";
    assert_eq!(h.file("NOTES.md"), Some(format!("# Release notes for 1.2.0\n\n{summary}\n")));
    assert_eq!(h.responses("main"), ["Release notes for 1.2.0 are in NOTES.md (3 lines)."]);
    let permissions = main.inspect(|m| m.context().permissions.clone()).await.expect("inspect");
    assert_eq!(permissions.get("write_file"), Some(&Permission::Allow));
    assert_eq!(permissions.get("run_command"), Some(&Permission::Allow));

    let outcomes = h.runtime.shutdown_all().await;
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].1.as_ref().ok(), Some(&agent_fsm_examples::shadow::machine::StateKind::Done));
}
