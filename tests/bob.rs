//! bob's typestate runner: the typed and dynamic forms agree, snapshots
//! taken at every step resume to the same outcome, and tampered snapshots
//! are rejected with typed errors.

use agent_fsm::StateKindOf;
use agent_fsm::snapshot::{self, SnapshotError};
use agent_fsm_examples::bob::*;
use proptest::prelude::*;

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "write_note".into(),
        arguments: serde_json::json!({ "note": format!("note {id}") }),
    }
}

/// The id of approval request number `n`, about the call `id`.
fn aid(n: u64, id: &str) -> String {
    agent_fsm_examples::bob::request_id(n, &call(id))
}

fn ctx() -> RunnerContext {
    RunnerContext::new("write two notes", 4)
}

/// One session: tools, an approval of two calls in reverse order, an answer.
fn session() -> Vec<RunnerEvent> {
    vec![
        RunnerEvent::Infer(call_tools(vec![call("1"), call("2")])),
        RunnerEvent::RequireApproval,
        RunnerEvent::Approve { request_id: aid(1, "2") },
        RunnerEvent::Approve { request_id: aid(0, "1") },
        RunnerEvent::ProvideToolResults(vec![
            ToolResult { call_id: "1".into(), content: "ok".into(), is_error: false },
            ToolResult { call_id: "2".into(), content: "ok".into(), is_error: false },
        ]),
        RunnerEvent::Infer(answer("two notes written")),
    ]
}

#[test]
fn session_reaches_the_answer() {
    let mut m = Runner::new(ctx());
    let actions: Vec<RunnerAction> = session().into_iter().map(|e| m.handle_event(e)).collect();
    assert_eq!(actions[2], RunnerAction::Nothing);
    assert_eq!(actions[3], RunnerAction::RunTools(vec![call("1"), call("2")]));
    assert_eq!(actions.last(), Some(&RunnerAction::Respond("two notes written".into())));
    assert_eq!(
        m.state(),
        &RunnerState::Finished { response: "two notes written".into(), reason: FinishReason::Answered }
    );
    assert_eq!(m.context().steps_taken, 2);
    assert_eq!(m.context().transcript.len(), 2);
}

#[test]
fn a_reply_for_another_request_is_rejected_not_applied() {
    let mut m = Runner::new(ctx());
    m.handle_event(RunnerEvent::Infer(call_tools(vec![call("1")])));
    m.handle_event(RunnerEvent::RequireApproval);
    let before = m.state().clone();
    let action = m.handle_event(RunnerEvent::Approve { request_id: "approve-9".into() });
    assert_eq!(action, RunnerAction::RejectReply("no pending approval `approve-9`".into()));
    assert_eq!(m.state(), &before);
    let action = m.handle_event(RunnerEvent::Deny { request_id: "approve-9".into() });
    assert_eq!(action, RunnerAction::RejectReply("no pending approval `approve-9`".into()));
    assert_eq!(m.state(), &before);
}

#[test]
fn an_empty_tool_call_list_is_an_empty_answer() {
    let mut m = Runner::new(ctx());
    let action = m.handle_event(RunnerEvent::Infer(call_tools(vec![])));
    assert_eq!(action, RunnerAction::Respond(String::new()));
    assert_eq!(m.state(), &RunnerState::Finished { response: String::new(), reason: FinishReason::Answered });
}

#[test]
fn a_reply_that_repeats_a_call_id_runs_nothing() {
    let mut m = Runner::new(ctx());
    let harmless = call("1");
    let other = ToolCall { arguments: serde_json::json!({ "note": "rm -rf /" }), ..call("1") };
    let action = m.handle_event(RunnerEvent::Infer(call_tools(vec![harmless, other])));
    assert_eq!(action, RunnerAction::Respond(String::new()));
    assert_eq!(m.state(), &RunnerState::Finished { response: String::new(), reason: FinishReason::RepeatedCallId });
    // The state the table reached resumes from its snapshot.
    let json = snapshot::to_json(&m).expect("snapshot");
    let resumed: Runner = snapshot::from_json(&json).expect("resume");
    assert_eq!(resumed.state(), m.state());
}

#[test]
fn the_step_guard_finishes_the_run() {
    let mut m = Runner::new(RunnerContext::new("loop forever", 1));
    m.handle_event(RunnerEvent::Infer(call_tools(vec![call("1")])));
    m.handle_event(RunnerEvent::ProvideToolResults(vec![]));
    let action = m.handle_event(RunnerEvent::Infer(call_tools(vec![call("2")])));
    assert_eq!(action, RunnerAction::Respond(String::new()));
    assert_eq!(m.state(), &RunnerState::Finished { response: String::new(), reason: FinishReason::MaxSteps });
}

#[test]
fn states_serialize_in_the_documented_form() {
    let json = serde_json::to_value(RunnerState::Ready).expect("serializes");
    assert_eq!(json, serde_json::json!({ "state": "ready" }));
    let json =
        serde_json::to_value(RunnerState::AwaitingToolCall { pending_calls: vec![call("1")] }).expect("serializes");
    assert_eq!(
        json,
        serde_json::json!({
            "state": "awaiting_tool_call",
            "data": { "pending_calls": [{ "id": "1", "name": "write_note", "arguments": { "note": "note 1" } }] }
        })
    );
}

#[test]
fn a_snapshot_at_every_step_resumes_to_the_same_answer() {
    let events = session();
    let mut reference = Runner::new(ctx());
    for e in events.clone() {
        reference.handle_event(e);
    }
    for split in 0..=events.len() {
        let mut m = Runner::new(ctx());
        for e in events[..split].iter().cloned() {
            m.handle_event(e);
        }
        let json = snapshot::to_json(&m).expect("snapshot");
        // A fresh machine, as in another process.
        let mut resumed: Runner = snapshot::from_json(&json).expect("resume");
        assert_eq!(resumed.state(), m.state(), "after {split} steps");
        for e in events[split..].iter().cloned() {
            resumed.handle_event(e);
        }
        assert_eq!(resumed.state(), reference.state(), "resumed after {split} steps");
        assert_eq!(resumed.context(), reference.context());
    }
}

#[test]
fn the_typestate_form_snapshots_too() {
    let ready = typed::Ready::new(ctx());
    let (awaiting, _) = match ready.infer(call_tools(vec![call("1")])) {
        typed::ReadyAfterInfer::AwaitingToolCall(a, action) => (a, action),
        other => panic!("unexpected {other:?}"),
    };
    let json = snapshot::to_json(&awaiting.into_machine()).expect("snapshot");
    let machine: Runner = snapshot::from_json(&json).expect("resume");
    let awaiting = typed::AwaitingToolCall::try_from(machine).expect("still awaiting tools");
    assert_eq!(awaiting.pending_calls(), &[call("1")]);
}

fn waiting_snapshot() -> serde_json::Value {
    let mut m = Runner::new(ctx());
    m.handle_event(RunnerEvent::Infer(call_tools(vec![call("1")])));
    m.handle_event(RunnerEvent::RequireApproval);
    serde_json::from_str(&snapshot::to_json(&m).expect("snapshot")).expect("json")
}

fn resume(v: &serde_json::Value) -> Result<Runner, SnapshotError<StateKindOf<Runner>>> {
    snapshot::from_json(&v.to_string())
}

#[test]
fn tampered_snapshots_are_rejected() {
    assert!(resume(&waiting_snapshot()).is_ok());

    let mut unknown = waiting_snapshot();
    unknown["state"]["state"] = "sleeping".into();
    assert!(matches!(resume(&unknown), Err(SnapshotError::UnknownState(s)) if s == "sleeping"));

    let mut wrong_type = waiting_snapshot();
    wrong_type["context"]["steps_taken"] = "many".into();
    assert!(matches!(resume(&wrong_type), Err(SnapshotError::Data(_))));

    let mut mismatched = waiting_snapshot();
    mismatched["state"]["data"]["approvals"][0]["request_id"] = "approval-7".into();
    let err = resume(&mismatched).expect_err("a request id not issued");
    assert!(
        matches!(
            &err,
            SnapshotError::Invariant { state: agent_fsm_examples::bob::machine::StateKind::AwaitingApproval, .. }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("not a request id the machine issued"), "{err}");

    let mut extra = waiting_snapshot();
    extra["state"]["data"]["log"] = serde_json::json!(["from another machine"]);
    assert!(matches!(resume(&extra), Err(SnapshotError::Data(_))));

    let mut other = waiting_snapshot();
    other["machine"] = "Loom".into();
    assert!(matches!(resume(&other), Err(SnapshotError::WrongMachine { found, .. }) if found == "Loom"));

    assert!(matches!(snapshot::from_json::<Runner>("not json"), Err(SnapshotError::Data(_))));
}

fn event() -> impl Strategy<Value = RunnerEvent> {
    let id = prop_oneof![Just("1"), Just("2"), Just("3")];
    prop_oneof![
        Just(RunnerEvent::Infer(answer("done"))),
        proptest::collection::vec(id.clone(), 1..3)
            .prop_map(|ids| RunnerEvent::Infer(call_tools(ids.into_iter().map(call).collect()))),
        Just(RunnerEvent::ProvideToolResults(vec![ToolResult {
            call_id: "1".into(),
            content: "ok".into(),
            is_error: false
        }])),
        Just(RunnerEvent::RequireApproval),
        (0..3u64, id.clone()).prop_map(|(i, c)| RunnerEvent::Approve { request_id: aid(i, c) }),
        (0..3u64, id).prop_map(|(i, c)| RunnerEvent::Deny { request_id: aid(i, c) }),
        Just(RunnerEvent::Cancel),
    ]
}

/// Steps the typed view with one event, if its state has that method.
fn typed_step(any: typed::Any, e: RunnerEvent) -> (typed::Any, Option<RunnerAction>) {
    use typed::Any;
    macro_rules! land {
        ($next:ident, $res:expr, [$($v:ident),*]) => {
            match $res { $(typed::$next::$v(s, a) => (Any::$v(s), Some(a)),)* }
        };
    }
    match (any, e) {
        (Any::Ready(s), RunnerEvent::Infer(r)) => land!(ReadyAfterInfer, s.infer(r), [AwaitingToolCall, Finished]),
        (Any::Ready(s), RunnerEvent::Cancel) => {
            let (f, a) = s.cancel();
            (Any::Finished(f), Some(a))
        }
        (Any::AwaitingToolCall(s), RunnerEvent::ProvideToolResults(r)) => {
            let (n, a) = s.provide_tool_results(r);
            (Any::Ready(n), Some(a))
        }
        (Any::AwaitingToolCall(s), RunnerEvent::RequireApproval) => {
            land!(AwaitingToolCallAfterRequireApproval, s.require_approval(), [AwaitingApproval, Finished])
        }
        (Any::AwaitingToolCall(s), RunnerEvent::Cancel) => {
            let (f, a) = s.cancel();
            (Any::Finished(f), Some(a))
        }
        (Any::AwaitingApproval(s), RunnerEvent::Approve { request_id }) => {
            land!(AwaitingApprovalAfterApprove, s.approve(request_id), [AwaitingToolCall, AwaitingApproval])
        }
        (Any::AwaitingApproval(s), RunnerEvent::Deny { request_id }) => {
            land!(AwaitingApprovalAfterDeny, s.deny(request_id), [AwaitingApproval, Finished])
        }
        (Any::AwaitingApproval(s), RunnerEvent::Cancel) => {
            let (f, a) = s.cancel();
            (Any::Finished(f), Some(a))
        }
        // No method for this pair: the typed view cannot take the step.
        (any, _) => (any, None),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn typed_and_dynamic_forms_agree(events in proptest::collection::vec(event(), 0..24)) {
        let mut dynamic = Runner::new(ctx());
        let mut typed = typed::Any::Ready(typed::Ready::new(ctx()));
        for e in events {
            let (next, typed_action) = typed_step(typed, e.clone());
            typed = next;
            match typed_action {
                Some(a) => prop_assert_eq!(a, dynamic.handle_event(e)),
                // The typed view has no method for the pair: the table has no
                // row for it either, so the dynamic machine falls back.
                None => {
                    let before = dynamic.state().clone();
                    prop_assert_eq!(dynamic.handle_event(e), RunnerAction::Nothing);
                    prop_assert_eq!(dynamic.state(), &before);
                }
            }
            prop_assert_eq!(typed.name(), dynamic.state().name());
        }
        let back = typed.into_machine();
        prop_assert_eq!(back.state(), dynamic.state());
        prop_assert_eq!(back.context(), dynamic.context());
    }
}

/// Under the executor, a run waiting for approval pauses until the replies
/// come through the handle, and several pending approvals are answered
/// independently, in any order; in the next round the tools wait for
/// approval again, and a reply kept from the first round approves nothing.
#[tokio::test(start_paused = true)]
async fn the_executor_waits_for_approvals_sent_through_the_handle() {
    use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, Notification, spawn};

    /// Every tool needs approval: a `RunTools` that no `AskApproval`
    /// preceded asks for it, the one after approval runs the tools and
    /// clears the flag, so the next round asks again. The answers
    /// themselves come from outside, through the handle.
    struct Auto {
        asked: bool,
    }
    impl Effects<Runner> for Auto {
        type Output = Vec<Approval>;
        fn perform(&mut self, action: RunnerAction, cx: &mut EffectContext<'_, Runner, Vec<Approval>>) {
            match action {
                RunnerAction::RunTools(_) if !self.asked => cx.send(RunnerEvent::RequireApproval),
                RunnerAction::RunTools(calls) => {
                    self.asked = false;
                    cx.send(RunnerEvent::ProvideToolResults(
                        calls
                            .into_iter()
                            .map(|c| ToolResult { call_id: c.id, content: "ok".into(), is_error: false })
                            .collect(),
                    ));
                }
                RunnerAction::AskApproval(approvals) => {
                    self.asked = true;
                    cx.output(approvals);
                }
                _ => {}
            }
        }
    }

    async fn asked(notes: &mut agent_fsm::runtime::Subscription<Runner, Vec<Approval>>) -> Vec<String> {
        loop {
            match notes.recv().await {
                Some(Notification::Output(approvals)) => break approvals.into_iter().map(|a| a.request_id).collect(),
                Some(_) => {}
                None => panic!("no approval request was published"),
            }
        }
    }

    let run = async {
        let handle = spawn(Runner::new(ctx()), Auto { asked: false }, ExecutorConfig::new());
        let mut notes = handle.subscribe();
        handle.send(RunnerEvent::Infer(call_tools(vec![call("1"), call("2")]))).await.expect("send");
        handle.wait_idle().await.expect("idle");
        // Paused: nothing moves until a human answers.
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        assert_eq!(handle.status().to_string(), "AwaitingApproval");
        assert_eq!(asked(&mut notes).await, [aid(0, "1"), aid(1, "2")]);

        // A reply for another request changes nothing.
        handle.send(RunnerEvent::Approve { request_id: "approve-9".into() }).await.expect("send");
        handle.wait_idle().await.expect("idle");
        assert_eq!(handle.status().to_string(), "AwaitingApproval");

        // Answered out of order, each on its own.
        handle.send(RunnerEvent::Approve { request_id: aid(1, "2") }).await.expect("send");
        handle.wait_idle().await.expect("idle");
        assert_eq!(handle.status().to_string(), "AwaitingApproval");
        handle.send(RunnerEvent::Approve { request_id: aid(0, "1") }).await.expect("send");
        handle.wait_idle().await.expect("idle");
        // Both approved: the tools ran and the runner is ready for the model.
        assert_eq!(handle.state().await.expect("state"), RunnerState::Ready);
        assert_eq!(handle.inspect(|m| m.context().transcript.len()).await.expect("transcript"), 2);

        // The next round, with the same call id, waits for its own request.
        handle.send(RunnerEvent::Infer(call_tools(vec![call("1")]))).await.expect("send");
        handle.wait_idle().await.expect("idle");
        assert_eq!(handle.status().to_string(), "AwaitingApproval");
        assert_eq!(asked(&mut notes).await, [aid(2, "1")]);
        handle.send(RunnerEvent::Approve { request_id: aid(0, "1") }).await.expect("send");
        handle.wait_idle().await.expect("idle");
        assert_eq!(handle.status().to_string(), "AwaitingApproval");
        handle.send(RunnerEvent::Approve { request_id: aid(2, "1") }).await.expect("send");
        handle.wait_idle().await.expect("idle");
        assert_eq!(handle.state().await.expect("state"), RunnerState::Ready);
        assert_eq!(handle.inspect(|m| m.context().transcript.len()).await.expect("transcript"), 3);
        handle.shutdown().await.expect("shutdown");
    };
    tokio::time::timeout(std::time::Duration::from_secs(600), run).await.expect("the run ends in time");
}
