//! `LoomWithPermission`, declared as a variant of Loom in another module:
//! every added and replaced row, an inherited row, and the base unchanged.

use agent_fsm_examples::loom::{
    AgentConfig, ConversationContext, Executions, Loom, Message, ProviderError, ToolCall, ToolExecutionOutcome,
};
use agent_fsm_examples::loom_with_permission::{
    AgentAction, AgentEvent, AgentState, LoomWithPermission, request_id as id_for,
};

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments: serde_json::json!({}) }
}

fn server_error(message: &str) -> ProviderError {
    ProviderError::new(agent_fsm::llm::ErrorKind::ServerError { status: 503, retry_after: None }, message)
}

fn conv() -> ConversationContext {
    ConversationContext::from_messages(vec![Message::user("fix it")])
}

fn completed(calls: Vec<ToolCall>) -> AgentEvent {
    AgentEvent::LlmEvent(agent_fsm_examples::loom::reply("on it", calls))
}

fn calling() -> LoomWithPermission {
    LoomWithPermission::with_state(AgentState::CallingLlm { retries: 0, conversation: conv() }, AgentConfig::default())
}

#[test]
fn added_row_mutating_calls_wait_for_permission() {
    let mut m = calling();
    let calls = vec![call("1", "read_file"), call("2", "edit_file")];
    let action = m.handle_event(completed(calls.clone()));
    assert_eq!(action, AgentAction::AskPermission { request_id: id_for(2, &calls), calls: calls.clone() });
    let AgentState::WaitingForPermission { calls: waiting, conversation, request_id } = m.state() else {
        panic!("expected WaitingForPermission, got {:?}", m.state());
    };
    assert_eq!(waiting, &calls);
    // The request's id comes from its position (the conversation's
    // length) and its calls.
    assert_eq!(conversation.len(), 2);
    assert_eq!(*request_id, id_for(2, &calls));
}

/// A shell command can change anything an edit can: by default it waits
/// for permission too, under the name the workspace tools give it.
#[test]
fn added_row_a_shell_command_waits_for_permission_by_default() {
    for shell in ["run_command", "bash"] {
        let mut m = calling();
        let calls = vec![call("1", "read_file"), call("2", shell)];
        let action = m.handle_event(completed(calls.clone()));
        assert_eq!(action, AgentAction::AskPermission { request_id: id_for(2, &calls), calls }, "{shell}");
    }
}

#[test]
fn added_rows_a_reply_to_another_request_is_refused_and_a_stale_one_approves_nothing() {
    let mut m = calling();
    let first = vec![call("1", "edit_file")];
    m.handle_event(completed(first.clone()));
    for event in [
        AgentEvent::PermissionGranted { request_id: 7 },
        AgentEvent::PermissionDenied { request_id: 7, reason: "no".into() },
    ] {
        let action = m.handle_event(event);
        let waiting = id_for(2, &first);
        assert_eq!(
            action,
            AgentAction::DisplayError(format!("no permission request 7 pending (waiting for {waiting})"))
        );
        assert!(m.state().is_waiting_for_permission());
    }
    assert_eq!(
        m.handle_event(AgentEvent::PermissionGranted { request_id: id_for(2, &first) }),
        AgentAction::ExecuteTools(first.clone())
    );
    let done = ToolExecutionOutcome::Success { call_id: "1".into(), output: "ok".into() };
    m.handle_event(AgentEvent::ToolCompleted { call_id: "1".into(), outcome: done });
    m.handle_event(AgentEvent::PostToolsHookCompleted { action_taken: false });
    // The next round reuses the call id; the first round's reply, sent
    // again, does not approve it.
    let action = m.handle_event(completed(first.clone()));
    let AgentAction::AskPermission { request_id, .. } = action else { panic!("{action:?}") };
    assert_eq!(request_id, id_for(4, &first));
    let (stale, waiting) = (id_for(2, &first), id_for(4, &first));
    assert_ne!(stale, waiting);
    let action = m.handle_event(AgentEvent::PermissionGranted { request_id: stale });
    assert_eq!(
        action,
        AgentAction::DisplayError(format!("no permission request {stale} pending (waiting for {waiting})"))
    );
    assert!(m.state().is_waiting_for_permission());
}

/// A grant that comes before its request, even one naming the id the
/// request is about to get, is not kept for it.
#[test]
fn added_rows_a_grant_sent_before_the_request_approves_nothing() {
    let mut m = calling();
    let calls = vec![call("1", "write_file")];
    let early = AgentEvent::PermissionGranted { request_id: id_for(2, &calls) };
    assert_eq!(m.handle_event(early), AgentAction::WaitForInput, "no row while the reply streams: the fallback");
    assert_eq!(
        m.handle_event(completed(calls.clone())),
        AgentAction::AskPermission { request_id: id_for(2, &calls), calls }
    );
    assert!(m.state().is_waiting_for_permission(), "asked, though a grant for its id came first");
}

/// The configuration lists what may run unasked, not what must ask: a
/// tool nobody listed (an MCP server's, one added later, a name the model
/// made up) waits for permission, and listing it as read-only lets it run.
#[test]
fn added_row_a_tool_not_listed_as_read_only_waits_for_permission() {
    for name in ["delete_repository", "Read_File", "read_file ", ""] {
        let mut m = calling();
        let calls = vec![call("1", "read_file"), call("2", name)];
        let action = m.handle_event(completed(calls.clone()));
        assert_eq!(action, AgentAction::AskPermission { request_id: id_for(2, &calls), calls }, "{name:?}");
    }
    let config =
        AgentConfig { read_only_tools: vec!["read_file".into(), "search_docs".into()], ..AgentConfig::default() };
    let mut m =
        LoomWithPermission::with_state(AgentState::CallingLlm { retries: 0, conversation: conv() }, config.clone());
    let calls = vec![call("1", "search_docs"), call("2", "read_file")];
    assert_eq!(m.handle_event(completed(calls.clone())), AgentAction::ExecuteTools(calls));
    // `list_files` is read-only by default only: a list without it asks.
    let mut m = LoomWithPermission::with_state(AgentState::CallingLlm { retries: 0, conversation: conv() }, config);
    let calls = vec![call("1", "list_files")];
    assert_eq!(
        m.handle_event(completed(calls.clone())),
        AgentAction::AskPermission { request_id: id_for(2, &calls), calls }
    );
}

/// A configuration saved before `read_only_tools` existed reads with its
/// default, the reading tools of the workspace set.
#[test]
fn a_configuration_without_read_only_tools_reads_with_the_default() {
    let old = serde_json::json!({"max_retries": 3, "max_tokens": 4096, "mutating_tools": ["edit_file"]});
    let config: AgentConfig = serde_json::from_value(old).expect("an older configuration reads");
    assert_eq!(config.read_only_tools, AgentConfig::default().read_only_tools);
    assert_eq!(config.read_only_tools, ["read_file", "list_files"]);
}

#[test]
fn base_row_read_only_calls_run_at_once() {
    let mut m = calling();
    let calls = vec![call("1", "read_file"), call("2", "list_files")];
    assert_eq!(m.handle_event(completed(calls.clone())), AgentAction::ExecuteTools(calls));
    assert!(m.state().is_executing_tools());
}

#[test]
fn added_row_permission_granted_runs_the_calls() {
    let calls = vec![call("1", "edit_file")];
    let mut m = LoomWithPermission::with_state(
        AgentState::WaitingForPermission { calls: calls.clone(), conversation: conv(), request_id: 1 },
        AgentConfig::default(),
    );
    assert_eq!(
        m.handle_event(AgentEvent::PermissionGranted { request_id: 1 }),
        AgentAction::ExecuteTools(calls.clone())
    );
    assert_eq!(
        m.state(),
        &AgentState::ExecutingTools { executions: Executions::pending(&calls), conversation: conv() }
    );
}

#[test]
fn added_row_permission_denied_answers_every_call_and_waits() {
    let calls = vec![call("1", "edit_file"), call("2", "bash")];
    let mut m = LoomWithPermission::with_state(
        AgentState::WaitingForPermission { calls, conversation: conv(), request_id: 1 },
        AgentConfig::default(),
    );
    let action = m.handle_event(AgentEvent::PermissionDenied { request_id: 1, reason: "not now".into() });
    assert_eq!(action, AgentAction::DisplayError("permission denied: not now".into()));
    let AgentState::WaitingForUserInput { conversation } = m.state() else { panic!("{:?}", m.state()) };
    let results: Vec<_> = conversation.messages()[1..]
        .iter()
        .map(|m| match m {
            Message::Tool(result) => (result.call_id.as_str(), result.is_error, result.content.contains("not now")),
            other => panic!("expected a tool result, got {other:?}"),
        })
        .collect();
    assert_eq!(results, [("1", true, true), ("2", true, true)]);
}

/// The ids of the calls in `messages` that no tool message right after
/// their reply answers: what both providers refuse in a request.
fn unanswered(messages: &[Message]) -> Vec<String> {
    let mut missing = Vec::new();
    for (at, message) in messages.iter().enumerate() {
        if let Message::Assistant(reply) = message {
            let answered: Vec<&str> = messages[at + 1..]
                .iter()
                .map_while(|m| match m {
                    Message::Tool(result) => Some(result.call_id.as_str()),
                    _ => None,
                })
                .collect();
            missing
                .extend(reply.tool_calls.iter().filter(|c| !answered.contains(&c.id.as_str())).map(|c| c.id.clone()));
        }
    }
    missing
}

#[test]
fn added_row_an_interrupt_while_waiting_answers_every_call_and_runs_none() {
    let mut m = calling();
    let calls = vec![call("c1", "edit_file"), call("c2", "read_file")];
    let asked = id_for(2, &calls);
    assert_eq!(m.handle_event(completed(calls.clone())), AgentAction::AskPermission { request_id: asked, calls });
    let action = m.handle_event(AgentEvent::Interrupted { cause: "stop".into() });
    assert_eq!(action, AgentAction::DisplayError("interrupted: stop".into()));
    assert_eq!(m.state().name(), "WaitingForUserInput");
    // A grant that comes after the interrupt releases nothing.
    assert!(!matches!(
        m.handle_event(AgentEvent::PermissionGranted { request_id: asked }),
        AgentAction::ExecuteTools(_)
    ));
    // The next request answers the calls that never ran, in call order.
    let AgentAction::SendLlmRequest(request) = m.handle_event(AgentEvent::UserInput(Message::user("go on"))) else {
        panic!("expected a request, in {:?}", m.state());
    };
    assert_eq!(unanswered(&request.messages), Vec::<String>::new());
    let results: Vec<(&str, bool)> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some((r.call_id.as_str(), r.is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results, [("c1", true), ("c2", true)]);
}

/// A message the user sends while a request waits is neither dropped nor
/// a way round it: the calls are denied, none runs, and the message goes
/// to the model after their results.
#[test]
fn added_row_a_message_while_waiting_denies_the_calls_and_goes_to_the_model() {
    let mut m = calling();
    let calls = vec![call("c1", "edit_file"), call("c2", "read_file")];
    let asked = id_for(2, &calls);
    assert_eq!(m.handle_event(completed(calls.clone())), AgentAction::AskPermission { request_id: asked, calls });
    let action = m.handle_event(AgentEvent::UserInput(Message::user("leave the file, use a copy")));
    let AgentAction::SendLlmRequest(request) = action else { panic!("expected a request, got {action:?}") };
    assert!(m.state().is_calling_llm(), "{:?}", m.state());
    assert_eq!(unanswered(&request.messages), Vec::<String>::new());
    let tail: Vec<String> = request.messages[2..]
        .iter()
        .map(|m| match m {
            Message::Tool(r) if r.is_error => format!("{}: {}", r.call_id, r.content),
            Message::User { content } => format!("user: {content}"),
            other => panic!("expected denials and the message, got {other:?}"),
        })
        .collect();
    let denied = format!("denied by the user: {}", agent_fsm_examples::loom_with_permission::SUPERSEDED);
    assert_eq!(tail, [format!("c1: {denied}"), format!("c2: {denied}"), "user: leave the file, use a copy".into()]);
    // The request's grant, sent late, runs nothing.
    assert!(!matches!(
        m.handle_event(AgentEvent::PermissionGranted { request_id: asked }),
        AgentAction::ExecuteTools(_)
    ));
}

#[test]
fn replaced_row_final_failure_says_gave_up() {
    let mut m = LoomWithPermission::with_state(
        AgentState::CallingLlm { retries: 2, conversation: conv() },
        AgentConfig::default(),
    );
    let action = m.handle_event(AgentEvent::LlmFailed(server_error("503")));
    assert_eq!(action, AgentAction::DisplayError("gave up: server error 503: 503".into()));
}

#[test]
fn inherited_any_state_row_covers_the_added_state() {
    let mut m = LoomWithPermission::with_state(
        AgentState::WaitingForPermission { calls: vec![], conversation: conv(), request_id: 0 },
        AgentConfig::default(),
    );
    assert_eq!(m.handle_event(AgentEvent::ShutdownRequested), AgentAction::Shutdown);
    assert_eq!(m.state(), &AgentState::ShuttingDown);
}

#[test]
fn the_variant_is_its_own_machine() {
    let d = LoomWithPermission::DESCRIPTION;
    assert_eq!(d.name, "LoomWithPermission");
    assert!(d.states.iter().any(|s| s.name == "WaitingForPermission"));
    assert!(d.mermaid.contains("WaitingForPermission --> ExecutingTools : PermissionGranted / ExecuteTools"));
    // Added rows come first, so the permission row precedes Loom's tool row.
    let from_processing: Vec<_> = d.rows_from("ProcessingLlmResponse").map(|t| t.to).collect();
    assert_eq!(from_processing, ["WaitingForPermission", "ExecutingTools", "WaitingForUserInput"]);
}

#[test]
fn the_base_is_unchanged() {
    let d = Loom::DESCRIPTION;
    assert_eq!(d.name, "Loom");
    assert!(!d.states.iter().any(|s| s.name == "WaitingForPermission"));
    assert!(!d.events.contains(&"PermissionGranted"));
    let mut m = Loom::with_state(
        agent_fsm_examples::loom::AgentState::CallingLlm { retries: 0, conversation: conv() },
        AgentConfig::default(),
    );
    let calls = vec![call("1", "edit_file")];
    let action = m.handle_event(agent_fsm_examples::loom::AgentEvent::LlmEvent(agent_fsm_examples::loom::reply(
        "on it",
        calls.clone(),
    )));
    assert_eq!(action, agent_fsm_examples::loom::AgentAction::ExecuteTools(calls));
    let action = Loom::with_state(
        agent_fsm_examples::loom::AgentState::CallingLlm { retries: 2, conversation: conv() },
        AgentConfig::default(),
    )
    .handle_event(agent_fsm_examples::loom::AgentEvent::LlmFailed(server_error("503")));
    assert_eq!(
        action,
        agent_fsm_examples::loom::AgentAction::DisplayError("llm call failed: server error 503: 503".into())
    );
}

#[test]
fn the_variants_status_points_at_its_states_the_added_one_included() {
    use agent_fsm::StateMachine;
    let states = [
        AgentState::WaitingForUserInput { conversation: conv() },
        AgentState::CallingLlm { retries: 1, conversation: conv() },
        AgentState::ExecutingTools { executions: Executions::pending(&[call("1", "read_file")]), conversation: conv() },
        AgentState::WaitingForPermission { calls: vec![], conversation: conv(), request_id: 0 },
        AgentState::ShuttingDown,
    ];
    for state in states {
        let name = state.name();
        let m = LoomWithPermission::with_state(state, AgentConfig::default());
        let kind = StateMachine::status(&m).state().unwrap_or_else(|| panic!("{name} is listed"));
        assert_eq!(LoomWithPermission::DESCRIPTION.states[agent_fsm::Kind::index(kind)].name, name);
    }
}
