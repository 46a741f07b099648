//! Shadow's permission requests cannot be bypassed: whatever the model's
//! `tool_use_id`s and whatever replies arrive (repeated, stale, early,
//! guessed), a tool whose rule is `Ask` runs only after a reply to its own
//! request allowed it, live or resumed from a snapshot (taken at any step,
//! or tampered with as a model's repeated ids would).
//!
//! The test keeps its own ledger and never reads the machine's
//! bookkeeping: each call is known by a unique input the test wrote, each
//! permission request is recorded with the call it asked about, and each
//! reply names the request it answers. Every tool asks; a run
//! (`ExecuteTool`) must be of a call whose own request an allowing reply
//! was sent to, one run per request. The same holds of a running agent
//! with real tools, replies sent concurrently through its handle: every
//! tool it starts and every file in its workspace is checked. Beside the
//! properties: the repeated-id refusal, the snapshot invariants and the
//! request counter's end.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_fsm::llm::{StopReason, Usage};
use agent_fsm::snapshot;
use agent_fsm_examples::coding_agent::Workspace;
use agent_fsm_examples::shadow::*;
use agent_fsm_examples::shadow_agent::{AgentRuntime, Llm, Output};
use futures::StreamExt;
use futures::stream::BoxStream;
use proptest::prelude::*;
use serde_json::json;

/// The model's whole reply, as a provider's stream ends.
fn completed(message: AssistantMessage) -> ShadowEvent {
    ShadowEvent::LlmEvent(StreamEvent::Completed { message, stop_reason: StopReason::ToolUse, usage: Usage::default() })
}

/// One move of the test against the machine.
#[derive(Debug, Clone)]
enum Move {
    /// The user starts a turn.
    Input,
    /// The model replies with these calls: an id (ids repeat freely) and
    /// whether the call is the question tool.
    Reply(Vec<(&'static str, bool)>),
    /// A permission reply to the nth request issued so far (modulo their
    /// number): repeated and stale replies are ones sent again or to an
    /// old request. A denial may be remembered; an approval is not, so
    /// that every run needs a reply of its own.
    Permission { to: usize, allow: bool, remember: bool },
    /// A permission reply with an id no request of the test was issued.
    Guess(&'static str),
    /// An answer to the nth question asked so far.
    Answer(usize),
    /// The running tool's result, `Ok` or `Err`.
    ToolResult(bool),
    /// The user interrupts.
    Interrupt,
    /// The agent shuts down.
    Shutdown,
    /// The machine is snapshotted and resumed.
    Resume,
    /// The machine is snapshotted, every call id in its turn and state set
    /// to the first one (a model that repeated an id), and resumed if
    /// accepted.
    CollideIds,
}

fn moves() -> impl Strategy<Value = Move> {
    let id = prop_oneof![Just("t1"), Just("t2")];
    let call = (id, proptest::bool::weighted(0.15));
    let guess = prop_oneof![Just("t1"), Just("t2"), Just("permission-0"), Just("permission-1"), Just("request-2")];
    prop_oneof![
        2 => Just(Move::Input),
        3 => proptest::collection::vec(call, 1..4).prop_map(Move::Reply),
        6 => (0..4usize, proptest::bool::weighted(0.8), any::<bool>())
            .prop_map(|(to, allow, remember)| Move::Permission { to, allow, remember: remember && !allow }),
        1 => guess.prop_map(Move::Guess),
        1 => (0..3usize).prop_map(Move::Answer),
        4 => proptest::bool::weighted(0.9).prop_map(Move::ToolResult),
        1 => Just(Move::Interrupt),
        1 => Just(Move::Shutdown),
        2 => Just(Move::Resume),
        2 => Just(Move::CollideIds),
    ]
}

/// A request the machine issued, as the test saw it.
#[derive(Debug)]
struct Request {
    id: String,
    /// The input of the call it asks about (unique per call).
    call: serde_json::Value,
    /// An allowing reply was sent to it.
    allowed: bool,
    /// A run was justified by it.
    used: bool,
}

/// The test's own record of requests, questions and replies.
#[derive(Debug, Default)]
struct Ledger {
    permissions: Vec<Request>,
    questions: Vec<String>,
    /// The id of the last call run, for its result.
    running: Option<String>,
    calls: usize,
}

/// The permission request an action makes: its id and its call.
fn permission_request(action: &ShadowAction) -> Option<(String, ToolCall)> {
    match action {
        ShadowAction::RequestPermission { request_id, call } => Some((request_id.clone(), call.clone())),
        _ => None,
    }
}

impl Ledger {
    fn call(&mut self, id: &str, question: bool) -> ToolCall {
        self.calls += 1;
        let name = if question { "AskUserQuestion" } else { "write_file" };
        ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: json!({ "n": self.calls }) }
    }

    /// Reads an action; `Err` names a tool run without its own approval.
    fn observe(&mut self, action: &ShadowAction) -> Result<(), String> {
        if let Some((id, call)) = permission_request(action) {
            self.permissions.push(Request { id, call: call.arguments, allowed: false, used: false });
        }
        match action {
            ShadowAction::AskUser { request_id, .. } => self.questions.push(request_id.clone()),
            ShadowAction::ExecuteTool(call) => {
                self.running = Some(call.id.clone());
                let own = self.permissions.iter_mut().find(|r| r.call == call.arguments && r.allowed && !r.used);
                match own {
                    Some(request) => request.used = true,
                    None => return Err(format!("ran {call:?} without an allowing reply to its own request: {self:?}")),
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Every call id in a snapshot's turn and state set to the first one.
fn collide_ids(json: &str) -> Option<String> {
    let mut value: serde_json::Value = serde_json::from_str(json).ok()?;
    let turn = value.get("context")?.get("turn")?;
    let first =
        turn.get("current").filter(|c| !c.is_null()).or_else(|| turn.get("pending")?.get(0))?.get("id")?.clone();
    let turn = value.get_mut("context")?.get_mut("turn")?.as_object_mut()?;
    for (key, item) in turn.iter_mut() {
        match (key.as_str(), item) {
            ("current", serde_json::Value::Object(call)) => {
                call.insert("id".into(), first.clone());
            }
            ("pending" | "results", serde_json::Value::Array(items)) => {
                for item in items.iter_mut().filter_map(serde_json::Value::as_object_mut) {
                    let key = if item.contains_key("call_id") { "call_id" } else { "id" };
                    item.insert(key.into(), first.clone());
                }
            }
            _ => {}
        }
    }
    if let Some(data) = value.get_mut("state").and_then(|s| s.get_mut("data")).and_then(|d| d.as_object_mut())
        && data.contains_key("tool_use_id")
    {
        data.insert("tool_use_id".into(), first);
    }
    Some(value.to_string())
}

/// Plays `moves` against a fresh machine; `Err` on a tool run without its
/// own approval.
fn play(moves: Vec<Move>) -> Result<(), String> {
    let mut machine = Shadow::new(ShadowContext::new("main"));
    let mut ledger = Ledger::default();
    for m in moves {
        let event = match m {
            Move::Input => ShadowEvent::UserInput("go".into()),
            Move::Reply(calls) => completed(AssistantMessage {
                text: String::new(),
                tool_calls: calls.into_iter().map(|(id, question)| ledger.call(id, question)).collect(),
                ..Default::default()
            }),
            Move::Permission { to, allow, remember } => {
                if ledger.permissions.is_empty() {
                    continue;
                }
                let count = ledger.permissions.len();
                let request = &mut ledger.permissions[to % count];
                request.allowed |= allow;
                ShadowEvent::PermissionReply { request_id: request.id.clone(), allowed: allow, remember }
            }
            Move::Guess(id) => {
                if ledger.permissions.iter().any(|r| r.id == id) {
                    continue;
                }
                ShadowEvent::PermissionReply { request_id: id.to_owned(), allowed: true, remember: true }
            }
            Move::Answer(to) => {
                if ledger.questions.is_empty() {
                    continue;
                }
                let request_id = ledger.questions[to % ledger.questions.len()].clone();
                ShadowEvent::QuestionAnswered { request_id, answers: vec!["yes".into()] }
            }
            Move::ToolResult(ok) => {
                let Some(tool_use_id) = ledger.running.clone() else { continue };
                let result = if ok { Ok("done".to_owned()) } else { Err("failed".to_owned()) };
                ShadowEvent::ToolResult { tool_use_id, result }
            }
            Move::Interrupt => ShadowEvent::Interrupt,
            Move::Shutdown => ShadowEvent::Shutdown,
            Move::Resume => {
                let json = snapshot::to_json(&machine).map_err(|e| e.to_string())?;
                machine = snapshot::from_json(&json).map_err(|e| format!("own snapshot refused: {e}"))?;
                continue;
            }
            Move::CollideIds => {
                let json = snapshot::to_json(&machine).map_err(|e| e.to_string())?;
                if let Some(resumed) = collide_ids(&json).and_then(|j| snapshot::from_json::<Shadow>(&j).ok()) {
                    machine = resumed;
                }
                continue;
            }
        };
        let action = machine.handle_event(event);
        ledger.observe(&action)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Live and resumed, no tool runs without a reply to its own request.
    #[test]
    fn no_tool_runs_without_its_own_permission(moves in proptest::collection::vec(moves(), 0..40)) {
        if let Err(why) = play(moves) {
            prop_assert!(false, "{}", why);
        }
    }
}

/// The case the issue reported: two calls share an id, and one allowing
/// reply delivered twice would run both.
#[test]
fn one_reply_delivered_twice_does_not_run_two_calls_that_share_an_id() {
    use Move::*;
    let moves = vec![
        Input,
        Reply(vec![("t1", false), ("t1", false)]),
        Permission { to: 0, allow: true, remember: false },
        ToolResult(true),
        Permission { to: 0, allow: true, remember: false },
    ];
    assert_eq!(play(moves), Ok(()));
}

/// A reply whose calls share an id runs nothing and is not recorded.
#[test]
fn a_reply_that_repeats_a_call_id_is_refused_on_entry() {
    let mut machine = Shadow::new(ShadowContext::new("main"));
    machine.handle_event(ShadowEvent::UserInput("go".into()));
    let calls = vec![
        ToolCall { id: "t1".into(), name: "write_file".into(), arguments: json!({ "n": 1 }) },
        ToolCall { id: "t1".into(), name: "run_command".into(), arguments: json!({ "n": 2 }) },
    ];
    let action =
        machine.handle_event(completed(AssistantMessage { text: "x".into(), tool_calls: calls, ..Default::default() }));
    let message = "the model repeated the tool call id `t1`; no tool ran";
    assert_eq!(action, ShadowAction::ReportError(message.into()));
    assert_eq!(machine.state(), &ShadowState::Error { message: message.into() });
    assert_eq!(machine.context().conversation, [Message::user("go")]);
    assert_eq!(machine.context().turn, Turn::default());
}

/// A snapshot taken while a permission request waits.
fn waiting() -> serde_json::Value {
    let mut machine = Shadow::new(ShadowContext::new("main"));
    machine.handle_event(ShadowEvent::UserInput("go".into()));
    let calls = vec![
        ToolCall { id: "t1".into(), name: "write_file".into(), arguments: json!({ "n": 1 }) },
        ToolCall { id: "t2".into(), name: "write_file".into(), arguments: json!({ "n": 2 }) },
    ];
    machine.handle_event(completed(AssistantMessage { text: String::new(), tool_calls: calls, ..Default::default() }));
    serde_json::from_str(&snapshot::to_json(&machine).expect("snapshot")).expect("json")
}

#[test]
fn snapshots_that_break_the_invariants_are_refused() {
    let resume = |v: &serde_json::Value| snapshot::from_json::<Shadow>(&v.to_string()).map(|_| ());
    assert!(resume(&waiting()).is_ok());
    type Tamper = fn(&mut serde_json::Value);
    let tampered: Vec<(&str, Tamper)> = vec![
        ("a request id the counter did not issue", |v| v["state"]["data"]["request_id"] = json!("permission-1")),
        ("the model's id as the request's", |v| v["state"]["data"]["request_id"] = json!("t1")),
        ("a request number written two ways", |v| v["state"]["data"]["request_id"] = json!("permission-00")),
        ("a request id about another call", |v| {
            let t2 = ToolCall { id: "t2".into(), name: "write_file".into(), arguments: json!({ "n": 2 }) };
            v["state"]["data"]["request_id"] = json!(request_id(PERMISSION, 0, &t2));
        }),
        ("a counter wound back", |v| v["context"]["next_request"] = json!(0)),
        ("two calls of one id", |v| v["context"]["turn"]["pending"][0]["id"] = json!("t1")),
        ("a state naming another call", |v| v["state"]["data"]["tool_use_id"] = json!("t2")),
        ("another input than the call's", |v| v["state"]["data"]["input"] = json!({ "n": 9 })),
        ("no current call", |v| v["context"]["turn"]["current"] = json!(null)),
        ("a turn at rest", |v| v["state"] = json!({ "state": "idle" })),
        ("an interrupt with nothing running", |v| v["context"]["interrupt_requested"] = json!(true)),
    ];
    for (what, tamper) in tampered {
        let mut v = waiting();
        tamper(&mut v);
        let err = resume(&v).expect_err(what);
        assert!(matches!(err, snapshot::SnapshotError::Invariant { .. }), "{what}: {err}");
    }
}

#[test]
fn a_spent_counter_answers_a_call_that_would_ask_instead_of_reusing_an_id() {
    let mut context = ShadowContext::new("main");
    context.next_request = u64::MAX - 1;
    let mut machine = Shadow::new(context);
    machine.handle_event(ShadowEvent::UserInput("go".into()));
    let calls = vec![
        ToolCall { id: "t1".into(), name: "write_file".into(), arguments: json!({ "n": 1 }) },
        ToolCall { id: "t2".into(), name: "write_file".into(), arguments: json!({ "n": 2 }) },
    ];
    let action = machine.handle_event(completed(AssistantMessage {
        text: String::new(),
        tool_calls: calls,
        ..Default::default()
    }));
    let ShadowAction::RequestPermission { request_id, .. } = action else { panic!("{action:?}") };
    let t1 = ToolCall { id: "t1".into(), name: "write_file".into(), arguments: json!({ "n": 1 }) };
    assert_eq!(request_id, agent_fsm_examples::shadow::request_id(PERMISSION, u64::MAX - 1, &t1));
    assert_eq!(machine.context().next_request, u64::MAX);
    // The last id stays unissued: the second call is answered, not asked.
    let json = snapshot::to_json(&machine).expect("snapshot");
    let mut machine: Shadow = snapshot::from_json(&json).expect("resumes");
    machine.handle_event(ShadowEvent::PermissionReply { request_id, allowed: true, remember: false });
    let action = machine.handle_event(ShadowEvent::ToolResult { tool_use_id: "t1".into(), result: Ok("ok".into()) });
    let ShadowAction::CallLlm(results) = action else { panic!("{action:?}") };
    assert_eq!(results[1], Message::tool_error("t2", "Not run: no request id is left to ask about `write_file`"));
}

// =================================================================== agent

/// A model that answers each call with the next reply of its queue, then
/// with a plain answer.
#[derive(Debug, Clone, Default)]
struct QueuedLlm(Arc<Mutex<VecDeque<AssistantMessage>>>);

impl Llm for QueuedLlm {
    fn stream(&self, _conversation: &[Message]) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let next = self.0.lock().expect("not poisoned").pop_front();
        let reply = next.unwrap_or_else(|| AssistantMessage {
            text: "done".into(),
            tool_calls: Vec::new(),
            ..Default::default()
        });
        let ShadowEvent::LlmEvent(completed) = completed(reply) else { unreachable!("a completed reply") };
        futures::stream::iter([Ok(completed)]).boxed()
    }
}

/// What the test does to a running agent.
#[derive(Debug, Clone)]
enum AgentMove {
    /// The user asks; the model answers with `write_file` calls of these
    /// ids (ids repeat freely), each writing a file named after the call.
    Turn(Vec<&'static str>),
    /// Permission replies to requests issued so far, sent at once from
    /// several tasks.
    Replies(Vec<(usize, bool)>),
    /// A permission reply with an id no request was issued.
    Guess(&'static str),
    /// The user interrupts through the handle.
    Interrupt,
}

fn agent_moves() -> impl Strategy<Value = AgentMove> {
    let id = prop_oneof![Just("toolu_1"), Just("toolu_2")];
    prop_oneof![
        2 => proptest::collection::vec(id, 1..4).prop_map(AgentMove::Turn),
        4 => proptest::collection::vec((0..4usize, proptest::bool::weighted(0.85)), 1..4).prop_map(AgentMove::Replies),
        1 => prop_oneof![Just("toolu_1"), Just("permission-0"), Just("permission-5")].prop_map(AgentMove::Guess),
        1 => Just(AgentMove::Interrupt),
    ]
}

/// A request the agent published: its id, the file its call writes, and
/// whether an allowing reply was sent to it.
#[derive(Debug)]
struct Asked {
    id: String,
    file: String,
    allowed: bool,
    used: bool,
}

/// The file a `write_file` call writes.
fn file_of(call: &ToolCall) -> String {
    call.arguments.get("path").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned()
}

/// Plays `moves` against an agent with real tools in a fresh workspace;
/// returns every violation: a tool started, or a file written, without an
/// allowing reply to its own request.
async fn play_agent(moves: Vec<AgentMove>) -> Vec<String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let llm = QueuedLlm::default();
    let runtime = AgentRuntime::new(llm.clone(), Workspace::new(dir.path()));
    let mut updates = runtime.subscribe();
    let agent = runtime.spawn("main", &[]).expect("spawned");
    let (mut asked, mut violations, mut calls) = (Vec::<Asked>::new(), Vec::new(), 0);
    for m in moves {
        let events = match m {
            AgentMove::Turn(ids) => {
                let tool_calls = ids
                    .into_iter()
                    .map(|id| {
                        calls += 1;
                        let path = format!("ran-{calls}.txt");
                        ToolCall {
                            id: id.to_owned(),
                            name: "write_file".into(),
                            arguments: json!({ "path": path, "content": "x" }),
                        }
                    })
                    .collect();
                llm.0.lock().expect("not poisoned").push_back(AssistantMessage {
                    text: String::new(),
                    tool_calls,
                    ..Default::default()
                });
                vec![ShadowEvent::UserInput("go".into())]
            }
            AgentMove::Replies(replies) if !asked.is_empty() => replies
                .into_iter()
                .map(|(to, allowed)| {
                    let count = asked.len();
                    let request = &mut asked[to % count];
                    // Marked before it is sent: the run it allows may come
                    // before this task looks again.
                    request.allowed |= allowed;
                    ShadowEvent::PermissionReply { request_id: request.id.clone(), allowed, remember: false }
                })
                .collect(),
            AgentMove::Replies(_) => Vec::new(),
            AgentMove::Guess(id) if asked.iter().any(|r| r.id == id) => Vec::new(),
            AgentMove::Guess(id) => {
                vec![ShadowEvent::PermissionReply { request_id: id.to_owned(), allowed: true, remember: false }]
            }
            AgentMove::Interrupt => {
                // Err: nothing to interrupt, or the agent stopped.
                let _ = agent.interrupt("the test").await;
                Vec::new()
            }
        };
        let sends: Vec<_> = events
            .into_iter()
            .map(|event| {
                let agent = agent.clone();
                tokio::spawn(async move { agent.send(event).await })
            })
            .collect();
        for send in sends {
            // Err: the agent stopped taking events.
            let _ = send.await.expect("the send task ran");
        }
        if agent.wait_idle().await.is_err() {
            break;
        }
        while let Ok(update) = updates.try_recv() {
            match update.output {
                Output::PermissionRequested { request_id, call } => {
                    asked.push(Asked { id: request_id, file: file_of(&call), allowed: false, used: false });
                }
                Output::ToolStarted(call) => {
                    let file = file_of(&call);
                    match asked.iter_mut().find(|r| r.file == file && r.allowed && !r.used) {
                        Some(request) => request.used = true,
                        None => violations.push(format!("{file} started without its own approval")),
                    }
                }
                _ => {}
            }
        }
    }
    // Ok or Err, the agent is stopped now.
    let _ = runtime.shutdown_all().await;
    for entry in std::fs::read_dir(dir.path()).expect("workspace").flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if !asked.iter().any(|r| r.file == file && r.allowed) {
            violations.push(format!("{file} written without its own approval"));
        }
    }
    violations
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Through the agent's handle, with real tools and replies sent
    /// concurrently, no tool runs (and no file is written) without an
    /// allowing reply to its own request.
    #[test]
    fn an_agent_runs_no_tool_without_its_own_permission(moves in proptest::collection::vec(agent_moves(), 0..12)) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a runtime");
        let violations = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(600), play_agent(moves)).await })
            .expect("the session ends in time");
        prop_assert!(violations.is_empty(), "{:?}", violations);
    }
}
