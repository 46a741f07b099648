//! The fleet's demo agent in one process: driven by its effects to `Done`
//! with an approval sent for each call that waits, it ends with a ledger
//! holding each event once; a second approval or a result for a call not
//! running is recorded as a stray, never applied.

use std::sync::Arc;
use std::time::Duration;

use agent_fsm::runtime::ExecutorConfig;
use agent_fsm::store::{Durable, MemoryStore, restore};
use agent_fsm_examples::fleet_agent::{
    Action, Applied, Call, Event, FleetAgent, FleetEffects, Ledger, Plan, Probe, State,
};

fn ledger(state: &State) -> &Ledger {
    state.ledger()
}

#[tokio::test(start_paused = true)]
async fn the_tool_loop_ends_done_with_each_approval_and_result_once() {
    let plan = Plan { turns: 3, calls_per_turn: 2, approve_every: 3 };
    let store = Arc::new(MemoryStore::new());
    let durable = Durable::new(store.clone(), "a1");
    let probe = Probe::new();
    let effects = FleetEffects::default().with_probe(probe.clone());
    let (handle, _) = durable.spawn(|| FleetAgent::new(plan), effects, ExecutorConfig::new()).expect("spawns");
    handle.send(Event::Begin { task: "sort the files".into() }).await.expect("sends");
    let mut sent = 0;
    let run = async {
        loop {
            // At the end the worker is gone: waiting for idle says so.
            if handle.wait_idle().await.is_err() || handle.is_finished() {
                break;
            }
            match handle.state().await {
                Ok(State::AwaitingApproval { .. }) => {
                    sent += 1;
                    handle.send(Event::Approved { id: format!("ap{sent}"), request: sent }).await.expect("sends");
                }
                Ok(other) => panic!("idle in {other:?}"),
                Err(_) => break,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), run).await.expect("the run ends");
    handle.wait_finished().await.expect("finishes");

    let restored = restore::<FleetAgent, _>(&*store, "a1").expect("restores");
    let state = restored.machine.state();
    assert!(matches!(state, State::Done { .. }), "{state:?}");
    assert_eq!(restored.next_seq - 1, plan.steps());
    assert_eq!(plan.steps(), 12);
    let ledger = ledger(state);
    assert_eq!(ledger.task.as_deref(), Some("sort the files"));
    assert_eq!(
        ledger.approvals,
        vec![Applied { id: "ap1".into(), call: "t1.c0".into() }, Applied { id: "ap2".into(), call: "t2.c1".into() },]
    );
    let calls: Vec<String> = plan.calls().into_iter().map(|c| c.id).collect();
    assert_eq!(ledger.tools, calls);
    assert!(ledger.strays.is_empty(), "{:?}", ledger.strays);
    // One wait measured per task: a model reply per turn, a run per call.
    assert_eq!(probe.take().len(), 3 + 6);
    assert!(probe.take().is_empty(), "taken");
}

#[test]
fn the_plan_lists_its_calls_and_steps() {
    let plan = Plan { turns: 2, calls_per_turn: 3, approve_every: 2 };
    let ids: Vec<(String, bool)> = plan.calls().into_iter().map(|c| (c.id, c.needs_approval)).collect();
    let want =
        [("t0.c0", false), ("t0.c1", true), ("t0.c2", false), ("t1.c0", true), ("t1.c1", false), ("t1.c2", true)];
    assert_eq!(ids, want.map(|(id, a)| (id.to_owned(), a)).to_vec());
    assert_eq!(plan.approvals(), 3);
    assert_eq!(plan.steps(), 1 + 2 + 6 + 3);
    assert_eq!(Plan { approve_every: 0, ..plan }.approvals(), 0);
    assert_eq!(Plan::default().steps(), 12);
}

#[test]
fn events_nothing_waits_for_are_strays() {
    let plan = Plan { turns: 1, calls_per_turn: 1, approve_every: 1 };
    let mut m = FleetAgent::new(plan);
    m.handle_event(Event::Approved { id: "early".into(), request: 1 });
    m.handle_event(Event::Begin { task: "x".into() });
    m.handle_event(Event::Begin { task: "again".into() });
    let call = Call { id: "t0.c0".into(), needs_approval: true };
    m.handle_event(Event::Replied { turn: 0, calls: vec![call] });
    assert!(matches!(m.state(), State::AwaitingApproval { .. }));
    m.handle_event(Event::Approved { id: "ok".into(), request: 1 });
    m.handle_event(Event::Approved { id: "twice".into(), request: 1 });
    m.handle_event(Event::ToolDone { call: "other".into(), output: String::new() });
    m.handle_event(Event::ToolDone { call: "t0.c0".into(), output: String::new() });
    assert!(matches!(m.state(), State::Done { .. }), "{:?}", m.state());
    let ledger = m.state().ledger();
    assert_eq!(ledger.approvals, vec![Applied { id: "ok".into(), call: "t0.c0".into() }]);
    assert_eq!(ledger.tools, vec!["t0.c0".to_owned()]);
    assert_eq!(ledger.strays, vec!["Approved early", "Begin again", "Approved twice", "ToolDone other"]);
}

/// An approval releases only the call of the request it names: the first
/// request's approval sent again, or one for a request not made yet, leaves
/// the second call waiting.
#[test]
fn an_approval_for_another_request_releases_nothing() {
    let plan = Plan { turns: 1, calls_per_turn: 2, approve_every: 1 };
    let mut m = FleetAgent::new(plan);
    m.handle_event(Event::Begin { task: "x".into() });
    let action = m.handle_event(Event::Replied { turn: 0, calls: plan.turn(0) });
    assert_eq!(action, Action::AwaitApproval { call: "t0.c0".into(), request: 1 });
    assert_eq!(m.handle_event(Event::Approved { id: "later".into(), request: 2 }), Action::Nothing);
    assert!(matches!(m.state(), State::AwaitingApproval { .. }), "not released by a later request's approval");
    assert!(matches!(m.handle_event(Event::Approved { id: "first".into(), request: 1 }), Action::RunTool(_)));
    let action = m.handle_event(Event::ToolDone { call: "t0.c0".into(), output: String::new() });
    assert_eq!(action, Action::AwaitApproval { call: "t0.c1".into(), request: 2 });
    for stale in [1, 3] {
        assert_eq!(m.handle_event(Event::Approved { id: format!("stale{stale}"), request: stale }), Action::Nothing);
        assert!(matches!(m.state(), State::AwaitingApproval { .. }), "request {stale} released the second call");
    }
    assert!(matches!(m.handle_event(Event::Approved { id: "second".into(), request: 2 }), Action::RunTool(_)));
    let ledger = m.state().ledger();
    let applied: Vec<(&str, &str)> = ledger.approvals.iter().map(|a| (a.id.as_str(), a.call.as_str())).collect();
    assert_eq!(applied, [("first", "t0.c0"), ("second", "t0.c1")]);
    assert_eq!(ledger.strays, vec!["Approved later", "Approved stale1", "Approved stale3"]);
}

/// Under the executor too: an approval sent while the model replies, before
/// the request it names is made, is a stray, not held back for that request.
#[tokio::test(start_paused = true)]
async fn an_approval_sent_before_its_request_is_a_stray_under_the_executor() {
    let plan = Plan { turns: 1, calls_per_turn: 1, approve_every: 1 };
    let store = Arc::new(MemoryStore::new());
    let (handle, _) = Durable::new(store, "early")
        .spawn(|| FleetAgent::new(plan), FleetEffects::default(), ExecutorConfig::new())
        .expect("spawns");
    let run = async {
        handle.send(Event::Begin { task: "sort the files".into() }).await.expect("sends");
        // The model's reply is still to come: no request is made yet.
        handle.send(Event::Approved { id: "early".into(), request: 1 }).await.expect("sends");
        // An error here is the agent's end: it ran past the approval.
        let _ = handle.wait_idle().await;
        handle.state().await.expect("the state")
    };
    let state = tokio::time::timeout(Duration::from_secs(60), run).await.expect("settles in time");
    assert!(matches!(state, State::AwaitingApproval { .. }), "the call was released early: {state:?}");
    assert!(state.ledger().approvals.is_empty(), "{:?}", state.ledger().approvals);
    assert_eq!(state.ledger().strays, vec!["Approved early"]);
    handle.shutdown().await.expect("stops");
}

/// The plan, not the model, says which calls wait: a reply that marks the
/// plan's approved call as needing none, or asks for a call the plan does
/// not have, still waits for an approval before anything runs.
#[test]
fn a_reply_cannot_waive_an_approval() {
    let plan = Plan { turns: 1, calls_per_turn: 2, approve_every: 2 };
    let waived = |id: &str| Call { id: id.into(), needs_approval: false };
    let mut m = FleetAgent::new(plan);
    m.handle_event(Event::Begin { task: "x".into() });
    let action = m.handle_event(Event::Replied { turn: 0, calls: vec![waived("t0.c0"), waived("t0.c1")] });
    assert_eq!(action, Action::RunTool(waived("t0.c0")), "the plan lets the first call run at once");
    let action = m.handle_event(Event::ToolDone { call: "t0.c0".into(), output: String::new() });
    assert_eq!(action, Action::AwaitApproval { call: "t0.c1".into(), request: 1 }, "the second waits, as planned");

    for unplanned in ["t0.c2", "t1.c0", "t00.c1", "x", "t4294967295.c4294967295"] {
        let mut m = FleetAgent::new(plan);
        m.handle_event(Event::Begin { task: "x".into() });
        let action = m.handle_event(Event::Replied { turn: 0, calls: vec![waived(unplanned)] });
        assert_eq!(action, Action::AwaitApproval { call: unplanned.into(), request: 1 }, "{unplanned} waits");
    }
}
