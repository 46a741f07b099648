//! Shadow on the library's model types: a failed model call is retried
//! only when a retry can help, after the server's `retry-after` (exactly,
//! on paused time, through a running agent), at most as many times as
//! the context allows, with stale retry timers refused; and the
//! conversation the machine keeps, interrupts and denials included, is
//! one both providers' clients send as a valid request (every tool call
//! answered in call order, before the next user text).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_fsm::Recorder;
use agent_fsm::llm::anthropic::Anthropic;
use agent_fsm::llm::openai::OpenAi;
use agent_fsm::llm::{ErrorKind, Request, StopReason, Usage};
use agent_fsm::runtime::RetryPolicy;
use agent_fsm::snapshot;
use agent_fsm_examples::coding_agent::Workspace;
use agent_fsm_examples::shadow::{
    AssistantMessage, INTERRUPTED, Message, PERMISSION, Permission, ProviderError, Shadow, ShadowAction, ShadowContext,
    ShadowEvent, ShadowState, StreamEvent, ToolCall, request_id,
};
use agent_fsm_examples::shadow_agent::{AgentRuntime, Llm, Output};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};

fn completed(text: &str, tool_calls: Vec<ToolCall>) -> StreamEvent {
    let message = AssistantMessage { text: text.to_owned(), tool_calls, ..Default::default() };
    StreamEvent::Completed { message, stop_reason: StopReason::EndTurn, usage: Usage::default() }
}

fn rate_limited(after: Option<Duration>) -> ProviderError {
    ProviderError::new(ErrorKind::RateLimited { retry_after: after }, "slow down").with_status(429)
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: json!({ "path": id }) }
}

fn processing() -> Shadow {
    let mut m = Shadow::new(ShadowContext::new("s1"));
    m.handle_event(ShadowEvent::UserInput("hi".to_owned()));
    m
}

// ------------------------------------------------------------------ table

#[test]
fn a_retryable_failure_is_retried_after_the_servers_wait_until_the_attempts_run_out() {
    let mut m = processing();
    m.handle_event(ShadowEvent::LlmEvent(StreamEvent::TextDelta("par".to_owned())));
    let wait = Some(Duration::from_secs(7));
    assert_eq!(
        m.handle_event(ShadowEvent::LlmFailed(rate_limited(wait))),
        ShadowAction::ScheduleRetry { attempt: 1, retry_after: wait }
    );
    assert_eq!(m.state(), &ShadowState::Processing);
    assert_eq!(m.context().partial_text, "", "the retry streams the reply again");
    // A timer for another retry is refused and changes nothing.
    let before = m.context().clone();
    assert_eq!(
        m.handle_event(ShadowEvent::RetryTimeoutFired { attempt: 2 }),
        ShadowAction::Reject("no retry 2 of the model call scheduled".to_owned())
    );
    assert_eq!(m.context(), &before);
    // The due one calls the model again, adding nothing to the conversation.
    assert_eq!(m.handle_event(ShadowEvent::RetryTimeoutFired { attempt: 1 }), ShadowAction::CallLlm(Vec::new()));
    assert_eq!(
        m.handle_event(ShadowEvent::RetryTimeoutFired { attempt: 1 }),
        ShadowAction::Reject("no retry 1 of the model call scheduled".to_owned()),
        "one timer, one retry"
    );
    let overloaded = ProviderError::new(ErrorKind::Overloaded { retry_after: None }, "busy");
    assert_eq!(
        m.handle_event(ShadowEvent::LlmFailed(overloaded.clone())),
        ShadowAction::ScheduleRetry { attempt: 2, retry_after: None }
    );
    m.handle_event(ShadowEvent::RetryTimeoutFired { attempt: 2 });
    // The third attempt of three fails: no retry is left.
    let message = "LLM call failed: server overloaded: busy".to_owned();
    assert_eq!(m.handle_event(ShadowEvent::LlmFailed(overloaded)), ShadowAction::ReportError(message.clone()));
    assert_eq!(m.state(), &ShadowState::Error { message });
    assert_eq!((m.context().llm_failures, m.context().retry_scheduled), (0, false));
    assert_eq!(m.context().conversation, [Message::user("hi")]);
}

#[test]
fn a_failure_no_retry_can_help_is_an_error_at_once() {
    for kind in [ErrorKind::Auth, ErrorKind::BadRequest, ErrorKind::ContextTooLong] {
        let mut m = processing();
        let action = m.handle_event(ShadowEvent::LlmFailed(ProviderError::new(kind.clone(), "no")));
        assert!(matches!(action, ShadowAction::ReportError(_)), "{kind:?}: {action:?}");
        assert_eq!(m.state().name(), "Error");
    }
    // Nor is a retryable one when the context allows one attempt.
    let mut context = ShadowContext::new("s1");
    context.max_llm_attempts = 1;
    let mut m = Shadow::new(context);
    m.handle_event(ShadowEvent::UserInput("hi".to_owned()));
    assert!(matches!(m.handle_event(ShadowEvent::LlmFailed(rate_limited(None))), ShadowAction::ReportError(_)));
}

#[test]
fn a_reply_after_a_retry_starts_the_count_again() {
    let mut context = ShadowContext::new("s1");
    context.default_permission = Permission::Allow;
    let mut m = Shadow::new(context);
    m.handle_event(ShadowEvent::UserInput("hi".to_owned()));
    m.handle_event(ShadowEvent::LlmFailed(rate_limited(None)));
    m.handle_event(ShadowEvent::RetryTimeoutFired { attempt: 1 });
    m.handle_event(ShadowEvent::LlmEvent(completed("", vec![call("t1", "read_file")])));
    assert_eq!(m.context().llm_failures, 0);
    let action = m.handle_event(ShadowEvent::ToolResult { tool_use_id: "t1".to_owned(), result: Ok("x".to_owned()) });
    assert_eq!(action, ShadowAction::CallLlm(vec![Message::tool_result("t1", "x")]));
    // The next call has all its attempts again.
    assert_eq!(
        m.handle_event(ShadowEvent::LlmFailed(rate_limited(None))),
        ShadowAction::ScheduleRetry { attempt: 1, retry_after: None }
    );
}

#[test]
fn an_interrupt_while_a_retry_waits_ends_the_turn_and_the_late_timer_finds_nothing() {
    let mut m = processing();
    m.handle_event(ShadowEvent::LlmFailed(rate_limited(None)));
    assert_eq!(m.handle_event(ShadowEvent::Interrupt), ShadowAction::Interrupted);
    assert_eq!(m.state(), &ShadowState::Done);
    assert_eq!((m.context().llm_failures, m.context().retry_scheduled), (0, false));
    assert_eq!(m.context().conversation, [Message::user("hi"), Message::user(INTERRUPTED)]);
    let mut rec = Recorder::default();
    assert_eq!(m.handle_event_with(ShadowEvent::RetryTimeoutFired { attempt: 1 }, &mut rec), ShadowAction::Nothing);
    assert_eq!(rec.unhandled.len(), 1);
    assert_eq!(m.state(), &ShadowState::Done);
}

#[test]
fn snapshots_with_a_retry_outside_processing_are_refused() {
    let mut m = processing();
    m.handle_event(ShadowEvent::LlmFailed(rate_limited(None)));
    let waiting: Value = serde_json::from_str(&snapshot::to_json(&m).expect("snapshot")).expect("json");
    let resume = |v: &Value| snapshot::from_json::<Shadow>(&v.to_string()).map(|_| ());
    assert!(resume(&waiting).is_ok());
    type Tamper = fn(&mut Value);
    let tampered: Vec<(&str, Tamper)> = vec![
        ("a retry at rest", |v| v["state"] = json!({ "state": "idle" })),
        ("a retry with no failure", |v| v["context"]["llm_failures"] = json!(0)),
    ];
    for (what, tamper) in tampered {
        let mut v = waiting.clone();
        tamper(&mut v);
        assert!(matches!(resume(&v), Err(snapshot::SnapshotError::Invariant { .. })), "{what}");
    }
    // A snapshot written before retries existed resumes with the defaults.
    let mut old = waiting;
    for field in ["max_llm_attempts", "llm_failures", "retry_scheduled"] {
        old["context"].as_object_mut().expect("context").remove(field);
    }
    let resumed: Shadow = snapshot::from_json(&old.to_string()).expect("resumes");
    assert_eq!(resumed.context().max_llm_attempts, 3);
}

// ------------------------------------------------------------------ agent

/// A model that streams the next item of its queue, then a plain answer.
#[derive(Clone, Default)]
struct QueuedLlm(Arc<Mutex<VecDeque<Result<StreamEvent, ProviderError>>>>);

impl Llm for QueuedLlm {
    fn stream(&self, _conversation: &[Message]) -> BoxStream<'static, Result<StreamEvent, ProviderError>> {
        let next = self.0.lock().expect("not poisoned").pop_front();
        futures::stream::iter([next.unwrap_or_else(|| Ok(completed("done", Vec::new())))]).boxed()
    }
}

#[tokio::test(start_paused = true)]
async fn an_agent_retries_after_exactly_the_servers_retry_after() {
    let dir = tempfile::tempdir().expect("temp dir");
    let llm = QueuedLlm::default();
    llm.0.lock().expect("not poisoned").extend([
        Err(rate_limited(Some(Duration::from_secs(7)))),
        Err(ProviderError::new(ErrorKind::ConnectionDropped, "reset")),
        Ok(completed("at last", Vec::new())),
    ]);
    // Jitter 0: the second wait is the backoff exactly.
    let retry = RetryPolicy::new().cap(Duration::from_secs(30)).jitter(0.0).max_attempts(3);
    let runtime = AgentRuntime::with_retry_policy(
        llm,
        Workspace::new(dir.path()),
        AgentRuntime::default_config(),
        retry.base(Duration::from_millis(300)),
    );
    let mut updates = runtime.subscribe();
    let agent = runtime.spawn("main", &[]).expect("spawned");
    let started = tokio::time::Instant::now();
    agent.send(ShadowEvent::UserInput("hi".to_owned())).await.expect("sent");
    let answer = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            if let Ok(update) = updates.recv().await
                && let Output::Response(text) = update.output
            {
                return text;
            }
        }
    })
    .await
    .expect("an answer in time");
    assert_eq!(answer, "at last");
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(7_600),
        "7 s as the server asked, then the second retry's backoff (300 ms × 2)"
    );
    let history = agent.history().await.expect("history");
    let events: Vec<_> =
        history.transitions().map(|t| (t.event.map(|e| e.name()), t.action.map(|a| a.name()))).collect();
    assert_eq!(
        events,
        [
            (Some("UserInput"), Some("CallLlm")),
            (Some("LlmFailed"), Some("ScheduleRetry")),
            (Some("RetryTimeoutFired"), Some("CallLlm")),
            (Some("LlmFailed"), Some("ScheduleRetry")),
            (Some("RetryTimeoutFired"), Some("CallLlm")),
            (Some("LlmEvent"), Some("Respond")),
        ]
    );
    assert_eq!(agent.state().await.expect("state"), ShadowState::Idle);
    // Ok or Err, the agent is stopped now.
    let _ = runtime.shutdown_all().await;
}

// ------------------------------------------------------------------- wire

/// A conversation through every way a turn ends: a tool round, an
/// interrupted tool round, a denial, an interrupted stream, a plain reply.
fn conversation() -> Vec<Message> {
    let mut context = ShadowContext::new("s1").with_rule("read_file", Permission::Allow);
    context.default_permission = Permission::Ask;
    let mut m = Shadow::new(context);
    let mut send = |event: ShadowEvent| {
        m.handle_event(event);
    };
    send(ShadowEvent::UserInput("read both".to_owned()));
    send(ShadowEvent::LlmEvent(completed("Reading.", vec![call("a", "read_file"), call("b", "read_file")])));
    send(ShadowEvent::ToolResult { tool_use_id: "a".to_owned(), result: Ok("A".to_owned()) });
    send(ShadowEvent::ToolResult { tool_use_id: "b".to_owned(), result: Ok("B".to_owned()) });
    send(ShadowEvent::LlmEvent(completed("", vec![call("c", "read_file"), call("d", "bash")])));
    send(ShadowEvent::Interrupt);
    send(ShadowEvent::ToolResult { tool_use_id: "c".to_owned(), result: Ok("C".to_owned()) });
    send(ShadowEvent::UserInput("run it".to_owned()));
    send(ShadowEvent::LlmEvent(completed("", vec![call("e", "bash")])));
    send(ShadowEvent::PermissionReply {
        request_id: request_id(PERMISSION, 0, &call("e", "bash")),
        allowed: false,
        remember: false,
    });
    send(ShadowEvent::UserInput("tell me".to_owned()));
    send(ShadowEvent::LlmEvent(StreamEvent::TextDelta("Once".to_owned())));
    send(ShadowEvent::Interrupt);
    send(ShadowEvent::UserInput("again".to_owned()));
    send(ShadowEvent::LlmEvent(completed("Done.", Vec::new())));
    assert_eq!(m.state(), &ShadowState::Idle);
    m.context().conversation.clone()
}

#[test]
fn the_conversation_is_a_valid_anthropic_request() {
    let request = Request::new("m").messages(Arc::new(conversation()));
    let body = Anthropic::new("key").expect("client").body(&request);
    let messages = body["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().expect("role")).collect();
    assert!(roles.windows(2).all(|w| w[0] != w[1]), "roles alternate: {roles:?}");
    assert_eq!(roles.first(), Some(&"user"));
    // Every assistant message's tool uses are answered, in order, at the
    // start of the next user message.
    for (i, message) in messages.iter().enumerate() {
        let blocks = message["content"].as_array().expect("blocks");
        let uses: Vec<&Value> = blocks.iter().filter(|b| b["type"] == "tool_use").map(|b| &b["id"]).collect();
        if uses.is_empty() {
            continue;
        }
        let next = messages[i + 1]["content"].as_array().expect("an answer follows");
        let answered: Vec<&Value> = next.iter().take(uses.len()).map(|b| &b["tool_use_id"]).collect();
        assert_eq!(answered, uses, "message {i}");
    }
    // After the interrupted round: its results, the interrupt, the next input.
    let kinds: Vec<&Value> = messages[4]["content"].as_array().expect("blocks").iter().map(|b| &b["type"]).collect();
    assert_eq!(kinds, ["tool_result", "tool_result", "text", "text"]);
    assert_eq!(messages[4]["content"][1]["content"], INTERRUPTED);
    let interrupts = messages
        .iter()
        .flat_map(|m| m["content"].as_array().expect("blocks"))
        .filter(|b| b["text"] == INTERRUPTED)
        .count();
    assert_eq!(interrupts, 2);
}

#[test]
fn the_conversation_is_a_valid_openai_request() {
    let request = Request::new("m").messages(Arc::new(conversation()));
    let body = OpenAi::new("key").expect("client").body(&request);
    let messages = body["messages"].as_array().expect("messages");
    for (i, message) in messages.iter().enumerate() {
        let Some(calls) = message["tool_calls"].as_array() else { continue };
        let ids: Vec<&Value> = calls.iter().map(|c| &c["id"]).collect();
        let answers: Vec<&Value> = messages[i + 1..i + 1 + ids.len()]
            .iter()
            .map(|m| {
                assert_eq!(m["role"], "tool");
                &m["tool_call_id"]
            })
            .collect();
        assert_eq!(answers, ids, "message {i}");
    }
    let users: Vec<&str> =
        messages.iter().filter(|m| m["role"] == "user").map(|m| m["content"].as_str().expect("text")).collect();
    assert_eq!(users, ["read both", INTERRUPTED, "run it", "tell me", INTERRUPTED, "again"]);
}
