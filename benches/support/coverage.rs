//! Traces that are not benched: they walk every row of the table (and the
//! catch-all, the refused pair, the in-place `*` rows, and the states `*`
//! leaves out) so the
//! lockstep checks prove the hand-written baseline equal to the generated
//! machine (`benches/dispatch.rs`) and to the peer crates' machines
//! (`benches/dispatch-peers/`) everywhere, not only on the benched paths.

use super::traces::Trace;
use agent_fsm_examples::loom::{
    AgentConfig, AgentError, AgentEvent, AgentState, AssistantMessage, CompletedToolInfo, ConversationContext,
    ErrorOrigin, Executions, Message, ProviderError, StreamEvent, ToolCall, ToolError, ToolExecutionOutcome,
    ToolProgress, ToolProgressEvent,
};

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: serde_json::json!({ "x": 1 }) }
}

fn ok(id: &str) -> AgentEvent {
    AgentEvent::ToolCompleted {
        call_id: id.to_owned(),
        outcome: ToolExecutionOutcome::Success { call_id: id.to_owned(), output: serde_json::json!({ "lines": 3 }) },
    }
}

fn failed(id: &str) -> AgentEvent {
    AgentEvent::ToolCompleted {
        call_id: id.to_owned(),
        outcome: ToolExecutionOutcome::Error {
            call_id: id.to_owned(),
            error: ToolError { message: "boom".to_owned() },
        },
    }
}

fn progress(id: &str) -> AgentEvent {
    AgentEvent::ToolProgress(ToolProgressEvent {
        call_id: id.to_owned(),
        progress: ToolProgress { fraction: Some(0.5), message: Some("half".to_owned()) },
    })
}

fn llm(e: StreamEvent) -> AgentEvent {
    AgentEvent::LlmEvent(e)
}

fn llm_error(message: &str) -> ProviderError {
    ProviderError::new(agent_fsm::llm::ErrorKind::ServerError { status: 503, retry_after: None }, message)
}

fn error() -> AgentEvent {
    AgentEvent::LlmFailed(llm_error("503"))
}

fn completed(calls: Vec<ToolCall>) -> AgentEvent {
    llm(agent_fsm_examples::loom::reply("reply", calls))
}

pub(crate) fn traces() -> Vec<Trace> {
    use AgentEvent as E;
    let idle = AgentState::WaitingForUserInput { conversation: ConversationContext::default() };
    let every_row = vec![
        E::RetryTimeoutFired, // no row
        E::UserInput(Message::user("hi")),
        llm(StreamEvent::ToolCallDelta {
            index: 0,
            id: Some("c".to_owned()),
            name: Some("read_file".to_owned()),
            arguments_fragment: "{".to_owned(),
        }),
        llm(StreamEvent::TextDelta("x".to_owned())),
        llm(StreamEvent::ReasoningDelta("hm".to_owned())),
        error(),                                // retry 1
        E::UserInput(Message::user("ignored")), // no row in Error
        E::RetryTimeoutFired,
        error(), // retry 2
        E::RetryTimeoutFired,
        error(), // out of attempts -> WaitingForUserInput / DisplayError
        E::UserInput(Message::user("again")),
        completed(vec![call("r1", "read_file"), call("r2", "read_file")]),
        progress("r1"),
        progress("nope"),
        ok("nope"),
        ok("r1"),
        ok("r1"), // finished already
        progress("r1"),
        E::PostToolsHookCompleted { action_taken: false }, // no row
        ok("r2"),                                          // no mutating tool -> CallingLlm
        completed(vec![call("e1", "edit_file"), call("r3", "read_file")]),
        failed("e1"),
        ok("r3"), // the edit failed -> CallingLlm
        completed(vec![call("e2", "bash")]),
        ok("e2"),             // mutating -> PostToolsHook
        E::RetryTimeoutFired, // no row
        E::PostToolsHookCompleted { action_taken: true },
        completed(vec![call("i1", "read_file"), call("i2", "read_file")]),
        ok("i2"),
        // `i1` still has no result: it gets an "interrupted" error and the
        // round is recorded; the next request carries both results.
        E::Interrupted { cause: "ctrl-c".to_owned() },
        E::UserInput(Message::user("go on")),
        completed(Vec::new()),
        E::ShutdownRequested,
        E::ShutdownRequested, // in place
        E::UserInput(Message::user("too late")),
    ];
    let mut traces = vec![Trace { name: "coverage_every_row".to_owned(), start: idle, events: every_row }];
    // Error from a tool: `RetryTimeoutFired` is refused (the row's source
    // pattern wants `origin: Llm`), then shutdown from every kind of state.
    traces.push(Trace {
        name: "coverage_refused".to_owned(),
        start: AgentState::Error {
            error: AgentError::Llm(llm_error("x")),
            retries: 1,
            origin: ErrorOrigin::Tool,
            conversation: ConversationContext::default(),
        },
        events: vec![E::RetryTimeoutFired, E::ShutdownRequested],
    });
    // `* + Interrupted` and `* + ShutdownRequested` from every state,
    // including the ones `*` leaves out (terminal, transient).
    let conversation = || ConversationContext::from_messages(vec![Message::user("hi")]);
    let config = AgentConfig::default();
    let starts = vec![
        AgentState::WaitingForUserInput { conversation: conversation() },
        AgentState::CallingLlm { retries: 2, conversation: conversation() },
        AgentState::ExecutingTools {
            executions: Executions::pending(&[call("a", "bash")]),
            conversation: conversation(),
        },
        AgentState::PostToolsHook {
            pending_llm_request: config.request(&conversation(), 0),
            completed_tools: vec![CompletedToolInfo { tool_name: "bash".to_owned(), succeeded: true }],
            conversation: conversation(),
        },
        AgentState::Error {
            error: AgentError::Llm(llm_error("x")),
            retries: 1,
            origin: ErrorOrigin::Llm,
            conversation: conversation(),
        },
        AgentState::ProcessingLlmResponse {
            response: AssistantMessage { text: "x".to_owned(), tool_calls: Vec::new(), ..Default::default() },
            conversation: conversation(),
        },
        AgentState::ShuttingDown,
    ];
    for start in starts {
        let name = start.name();
        for events in [
            vec![
                E::PostToolsHookCompleted { action_taken: false },
                E::Interrupted { cause: "ctrl-c".to_owned() },
                E::Interrupted { cause: "again".to_owned() },
                E::ShutdownRequested,
                E::Interrupted { cause: "late".to_owned() },
            ],
            vec![E::ShutdownRequested, E::ShutdownRequested, E::RetryTimeoutFired],
        ] {
            traces.push(Trace { name: format!("coverage_star_rows_from_{name}"), start: start.clone(), events });
        }
    }
    traces
}
