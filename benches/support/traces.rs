//! The benched event traces, built outside any timed region.

use agent_fsm_examples::loom::{
    AgentConfig, AgentEvent, AgentState, ConversationContext, Message, StreamEvent, ToolCall, ToolExecutionOutcome,
};

/// Deltas in trace (a).
pub(crate) const TEXT_DELTAS: usize = 2_000;
/// Tool rounds in trace (b).
pub(crate) const TOOL_ROUNDS: usize = 500;
/// Deltas per flatness iteration.
pub(crate) const FLAT_DELTAS: usize = 1_000;
/// Conversation sizes of the flatness group.
pub(crate) const FLAT_SIZES: [usize; 4] = [10, 100, 1_000, 10_000];

/// A starting point and the events to feed from it.
#[derive(Debug, Clone)]
pub(crate) struct Trace {
    pub(crate) name: String,
    pub(crate) start: AgentState,
    pub(crate) events: Vec<AgentEvent>,
}

pub(crate) fn config() -> AgentConfig {
    AgentConfig::default()
}

fn idle() -> AgentState {
    AgentState::WaitingForUserInput { conversation: ConversationContext::default() }
}

fn delta(text: &str) -> AgentEvent {
    AgentEvent::LlmEvent(StreamEvent::TextDelta(text.to_owned()))
}

/// (a) One user turn: `UserInput`, 2,000 `TextDelta`s, a text-only `Completed`.
pub(crate) fn text_turn() -> Trace {
    let mut events = Vec::with_capacity(TEXT_DELTAS + 2);
    events.push(AgentEvent::UserInput(Message::user("explain the dispatch loop")));
    let words = ["tok", "en", " the", "ok"];
    for i in 0..TEXT_DELTAS {
        events.push(delta(words[i % words.len()]));
    }
    events.push(AgentEvent::LlmEvent(agent_fsm_examples::loom::reply("the whole reply", Vec::new())));
    Trace { name: "a_text_turn".to_owned(), start: idle(), events }
}

/// (b) A tool loop: `UserInput`, then 500 rounds of `Completed` with four
/// tool calls (two `edit_file`, two `read_file`), their four
/// `ToolCompleted` in another order than called, `PostToolsHookCompleted`;
/// then a text-only `Completed`.
pub(crate) fn tool_loop() -> Trace {
    let mut events = Vec::with_capacity(2 + TOOL_ROUNDS * 6);
    events.push(AgentEvent::UserInput(Message::user("fix the failing tests")));
    for round in 0..TOOL_ROUNDS {
        let names = ["edit_file", "read_file", "edit_file", "read_file"];
        let calls: Vec<ToolCall> = names
            .iter()
            .enumerate()
            .map(|(i, name)| ToolCall {
                id: format!("call_{round}_{i}"),
                name: (*name).to_owned(),
                arguments: serde_json::json!({ "path": format!("src/file_{i}.rs") }),
            })
            .collect();
        let ids: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
        events.push(AgentEvent::LlmEvent(agent_fsm_examples::loom::reply("running tools", calls)));
        // Completion order differs from call order: 3, 0, 2, 1.
        for &i in &[3usize, 0, 2, 1] {
            events.push(AgentEvent::ToolCompleted {
                call_id: ids[i].clone(),
                outcome: ToolExecutionOutcome::Success {
                    call_id: ids[i].clone(),
                    output: serde_json::Value::String("ok".to_owned()),
                },
            });
        }
        events.push(AgentEvent::PostToolsHookCompleted { action_taken: true });
    }
    events.push(AgentEvent::LlmEvent(agent_fsm_examples::loom::reply("all tests pass", Vec::new())));
    Trace { name: "b_tool_loop".to_owned(), start: idle(), events }
}

/// A conversation of `n` messages (alternating user and assistant).
pub(crate) fn conversation(n: usize) -> ConversationContext {
    let messages = (0..n)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(format!("user message {i}"))
            } else {
                Message::assistant(format!("assistant message {i}"))
            }
        })
        .collect();
    ConversationContext::from_messages(messages)
}

/// Flatness: `CallingLlm` with the conversation pre-filled to `n` messages,
/// then 1,000 `TextDelta`s.
pub(crate) fn flat(n: usize) -> Trace {
    let words = ["tok", "en", " the", "ok"];
    Trace {
        name: format!("flat_{n}"),
        start: AgentState::CallingLlm { retries: 0, conversation: conversation(n) },
        events: (0..FLAT_DELTAS).map(|i| delta(words[i % words.len()])).collect(),
    }
}
