//! Where each tool call of a round is ([`Executions`]): pending, running
//! or completed, in call order, and the results it adds to the
//! conversation once every call is done.

use super::{ConversationContext, Message, ToolCall, ToolError, ToolExecutionOutcome, ToolProgress};

/// Where one tool call is: `Pending` -> `Running` -> `Completed`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ToolExecutionStatus {
    /// Asked for, not started.
    Pending {
        /// The call.
        call: ToolCall,
    },
    /// Reported progress at least once.
    Running {
        /// The call.
        call: ToolCall,
        /// The latest progress.
        progress: ToolProgress,
    },
    /// Finished.
    Completed {
        /// The call.
        call: ToolCall,
        /// How it ended.
        outcome: ToolExecutionOutcome,
    },
}

impl ToolExecutionStatus {
    fn call(&self) -> &ToolCall {
        match self {
            Self::Pending { call } | Self::Running { call, .. } | Self::Completed { call, .. } => call,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self, Self::Completed { .. })
    }
}

/// The tool calls of one round, in call order.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Executions {
    statuses: Vec<ToolExecutionStatus>,
}

impl Executions {
    /// Every call `Pending`, in the order the model asked.
    #[must_use]
    pub fn pending(calls: &[ToolCall]) -> Self {
        Executions { statuses: calls.iter().map(|c| ToolExecutionStatus::Pending { call: c.clone() }).collect() }
    }

    /// The statuses in call order.
    #[must_use]
    pub fn statuses(&self) -> &[ToolExecutionStatus] {
        &self.statuses
    }

    /// Whether `call_id` is a call of this round that has not completed.
    #[must_use]
    pub fn is_pending(&self, call_id: &str) -> bool {
        self.statuses.iter().any(|s| s.call().id == call_id && !s.is_done())
    }

    /// Where `call_id` sits among this round's calls, if it has not
    /// completed: a guard finds it once and hands the position to its row
    /// (`[let Some(at) = executions.pending_at(call_id)]`), which then
    /// completes it with [`complete_at`](Self::complete_at) without
    /// searching again.
    #[must_use]
    pub fn pending_at(&self, call_id: &str) -> Option<usize> {
        self.statuses.iter().position(|s| s.call().id == call_id && !s.is_done())
    }

    /// How many calls have not completed.
    #[must_use]
    pub fn pending_count(&self) -> usize {
        self.statuses.iter().filter(|s| !s.is_done()).count()
    }

    /// Marks `call_id` running with `progress`. Does nothing for a call
    /// that is not pending (the table reports those before calling this).
    pub fn progress(&mut self, call_id: &str, progress: ToolProgress) {
        if let Some(s) = self.statuses.iter_mut().find(|s| s.call().id == call_id && !s.is_done()) {
            *s = ToolExecutionStatus::Running { call: s.call().clone(), progress };
        }
    }

    /// Marks `call_id` completed. Does nothing for a call that is not
    /// pending (the table reports those before calling this).
    pub fn complete(&mut self, call_id: &str, outcome: ToolExecutionOutcome) {
        if let Some(s) = self.statuses.iter_mut().find(|s| s.call().id == call_id && !s.is_done()) {
            *s = ToolExecutionStatus::Completed { call: s.call().clone(), outcome };
        }
    }

    /// Marks the call at `at` (from [`pending_at`](Self::pending_at))
    /// running with `progress`. Does nothing past the end.
    pub fn progress_at(&mut self, at: usize, progress: ToolProgress) {
        if let Some(s) = self.statuses.get_mut(at) {
            *s = ToolExecutionStatus::Running { call: s.call().clone(), progress };
        }
    }

    /// Marks the call at `at` (from [`pending_at`](Self::pending_at))
    /// completed. Does nothing past the end.
    pub fn complete_at(&mut self, at: usize, outcome: ToolExecutionOutcome) {
        if let Some(s) = self.statuses.get_mut(at) {
            *s = ToolExecutionStatus::Completed { call: s.call().clone(), outcome };
        }
    }

    /// [`mutates_with`](Self::mutates_with) for the call at `at`: whether,
    /// once it ends with `outcome`, a mutating tool will have succeeded in
    /// this round.
    #[must_use]
    pub fn mutates_at(&self, at: usize, outcome: &ToolExecutionOutcome, mutating: &[String]) -> bool {
        let is_mutating = |name: &str| mutating.iter().any(|m| m == name);
        self.statuses.iter().enumerate().any(|(i, s)| match s {
            ToolExecutionStatus::Completed { call, outcome } => is_mutating(&call.name) && outcome.is_success(),
            other => i == at && is_mutating(&other.call().name) && outcome.is_success(),
        })
    }

    /// Whether, once `call_id` ends with `outcome`, a mutating tool will
    /// have succeeded in this round.
    #[must_use]
    pub fn mutates_with(&self, call_id: &str, outcome: &ToolExecutionOutcome, mutating: &[String]) -> bool {
        let is_mutating = |name: &str| mutating.iter().any(|m| m == name);
        self.statuses.iter().any(|s| match s {
            ToolExecutionStatus::Completed { call, outcome } => is_mutating(&call.name) && outcome.is_success(),
            other => other.call().id == call_id && is_mutating(&other.call().name) && outcome.is_success(),
        })
    }

    /// Completes every call that has no result yet with an error saying
    /// the turn was interrupted (`cause`): the round ends with a result
    /// for each call, the finished ones keeping theirs.
    pub fn interrupt_pending(&mut self, cause: &str) {
        for s in &mut self.statuses {
            if !s.is_done() {
                let call = s.call().clone();
                let error = ToolError { message: format!("interrupted: {cause}") };
                let outcome = ToolExecutionOutcome::Error { call_id: call.id.clone(), error };
                *s = ToolExecutionStatus::Completed { call, outcome };
            }
        }
    }

    /// Appends one tool-result message per call to `conversation`, in call
    /// order, and returns what the post-tool hook needs to know.
    pub fn record_results(&self, conversation: &mut ConversationContext) -> Vec<CompletedToolInfo> {
        let mut info = Vec::with_capacity(self.statuses.len());
        for status in &self.statuses {
            if let ToolExecutionStatus::Completed { call, outcome } = status {
                let text = outcome.to_message_text();
                conversation.push(if outcome.is_success() {
                    Message::tool_result(call.id.clone(), text)
                } else {
                    Message::tool_error(call.id.clone(), text)
                });
                info.push(CompletedToolInfo { tool_name: call.name.clone(), succeeded: outcome.is_success() });
            }
        }
        info
    }
}

/// What the post-tool hook learns about each completed call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CompletedToolInfo {
    /// The tool's name.
    pub tool_name: String,
    /// Whether it succeeded.
    pub succeeded: bool,
}
