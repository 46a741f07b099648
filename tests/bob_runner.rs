//! bob's `run_to_completion`: the model is asked at most `max_steps`
//! times, and the run ends as the table says.

use agent_fsm_examples::bob::*;

/// Asks for one tool call on every reply and counts the replies.
struct Looping {
    asked: u32,
}

impl Model for Looping {
    fn reply(&mut self, _: &RunnerContext) -> AssistantMessage {
        self.asked += 1;
        let id = format!("call-{}", self.asked);
        call_tools(vec![ToolCall { id, name: "look".into(), arguments: serde_json::json!({}) }])
    }
}

/// Answers every call; `look` needs no approval.
struct Echo;

impl Tools for Echo {
    fn run(&mut self, calls: &[ToolCall]) -> Vec<ToolResult> {
        calls.iter().map(|c| ToolResult { call_id: c.id.clone(), content: "seen".into(), is_error: false }).collect()
    }

    fn needs_approval(&self, _: &ToolCall) -> bool {
        false
    }
}

/// Never consulted here.
struct Nobody;

impl Approver for Nobody {
    fn decide(&mut self, _: &Approval) -> bool {
        false
    }
}

/// `max_steps` counts model calls: a model that never stops asking for
/// tools is asked exactly that many times, not once more for a reply the
/// step guard then throws away.
#[test]
fn a_run_asks_the_model_at_most_max_steps_times() {
    for max_steps in [0, 1, 3] {
        let mut model = Looping { asked: 0 };
        let done = run_to_completion(
            typed::Ready::new(RunnerContext::new("look around", max_steps)),
            &mut model,
            &mut Echo,
            &mut Nobody,
        );
        assert_eq!(model.asked, max_steps, "model calls with max_steps {max_steps}");
        assert_eq!(done.reason(), &FinishReason::MaxSteps);
        assert_eq!(done.context().steps_taken, max_steps);
        assert_eq!(done.context().transcript.len(), max_steps as usize, "every call asked for was answered");
    }
}
