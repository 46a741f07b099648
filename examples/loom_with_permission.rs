//! Loom with a permission step, declared as a variant of the Loom table
//! (`src/loom_with_permission.rs`): a call of any tool not listed as
//! read-only (`AgentConfig::read_only_tools`) waits for the user's
//! permission.
//!
//! ```text
//! cargo run --example loom_with_permission
//! ```
//!
//! The example steps the machine through two turns, printing every hop the
//! observer sees: one turn where the user allows an edit, one where they
//! deny it. The variant's table adds one state and seven rows and replaces
//! one; the rest (shutdown from every state, retries, tool tracking) is
//! Loom's, inherited without a word.

use agent_fsm::{Observer, StepOf};
use agent_fsm_examples::loom::{AgentConfig, Message, ToolCall, ToolExecutionOutcome};
use agent_fsm_examples::loom_with_permission::{AgentAction, AgentEvent, LoomWithPermission, request_id};

struct Print;

impl Observer<LoomWithPermission> for Print {
    fn on_transition(&mut self, step: &StepOf<LoomWithPermission>) {
        let action = step.action.map_or(String::new(), |a| format!(" / {a}"));
        println!("  {} --{}--> {}{action}", step.from, step.event.map_or("(eventless)", |e| e.name()), step.to);
    }
}

fn completed(text: &str, calls: Vec<ToolCall>) -> AgentEvent {
    AgentEvent::LlmEvent(agent_fsm_examples::loom::reply(text, calls))
}

fn edit(id: &str) -> ToolCall {
    ToolCall { id: id.into(), name: "edit_file".into(), arguments: serde_json::json!({ "path": "notes.txt" }) }
}

fn main() {
    let mut agent = LoomWithPermission::new(AgentConfig::default());
    println!(
        "variant `{}`: {} states, {} rows",
        LoomWithPermission::DESCRIPTION.name,
        LoomWithPermission::DESCRIPTION.states.len(),
        LoomWithPermission::DESCRIPTION.transitions.len()
    );

    println!("turn 1: the user allows the edit");
    for event in [
        AgentEvent::UserInput(Message::user("tidy my notes")),
        completed("I'll edit notes.txt.", vec![edit("c1")]),
        // The request's id, from its position in the conversation (user,
        // assistant) and its calls, as `AskPermission` gives it.
        AgentEvent::PermissionGranted { request_id: request_id(2, &[edit("c1")]) },
        AgentEvent::ToolCompleted {
            call_id: "c1".into(),
            outcome: ToolExecutionOutcome::Success { call_id: "c1".into(), output: "edited".into() },
        },
        AgentEvent::PostToolsHookCompleted { action_taken: true },
        completed("Done.", vec![]),
    ] {
        let action = agent.handle_event_with(event, &mut Print);
        println!("    -> {}", action.name());
    }

    println!("turn 2: the user denies it");
    for event in [
        AgentEvent::UserInput(Message::user("and delete the old ones")),
        completed("I'll edit notes.txt again.", vec![edit("c2")]),
        AgentEvent::PermissionDenied { request_id: request_id(6, &[edit("c2")]), reason: "keep them".into() },
    ] {
        match agent.handle_event_with(event, &mut Print) {
            AgentAction::DisplayError(message) => println!("    -> DisplayError: {message}"),
            other => println!("    -> {}", other.name()),
        }
    }
    let conversation = agent.state().conversation().map_or(0, |c| c.len());
    println!("ended in {} with {conversation} messages", agent.state().name());
}
