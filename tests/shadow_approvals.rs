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
//! was sent to, one run per request.

use agent_fsm::snapshot;
use agent_fsm_examples::shadow::*;
use proptest::prelude::*;
use serde_json::json;

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
        ToolCall { id: id.to_owned(), name: name.to_owned(), input: json!({ "n": self.calls }) }
    }

    /// Reads an action; `Err` names a tool run without its own approval.
    fn observe(&mut self, action: &ShadowAction) -> Result<(), String> {
        if let Some((id, call)) = permission_request(action) {
            self.permissions.push(Request { id, call: call.input, allowed: false, used: false });
        }
        match action {
            ShadowAction::AskUser { request_id, .. } => self.questions.push(request_id.clone()),
            ShadowAction::ExecuteTool(call) => {
                self.running = Some(call.id.clone());
                let own = self.permissions.iter_mut().find(|r| r.call == call.input && r.allowed && !r.used);
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
                    let key = if item.contains_key("tool_use_id") { "tool_use_id" } else { "id" };
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
            Move::Reply(calls) => ShadowEvent::LlmReply(AssistantReply {
                text: String::new(),
                tool_calls: calls.into_iter().map(|(id, question)| ledger.call(id, question)).collect(),
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
