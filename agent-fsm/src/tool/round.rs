//! [`ToolRound`]: the results of one reply's tool calls, collected as
//! their tasks end and handed back in call order.

use serde::{Deserialize, Serialize};

use crate::llm::{Message, ToolCall, ToolResult};

/// One reply's tool calls and the results received so far, for a machine
/// to keep in its state while the calls run as tasks
/// ([`ToolSet::spawn_calls`](super::ToolSet::spawn_calls)).
///
/// Results arrive in completion order; [`into_messages`](Self::into_messages)
/// returns them in call order, as both providers expect.
///
/// # Examples
/// ```
/// use agent_fsm::llm::{Message, ToolCall, ToolResult};
/// use agent_fsm::tool::ToolRound;
/// use serde_json::json;
///
/// let call = |id: &str| ToolCall { id: id.into(), name: "read_file".into(), arguments: json!({"path": id}) };
/// let mut round = ToolRound::new(&[call("a"), call("b")]);
/// // `b` ends first.
/// assert!(round.record(ToolResult { call_id: "b".into(), content: "B".into(), is_error: false }));
/// assert_eq!(round.pending_count(), 1);
/// assert!(round.record(ToolResult { call_id: "a".into(), content: "A".into(), is_error: false }));
/// assert!(round.is_complete());
/// assert_eq!(round.into_messages(), [Message::tool_result("a", "A"), Message::tool_result("b", "B")]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolRound {
    /// Per call, in call order: its id, its tool's name, and its result
    /// once received.
    calls: Vec<Slot>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Slot {
    call_id: String,
    tool: String,
    result: Option<ToolResult>,
}

impl ToolRound {
    /// Every call pending, in the order the model asked.
    #[must_use]
    pub fn new(calls: &[ToolCall]) -> Self {
        let calls = calls.iter().map(|c| Slot { call_id: c.id.clone(), tool: c.name.clone(), result: None }).collect();
        ToolRound { calls }
    }

    /// Records `result` for the first pending call it answers. Returns
    /// `false`, recording nothing, when no pending call has its id (an
    /// unknown call, or one already answered).
    pub fn record(&mut self, result: ToolResult) -> bool {
        match self.calls.iter_mut().find(|s| s.result.is_none() && s.call_id == result.call_id) {
            Some(slot) => {
                slot.result = Some(result);
                true
            }
            None => false,
        }
    }

    /// Whether `call_id` is a call of this round still waiting for its
    /// result.
    #[must_use]
    pub fn is_pending(&self, call_id: &str) -> bool {
        self.calls.iter().any(|s| s.result.is_none() && s.call_id == call_id)
    }

    /// How many calls still wait for their result.
    #[must_use]
    pub fn pending_count(&self) -> usize {
        self.calls.iter().filter(|s| s.result.is_none()).count()
    }

    /// Whether every call has its result.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.pending_count() == 0
    }

    /// The results received so far, in call order.
    pub fn results(&self) -> impl Iterator<Item = &ToolResult> {
        self.calls.iter().filter_map(|s| s.result.as_ref())
    }

    /// One tool message per call, in call order. A call still pending gets
    /// an error result saying so: both providers refuse a conversation in
    /// which a tool call has no result.
    #[must_use]
    pub fn into_messages(self) -> Vec<Message> {
        self.calls
            .into_iter()
            .map(|slot| match slot.result {
                Some(result) => Message::Tool(result),
                None => Message::tool_error(slot.call_id, format!("`{}` returned no result", slot.tool)),
            })
            .collect()
    }
}
