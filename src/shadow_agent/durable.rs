//! Durable Shadow agents: what [`AgentRuntime`](super::AgentRuntime) reads
//! from its checkpoint store before it spawns an agent found there, so that
//! a parent resumed with its child does not give the child its task twice,
//! and hears the answer a child gave before the restart.

use agent_fsm::store::{CheckpointStore, StoreError, restore};

use super::ChildResult;
use crate::shadow::{INTERRUPTED, Message, Shadow, ShadowState};

/// What the store held of an agent about to be spawned.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Found {
    /// Nothing: the agent starts afresh.
    New,
    /// The agent, which continues where its last step left it.
    Resumed {
        /// Whether it took input already (its conversation is not empty):
        /// a child that did has its task and must not be given it again.
        took_input: bool,
        /// What it answered, if it was at rest (its turn over) already.
        answer: Option<ChildResult>,
    },
}

impl Found {
    /// Whether the agent still needs its task sent.
    pub(super) fn needs_input(&self) -> bool {
        matches!(self, Found::New | Found::Resumed { took_input: false, .. })
    }
}

/// What `store` holds of `session_id`. Rebuilding the machine costs a
/// second read of its log (the spawn reads it again); only children are
/// looked up, whose logs are short.
///
/// # Errors
/// What reading the store gives.
pub(super) fn look_up(store: &dyn CheckpointStore, session_id: &str) -> Result<Found, StoreError> {
    if store.agent(session_id)?.is_none() {
        return Ok(Found::New);
    }
    let machine = restore::<Shadow, _>(store, session_id)?.machine;
    let took_input = !machine.context().conversation.is_empty();
    Ok(Found::Resumed { took_input, answer: answer_at_rest(&machine) })
}

/// The answer of an agent whose turn is over, as its effects reported it
/// when it gave it: the reply of an agent back in `Idle`, the failure of
/// one in `Error`, [`INTERRUPTED`] for one interrupted. `None` while the
/// turn goes on, or before the agent took input.
///
/// A denied permission also ends in `Done`; its answer is not kept in the
/// machine, so it reads as ended without an answer.
pub(super) fn answer_at_rest(machine: &Shadow) -> Option<ChildResult> {
    let conversation = &machine.context().conversation;
    match machine.state() {
        ShadowState::Idle => match conversation.last()? {
            Message::Assistant(reply) => Some(Ok(reply.text.clone())),
            _ => None,
        },
        ShadowState::Error { message } => Some(Err(message.clone())),
        ShadowState::Done => Some(Err(match conversation.last() {
            Some(Message::User { content }) if content == INTERRUPTED => INTERRUPTED.to_owned(),
            _ => "the subagent ended its task without an answer".to_owned(),
        })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use agent_fsm::llm::ErrorKind;

    use super::*;
    use crate::shadow::{ProviderError, ShadowContext, ShadowEvent};

    fn after(events: Vec<ShadowEvent>) -> Shadow {
        let mut machine = Shadow::new(ShadowContext::new("main/toolu_1"));
        for event in events {
            machine.handle_event(event);
        }
        machine
    }

    fn task() -> ShadowEvent {
        ShadowEvent::UserInput("Summarise CHANGELOG.md".to_owned())
    }

    #[test]
    fn a_failed_child_answers_its_failure() {
        let failed = ShadowEvent::LlmFailed(ProviderError::new(ErrorKind::BadRequest, "no"));
        let machine = after(vec![task(), failed]);
        let ShadowState::Error { message } = machine.state().clone() else { panic!("in Error") };
        assert_eq!(answer_at_rest(&machine), Some(Err(message)));
    }

    #[test]
    fn an_interrupted_child_answers_interrupted_and_one_ended_otherwise_says_so() {
        let interrupted = after(vec![task(), ShadowEvent::Interrupt]);
        assert_eq!(answer_at_rest(&interrupted), Some(Err(INTERRUPTED.to_owned())));
        let ended = after(vec![task(), ShadowEvent::Shutdown]);
        assert_eq!(ended.state(), &ShadowState::Done);
        assert_eq!(answer_at_rest(&ended), Some(Err("the subagent ended its task without an answer".to_owned())));
    }

    #[test]
    fn a_child_mid_turn_or_without_its_task_has_no_answer_yet() {
        assert_eq!(answer_at_rest(&after(vec![])), None);
        assert_eq!(answer_at_rest(&after(vec![task()])), None);
    }
}
