//! bob's approvals cannot be bypassed: whatever the model's call ids and
//! whatever replies arrive (repeated, stale, early, guessed), a tool runs
//! only after a reply to its own request approved it, live or resumed from
//! a snapshot (taken at any step, or tampered with as a model's repeated
//! ids would).
//!
//! The test keeps its own ledger and never reads the machine's approval
//! bookkeeping: each call is known by a unique input the test wrote, each
//! request issued is recorded with the call it asked about, and each reply
//! the test sends names the request it answers. The policy is that every
//! tool needs approval, so the calls run are those of a `RunTools` taken
//! out of `AwaitingApproval`; each must match, in order, the calls of the
//! round's requests, every one approved by a reply sent to it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, spawn};
use agent_fsm::snapshot::{self, SnapshotError};
use agent_fsm_examples::bob::*;
use proptest::prelude::*;

/// One move of the test against the machine.
#[derive(Debug, Clone)]
enum Move {
    /// The model asks for calls with these ids (ids repeat freely).
    Calls(Vec<&'static str>),
    /// The model answers.
    Answer,
    /// The runner asks for the approvals of the pending calls.
    RequireApproval,
    /// An approval or denial sent to the nth request issued so far (modulo
    /// their number): repeated and stale replies are ones sent again or to
    /// an old request.
    Reply { to: usize, allow: bool },
    /// A reply with an id no request of the test was issued (yet).
    Guess(&'static str),
    /// The tools' results for the pending calls.
    Results,
    /// Cancel.
    Cancel,
    /// The machine is snapshotted and resumed.
    Resume,
    /// The machine is snapshotted, every call id in its state set to the
    /// first one (a model that repeated an id), and resumed if accepted.
    CollideIds,
}

fn moves() -> impl Strategy<Value = Move> {
    let id = prop_oneof![Just("a"), Just("b")];
    let guess = prop_oneof![
        Just("approve-a"),
        Just("approve-b"),
        Just("a"),
        Just("approval-0"),
        Just("approval-1"),
        Just("approval-2"),
        Just("0"),
        Just("1"),
    ];
    prop_oneof![
        3 => proptest::collection::vec(id, 1..3).prop_map(Move::Calls),
        1 => Just(Move::Answer),
        3 => Just(Move::RequireApproval),
        6 => (0..4usize, proptest::bool::weighted(0.8)).prop_map(|(to, allow)| Move::Reply { to, allow }),
        1 => guess.prop_map(Move::Guess),
        3 => Just(Move::Results),
        1 => Just(Move::Cancel),
        2 => Just(Move::Resume),
        2 => Just(Move::CollideIds),
    ]
}

/// A request the machine issued, as the test saw it.
#[derive(Debug)]
struct Request {
    id: String,
    /// The input of the call it asks about (unique per call).
    call: String,
    /// A reply approving it was sent to it.
    approved: bool,
}

/// The test's own record of requests and replies.
#[derive(Debug, Default)]
struct Ledger {
    /// Every request issued, in order.
    requests: Vec<Request>,
    /// The requests of the latest `AskApproval`, by index in `requests`.
    round: Vec<usize>,
    /// Calls made up so far, for unique inputs.
    calls: usize,
}

impl Ledger {
    fn call(&mut self, id: &str) -> ToolCall {
        self.calls += 1;
        ToolCall {
            id: id.to_owned(),
            name: "rm".into(),
            arguments: serde_json::json!({ "input": format!("call #{}", self.calls) }),
        }
    }

    /// Reads an action, after a step from `from`; `Err` names a tool run
    /// without its own approval.
    fn observe(&mut self, from: &str, action: &RunnerAction) -> Result<(), String> {
        match action {
            RunnerAction::AskApproval(approvals) => {
                self.round = approvals
                    .iter()
                    .map(|a| {
                        self.requests.push(Request {
                            id: a.request_id.clone(),
                            call: a.call.arguments["input"].to_string(),
                            approved: false,
                        });
                        self.requests.len() - 1
                    })
                    .collect();
            }
            RunnerAction::RunTools(calls) if from == "AwaitingApproval" => {
                let asked: Vec<&Request> = self.round.iter().map(|&i| &self.requests[i]).collect();
                let ran: Vec<String> = calls.iter().map(|c| c.arguments["input"].to_string()).collect();
                let approved: Vec<String> = asked.iter().filter(|r| r.approved).map(|r| r.call.clone()).collect();
                if ran != approved || asked.iter().any(|r| !r.approved) {
                    return Err(format!("ran {ran:?}; requests of the round {asked:?}"));
                }
                self.round.clear();
            }
            _ => {}
        }
        Ok(())
    }
}

fn pending_results(state: &RunnerState) -> Vec<ToolResult> {
    match state {
        RunnerState::AwaitingToolCall { pending_calls } => pending_calls
            .iter()
            .map(|c| ToolResult { call_id: c.id.clone(), content: "ok".into(), is_error: false })
            .collect(),
        _ => Vec::new(),
    }
}

/// Every call id in a snapshot's state set to the first one.
fn collide_ids(json: &str) -> Option<String> {
    let mut value: serde_json::Value = serde_json::from_str(json).ok()?;
    let data = value.get_mut("state")?.get_mut("data")?.as_object_mut()?;
    let mut calls: Vec<&mut serde_json::Value> = Vec::new();
    for (key, items) in data.iter_mut() {
        let Some(items) = items.as_array_mut() else { continue };
        match key.as_str() {
            "pending_calls" => calls.extend(items.iter_mut()),
            "approvals" => calls.extend(items.iter_mut().filter_map(|a| a.get_mut("call"))),
            _ => {}
        }
    }
    let first = calls.first()?.get("id")?.clone();
    for call in calls {
        call["id"] = first.clone();
    }
    Some(value.to_string())
}

/// Plays `moves` against a fresh machine; `Err` on a tool run without its
/// own approval.
fn play(moves: Vec<Move>) -> Result<(), String> {
    let mut machine = Runner::new(RunnerContext::new("clean up", 6));
    let mut ledger = Ledger::default();
    for m in moves {
        let event = match m {
            Move::Calls(ids) => RunnerEvent::Infer(call_tools(ids.into_iter().map(|id| ledger.call(id)).collect())),
            Move::Answer => RunnerEvent::Infer(answer("done")),
            Move::RequireApproval => RunnerEvent::RequireApproval,
            Move::Reply { to, allow } => {
                if ledger.requests.is_empty() {
                    continue;
                }
                let i = to % ledger.requests.len();
                let request_id = ledger.requests[i].id.clone();
                if allow {
                    ledger.requests[i].approved = true;
                    RunnerEvent::Approve { request_id }
                } else {
                    RunnerEvent::Deny { request_id }
                }
            }
            Move::Guess(id) => {
                // A guessed id that names an issued request is a reply to it.
                if ledger.requests.iter().any(|r| r.id == id) {
                    continue;
                }
                RunnerEvent::Approve { request_id: id.to_owned() }
            }
            Move::Results => RunnerEvent::ProvideToolResults(pending_results(machine.state())),
            Move::Cancel => RunnerEvent::Cancel,
            Move::Resume => {
                let json = snapshot::to_json(&machine).map_err(|e| e.to_string())?;
                machine = snapshot::from_json(&json).map_err(|e| format!("own snapshot refused: {e}"))?;
                continue;
            }
            Move::CollideIds => {
                let json = snapshot::to_json(&machine).map_err(|e| e.to_string())?;
                if let Some(resumed) = collide_ids(&json).and_then(|j| snapshot::from_json::<Runner>(&j).ok()) {
                    machine = resumed;
                }
                continue;
            }
        };
        let from = machine.state().name();
        let action = machine.handle_event(event);
        ledger.observe(from, &action)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Live and resumed, no tool runs without a reply to its own request.
    #[test]
    fn no_tool_runs_without_its_own_approval(moves in proptest::collection::vec(moves(), 0..40)) {
        if let Err(why) = play(moves) {
            prop_assert!(false, "{}", why);
        }
    }
}

/// The cases the property found on ids the model chose, kept as plain
/// tests.
#[test]
fn a_stale_approval_does_not_approve_a_new_call_that_reuses_the_id() {
    use Move::*;
    let moves = vec![
        Calls(vec!["a"]),
        RequireApproval,
        Reply { to: 0, allow: true },
        Results,
        Calls(vec!["a"]),
        RequireApproval,
        Reply { to: 0, allow: true },
    ];
    assert_eq!(play(moves), Ok(()));
}

#[test]
fn one_approval_delivered_twice_does_not_run_two_calls_of_a_resumed_snapshot() {
    use Move::*;
    let moves = vec![
        Calls(vec!["a", "b"]),
        CollideIds,
        RequireApproval,
        Reply { to: 0, allow: true },
        Reply { to: 0, allow: true },
    ];
    assert_eq!(play(moves), Ok(()));
}

// ================================================================ executor

/// What the executor-driven runner saw, shared with the test.
#[derive(Debug, Default)]
struct Seen {
    ledger: Ledger,
    /// An `AskApproval` came and its `RunTools` has not.
    asked: bool,
    violations: Vec<String>,
}

/// Every tool needs approval: a `RunTools` no `AskApproval` preceded asks
/// for it; the one after approval is a run, checked against the ledger.
#[derive(Debug)]
struct Driver(Arc<Mutex<Seen>>);

impl Effects<Runner> for Driver {
    type Output = ();
    fn perform(&mut self, action: RunnerAction, cx: &mut EffectContext<'_, Runner, ()>) {
        let mut seen = self.0.lock().expect("not poisoned");
        match &action {
            RunnerAction::RunTools(_) if !seen.asked => cx.send(RunnerEvent::RequireApproval),
            RunnerAction::RunTools(calls) => {
                seen.asked = false;
                if let Err(why) = seen.ledger.observe("AwaitingApproval", &action) {
                    seen.violations.push(why);
                }
                cx.send(RunnerEvent::ProvideToolResults(
                    calls
                        .iter()
                        .map(|c| ToolResult { call_id: c.id.clone(), content: "ok".into(), is_error: false })
                        .collect(),
                ));
            }
            RunnerAction::AskApproval(_) => {
                seen.asked = true;
                // Ok: an `AskApproval` is never a violation.
                let _ = seen.ledger.observe("AwaitingToolCall", &action);
            }
            _ => {}
        }
    }
}

/// What the test does through the handle.
#[derive(Debug, Clone)]
enum HandleMove {
    /// The model asks for calls with these ids.
    Calls(Vec<&'static str>),
    /// Replies to requests issued so far, sent at once from several tasks.
    Replies(Vec<(usize, bool)>),
    /// A reply with an id no request was issued.
    Guess(&'static str),
    /// Cancel.
    Cancel,
}

fn handle_moves() -> impl Strategy<Value = HandleMove> {
    let id = prop_oneof![Just("a"), Just("b")];
    prop_oneof![
        2 => proptest::collection::vec(id, 1..3).prop_map(HandleMove::Calls),
        4 => proptest::collection::vec((0..4usize, proptest::bool::weighted(0.85)), 1..4).prop_map(HandleMove::Replies),
        1 => prop_oneof![Just("approve-a"), Just("approval-0"), Just("approval-3")].prop_map(HandleMove::Guess),
        1 => Just(HandleMove::Cancel),
    ]
}

/// Plays `moves` through an executor's handle under paused time.
async fn play_through_handle(moves: Vec<HandleMove>) -> Vec<String> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let handle =
        spawn(Runner::new(RunnerContext::new("clean up", 6)), Driver(Arc::clone(&seen)), ExecutorConfig::new());
    for m in moves {
        let events = {
            let mut seen = seen.lock().expect("not poisoned");
            let ledger = &mut seen.ledger;
            match m {
                HandleMove::Calls(ids) => {
                    vec![RunnerEvent::Infer(call_tools(ids.into_iter().map(|id| ledger.call(id)).collect()))]
                }
                HandleMove::Replies(replies) if !ledger.requests.is_empty() => replies
                    .into_iter()
                    .map(|(to, allow)| {
                        let i = to % ledger.requests.len();
                        let request_id = ledger.requests[i].id.clone();
                        // Marked before it is sent: the run it allows
                        // may come before this task looks again.
                        ledger.requests[i].approved |= allow;
                        if allow { RunnerEvent::Approve { request_id } } else { RunnerEvent::Deny { request_id } }
                    })
                    .collect(),
                HandleMove::Replies(_) => Vec::new(),
                HandleMove::Guess(id) if ledger.requests.iter().any(|r| r.id == id) => Vec::new(),
                HandleMove::Guess(id) => vec![RunnerEvent::Approve { request_id: id.to_owned() }],
                HandleMove::Cancel => vec![RunnerEvent::Cancel],
            }
        };
        let sends: Vec<_> = events
            .into_iter()
            .map(|event| {
                let handle = handle.clone();
                tokio::spawn(async move { handle.send(event).await })
            })
            .collect();
        for send in sends {
            // Err: the run finished and the worker stopped taking events.
            let _ = send.await.expect("the send task ran");
        }
        if handle.wait_idle().await.is_err() {
            break;
        }
    }
    // Ok or Err, the worker is done with the events.
    let _ = handle.shutdown().await;
    std::mem::take(&mut seen.lock().expect("not poisoned").violations)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Through the executor's handle, with replies sent concurrently, no
    /// tool runs without a reply to its own request.
    #[test]
    fn through_the_handle_no_tool_runs_without_its_own_approval(
        moves in proptest::collection::vec(handle_moves(), 0..16)
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
        let violations = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(600), play_through_handle(moves)).await })
            .expect("the run ends in time");
        prop_assert!(violations.is_empty(), "{:?}", violations);
    }
}

/// The counter's last ids: issued while there are enough for every call,
/// then the run finishes rather than issue one twice.
#[test]
fn a_spent_counter_finishes_the_run_instead_of_reusing_an_id() {
    let mut context = RunnerContext::new("edge", 4);
    context.next_request = u64::MAX - 2;
    let mut machine = Runner::new(context);
    let rm = |id: &str| ToolCall {
        id: id.into(),
        name: "rm".into(),
        arguments: serde_json::json!({ "input": String::new() }),
    };
    let calls = |ids: &[&str]| RunnerEvent::Infer(call_tools(ids.iter().map(|id| rm(id)).collect()));
    machine.handle_event(calls(&["a", "b"]));
    let RunnerAction::AskApproval(approvals) = machine.handle_event(RunnerEvent::RequireApproval) else {
        panic!("{:?}", machine.state());
    };
    let ids: Vec<String> = approvals.into_iter().map(|a| a.request_id).collect();
    assert_eq!(ids, [request_id(u64::MAX - 2, &rm("a")), request_id(u64::MAX - 1, &rm("b"))]);
    assert_eq!(machine.context().next_request, u64::MAX);
    for id in ids {
        machine.handle_event(RunnerEvent::Approve { request_id: id });
    }
    machine.handle_event(RunnerEvent::ProvideToolResults(Vec::new()));
    machine.handle_event(calls(&["c"]));
    assert_eq!(machine.handle_event(RunnerEvent::RequireApproval), RunnerAction::Respond(String::new()));
    assert_eq!(
        machine.state(),
        &RunnerState::Finished { response: String::new(), reason: FinishReason::OutOfRequestIds }
    );
}

/// A snapshot taken while one approval waits.
fn waiting_snapshot() -> serde_json::Value {
    let mut m = Runner::new(RunnerContext::new("notes", 4));
    let call = ToolCall { id: "1".into(), name: "rm".into(), arguments: serde_json::json!({ "input": String::new() }) };
    m.handle_event(RunnerEvent::Infer(call_tools(vec![call])));
    m.handle_event(RunnerEvent::RequireApproval);
    serde_json::from_str(&snapshot::to_json(&m).expect("snapshot")).expect("json")
}

fn resume(v: &serde_json::Value) -> Result<Runner, SnapshotError<agent_fsm::StateKindOf<Runner>>> {
    snapshot::from_json(&v.to_string())
}

/// Every state a snapshot can name is held to what a live run reaches.
#[test]
fn snapshots_that_break_the_invariants_are_refused() {
    assert!(resume(&waiting_snapshot()).is_ok());
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "rm".into(),
        arguments: serde_json::json!({ "input": String::new() }),
    };

    // The counter wound back to the last id issued would issue it again.
    let mut wound_back = waiting_snapshot();
    wound_back["context"]["next_request"] = 0.into();
    let err = resume(&wound_back).expect_err("a counter that would issue an id twice");
    assert!(err.to_string().contains("not a request id the machine issued"), "{err}");

    // Nothing left to approve, no calls to run, two calls of one id.
    let mut all_approved = waiting_snapshot();
    all_approved["state"]["data"]["approvals"][0]["approved"] = true.into();
    assert!(matches!(resume(&all_approved), Err(SnapshotError::Invariant { .. })));
    let awaiting = |calls: serde_json::Value| {
        let mut v = waiting_snapshot();
        v["state"] = serde_json::json!({ "state": "awaiting_tool_call", "data": { "pending_calls": calls } });
        resume(&v)
    };
    let one = serde_json::to_value(call("1")).expect("json");
    assert!(awaiting(serde_json::json!([one.clone()])).is_ok());
    assert!(matches!(awaiting(serde_json::json!([])), Err(SnapshotError::Invariant { .. })));
    assert!(matches!(awaiting(serde_json::json!([one.clone(), one])), Err(SnapshotError::Invariant { .. })));

    // As many steps as allowed is a state a run reaches; one more is not.
    let mut at_the_limit = waiting_snapshot();
    at_the_limit["context"]["steps_taken"] = 4.into();
    assert!(resume(&at_the_limit).is_ok());
    at_the_limit["context"]["steps_taken"] = 5.into();
    assert!(matches!(resume(&at_the_limit), Err(SnapshotError::Invariant { .. })));
}
