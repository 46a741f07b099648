//! Snapshot fuzzing of the reference machines that take the `serde` form
//! (bob's runner and Shadow; the test machines of `tests/snapshot_odd_data.rs` are
//! fuzzed there): 10,000 seeded mutations of snapshots taken at every step
//! of real sessions, each accepted one checked against its invariants and
//! given every kind of next event (see `support/snapshot_fuzz.rs`).
//! `cargo test --test snapshot_fuzz -- --ignored` runs a million each.

mod support {
    pub mod snapshot_fuzz;
}

use agent_fsm::StateMachine;
use agent_fsm::llm::{ErrorKind, StopReason, Usage};
use agent_fsm::snapshot::{self, snake_case};
use agent_fsm_examples::bob::{
    Runner, RunnerContext, RunnerEvent, RunnerState, ToolCall, ToolResult, answer, call_tools,
};
use agent_fsm_examples::shadow::{
    self, AssistantMessage, Permission, ProviderError, Shadow, ShadowContext, ShadowEvent, ShadowState, StreamEvent,
};
use serde_json::{Value, json};
use support::snapshot_fuzz::{Material, fuzz, rounds};

/// Ids of the forms the machines mint, at the counters' edges, and other
/// strings worth trying anywhere.
const STRINGS: &[&str] = &[
    "",
    "approval-0",
    "approval-1",
    "approval-01",
    "approval-18446744073709551614",
    "approval-18446744073709551615",
    "permission-0",
    "permission-1",
    "question-0",
    "question-18446744073709551615",
    "main/t1",
    "AskUserQuestion",
    "Task",
    "allow",
    "deny",
    "ask",
];

/// The machine's state tags, and every state object of `seeds`.
fn material<M: StateMachine>(seeds: &[String]) -> Material {
    let states = seeds
        .iter()
        .filter_map(|s| serde_json::from_str::<Value>(s).ok())
        .filter_map(|v| v.get("state").cloned())
        .collect();
    Material {
        tags: M::DESCRIPTION.states.iter().map(|s| snake_case(s.name)).collect(),
        states,
        strings: STRINGS.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// Snapshots of `machine` after each of `events`, the first before any.
fn every_step<M>(mut machine: M, events: Vec<M::Event>) -> Vec<String>
where
    M: StateMachine,
    M::State: serde::Serialize,
    M::Context: serde::Serialize,
{
    let mut seeds = vec![snapshot::to_json(&machine).expect("snapshot")];
    for event in events {
        machine.handle_event(event);
        seeds.push(snapshot::to_json(&machine).expect("snapshot"));
    }
    seeds
}

// ===================================================================== bob

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "write_note".into(),
        arguments: serde_json::json!({ "note": format!("note {id}") }),
    }
}

fn bob_seeds() -> Vec<String> {
    let calls = |ids: &[&str]| RunnerEvent::Infer(call_tools(ids.iter().map(|id| call(id)).collect()));
    let approve = |n: u32| RunnerEvent::Approve { request_id: format!("approval-{n}") };
    let results = |ids: &[&str]| {
        RunnerEvent::ProvideToolResults(
            ids.iter().map(|id| ToolResult { call_id: (*id).into(), content: "ok".into(), is_error: false }).collect(),
        )
    };
    let mut seeds = every_step(
        Runner::new(RunnerContext::new("notes", 4)),
        vec![
            calls(&["1", "2"]),
            RunnerEvent::RequireApproval,
            approve(1),
            approve(0),
            results(&["1", "2"]),
            calls(&["1"]),
            RunnerEvent::RequireApproval,
            RunnerEvent::Deny { request_id: "approval-2".into() },
        ],
    );
    seeds.extend(every_step(
        Runner::new(RunnerContext::new("edge", u32::MAX)),
        vec![calls(&["a", "b", "c"]), RunnerEvent::RequireApproval, approve(0), RunnerEvent::Cancel],
    ));
    let mut edge = RunnerContext::new("edge", u32::MAX);
    edge.steps_taken = u32::MAX - 1;
    edge.next_request = u64::MAX - 3;
    seeds.extend(every_step(Runner::new(edge), vec![calls(&["a", "b"]), RunnerEvent::RequireApproval]));
    seeds.extend(every_step(Runner::new(RunnerContext::new("one", 1)), vec![calls(&["1"]), results(&["1"])]));
    seeds
}

/// Every kind of event, with the ids `state` awaits and one it does not.
fn bob_events(state: &RunnerState) -> Vec<RunnerEvent> {
    let mut events = vec![
        RunnerEvent::Infer(answer("done")),
        RunnerEvent::Infer(call_tools(Vec::new())),
        RunnerEvent::Infer(call_tools(vec![call("x")])),
        RunnerEvent::Infer(call_tools(vec![call("x"), call("x")])),
        RunnerEvent::ProvideToolResults(Vec::new()),
        RunnerEvent::RequireApproval,
        RunnerEvent::Approve { request_id: "approval-999".into() },
        RunnerEvent::Deny { request_id: "approval-999".into() },
        RunnerEvent::Cancel,
    ];
    if let RunnerState::AwaitingApproval { approvals } = state {
        for a in approvals {
            events.push(RunnerEvent::Approve { request_id: a.request_id.clone() });
            events.push(RunnerEvent::Deny { request_id: a.request_id.clone() });
        }
    }
    events
}

fn fuzz_bob(rounds: usize, seed: u64) {
    let seeds = bob_seeds();
    let tally = fuzz::<Runner>(&seeds, &material::<Runner>(&seeds), bob_events, rounds, seed);
    eprintln!("bob: {tally:?}");
    assert!(tally.accepted * 10 >= tally.tried, "too few mutations accepted to exercise the events: {tally:?}");
}

#[test]
fn bob_snapshots_mutated_hold_their_invariants_and_take_any_next_event() {
    fuzz_bob(rounds(false), 0x0b0b);
}

#[test]
#[ignore = "a million mutations: run with --ignored"]
fn bob_snapshots_mutated_a_million_times() {
    fuzz_bob(rounds(true), 0x0b0b_1000);
}

// ================================================================== Shadow

fn tool(id: &str, name: &str) -> shadow::ToolCall {
    shadow::ToolCall { id: id.into(), name: name.into(), arguments: json!({ "path": id }) }
}

fn reply(calls: Vec<shadow::ToolCall>) -> ShadowEvent {
    let message = AssistantMessage { text: "ok".into(), tool_calls: calls, ..Default::default() };
    ShadowEvent::LlmEvent(StreamEvent::Completed { message, stop_reason: StopReason::EndTurn, usage: Usage::default() })
}

fn text(text: &str) -> ShadowEvent {
    ShadowEvent::LlmEvent(StreamEvent::TextDelta(text.into()))
}

fn call_delta(id: &str, fragment: &str) -> ShadowEvent {
    let (id, name) = (Some(id.into()), Some("bash".into()));
    ShadowEvent::LlmEvent(StreamEvent::ToolCallDelta { index: 0, id, name, arguments_fragment: fragment.into() })
}

/// A failure a retry can help (`retry: true`) or not.
fn failed(retry: bool) -> ShadowEvent {
    let kind = if retry { ErrorKind::RateLimited { retry_after: None } } else { ErrorKind::BadRequest };
    ShadowEvent::LlmFailed(ProviderError::new(kind, "down"))
}

fn ok(id: &str) -> ShadowEvent {
    ShadowEvent::ToolResult { tool_use_id: id.into(), result: Ok("done".into()) }
}

fn allow(request_id: &str, remember: bool) -> ShadowEvent {
    ShadowEvent::PermissionReply { request_id: request_id.into(), allowed: true, remember }
}

fn shadow_seeds() -> Vec<String> {
    let input = || ShadowEvent::UserInput("go".into());
    let context = || ShadowContext::new("main").with_rule("Task", Permission::Allow).with_rule("rm", Permission::Deny);
    let mut seeds = every_step(
        Shadow::new(context()),
        vec![
            input(),
            text("par"),
            call_delta("t1", "{"),
            reply(vec![tool("t1", "bash"), tool("t2", "rm"), tool("t3", "AskUserQuestion"), tool("t4", "Task")]),
            allow("permission-0", true),
            ok("t1"),
            ShadowEvent::QuestionAnswered { request_id: "question-1".into(), answers: vec!["blue".into()] },
            ShadowEvent::SubAgentRequested { tool_use_id: "t4".into(), prompt: "dig".into() },
            ShadowEvent::Interrupt,
            ShadowEvent::SubAgentFinished { session_id: "main/t4".into(), result: Ok("found".into()) },
            input(),
            reply(vec![tool("t5", "write_file")]),
            ShadowEvent::PermissionReply { request_id: "permission-2".into(), allowed: false, remember: false },
        ],
    );
    seeds.extend(every_step(
        Shadow::new(context()),
        vec![
            input(),
            reply(vec![tool("t1", "Task"), tool("t2", "Task")]),
            ShadowEvent::Interrupt,
            ok("t1"),
            input(),
            text("par"),
            failed(true),
            ShadowEvent::RetryTimeoutFired { attempt: 1 },
            failed(true),
            failed(false),
            input(),
            reply(vec![tool("t6", "Task")]),
            ShadowEvent::ToolResult { tool_use_id: "t6".into(), result: Err("boom".into()) },
            ShadowEvent::Shutdown,
        ],
    ));
    let mut edge = context();
    edge.next_request = u64::MAX - 1;
    seeds.extend(every_step(
        Shadow::new(edge),
        vec![
            input(),
            reply(vec![tool("t1", "bash"), tool("t2", "bash")]),
            allow(&format!("permission-{}", u64::MAX - 1), false),
        ],
    ));
    seeds
}

/// Every kind of event, with the ids `state` awaits and others.
fn shadow_events(state: &ShadowState) -> Vec<ShadowEvent> {
    let (mut request, mut call, mut session) = ("permission-9".to_owned(), "t9".to_owned(), "main/t9".to_owned());
    match state {
        ShadowState::WaitingForPermission { request_id, tool_use_id, .. } => {
            request.clone_from(request_id);
            call.clone_from(tool_use_id);
        }
        ShadowState::ExecutingTool { tool_use_id, .. } => call.clone_from(tool_use_id),
        ShadowState::WaitingForSubAgent { session_id } => session.clone_from(session_id),
        ShadowState::WaitingForUserInput { request_id } => request.clone_from(request_id),
        _ => {}
    }
    let mut events = vec![
        ShadowEvent::UserInput("more".into()),
        text("x"),
        call_delta("t8", ""),
        reply(Vec::new()),
        reply(vec![tool("t8", "bash")]),
        reply(vec![tool("t8", "Task")]),
        reply(vec![tool("t8", "AskUserQuestion")]),
        reply(vec![tool("t8", "rm")]),
        reply(vec![tool("t8", "bash"), tool("t8", "Task")]),
        failed(true),
        failed(false),
        ShadowEvent::RetryTimeoutFired { attempt: 0 },
        ShadowEvent::RetryTimeoutFired { attempt: 1 },
        ShadowEvent::RetryTimeoutFired { attempt: 2 },
        ShadowEvent::Interrupt,
        ShadowEvent::Shutdown,
        allow("permission-9", false),
        ok("t9"),
    ];
    for remember in [false, true] {
        events.push(allow(&request, remember));
        events.push(ShadowEvent::PermissionReply { request_id: request.clone(), allowed: false, remember });
    }
    events.extend([
        ok(&call),
        ShadowEvent::ToolResult { tool_use_id: call.clone(), result: Err("failed".into()) },
        ShadowEvent::SubAgentRequested { tool_use_id: call.clone(), prompt: "dig".into() },
        ShadowEvent::SubAgentFinished { session_id: session.clone(), result: Ok("found".into()) },
        ShadowEvent::SubAgentFinished { session_id: session, result: Err("lost".into()) },
        ShadowEvent::QuestionAnswered { request_id: request, answers: vec!["yes".into()] },
    ]);
    events
}

fn fuzz_shadow(rounds: usize, seed: u64) {
    let seeds = shadow_seeds();
    let tally = fuzz::<Shadow>(&seeds, &material::<Shadow>(&seeds), shadow_events, rounds, seed);
    eprintln!("shadow: {tally:?}");
    assert!(tally.accepted * 10 >= tally.tried, "too few mutations accepted to exercise the events: {tally:?}");
}

#[test]
fn shadow_snapshots_mutated_hold_their_invariants_and_take_any_next_event() {
    fuzz_shadow(rounds(false), 0x5ad0);
}

#[test]
#[ignore = "a million mutations: run with --ignored"]
fn shadow_snapshots_mutated_a_million_times() {
    fuzz_shadow(rounds(true), 0x5ad0_1000);
}
