//! What the Shadow agent tests share: a runtime over a fresh workspace
//! that keeps every update it published and answers permission requests
//! and questions by a policy, and readers of a handle's history and
//! conversation.

// Each test file including this module uses a different part of it.
#![allow(dead_code)]

use std::time::Duration;

use agent_fsm::Recorder;
use agent_fsm::runtime::History;
use agent_fsm_examples::coding_agent::Workspace;
use agent_fsm_examples::shadow::{INTERRUPTED, Message, Permission, Shadow, ShadowContext, ShadowEvent, ShadowState};
use agent_fsm_examples::shadow_agent::{
    AgentRuntime, AgentUpdate, Output, ScriptedLlm, ShadowHandle, prepare_workspace,
};
use tokio::sync::broadcast;

/// How long a test waits for the next update before it fails (virtual
/// time under paused time).
pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// How the test answers permission requests and questions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    pub(crate) allow: bool,
    pub(crate) remember: bool,
    pub(crate) answer: &'static str,
}

pub(crate) const APPROVE: Policy = Policy { allow: true, remember: false, answer: "blue" };

/// A runtime over a fresh workspace, with every update it published.
pub(crate) struct Harness {
    pub(crate) runtime: AgentRuntime,
    pub(crate) updates: broadcast::Receiver<AgentUpdate>,
    pub(crate) seen: Vec<AgentUpdate>,
    pub(crate) dir: tempfile::TempDir,
}

impl Harness {
    pub(crate) fn new() -> Self {
        Self::with_config(AgentRuntime::default_config())
    }

    pub(crate) fn with_config(config: agent_fsm::ExecutorConfig<Shadow>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        prepare_workspace(dir.path()).expect("workspace");
        let llm = ScriptedLlm { delay: Duration::from_millis(10) };
        let runtime = AgentRuntime::with_config(llm, Workspace::new(dir.path()), config);
        let updates = runtime.subscribe();
        Harness { runtime, updates, seen: Vec::new(), dir }
    }

    pub(crate) fn spawn(&self, rules: &[(&str, Permission)]) -> ShadowHandle {
        self.runtime.spawn("main", rules).expect("spawned")
    }

    pub(crate) fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join(name)).ok()
    }

    /// The next update of any agent.
    pub(crate) async fn next(&mut self) -> AgentUpdate {
        let update = tokio::time::timeout(WAIT, self.updates.recv())
            .await
            .expect("an update in time")
            .expect("the runtime's channel neither lagged nor closed");
        self.seen.push(update.clone());
        update
    }

    /// Reads the updates already published (the rest of a step's outputs).
    pub(crate) fn drain(&mut self) {
        loop {
            match self.updates.try_recv() {
                Ok(update) => self.seen.push(update),
                Err(broadcast::error::TryRecvError::Empty) => return,
                Err(error) => panic!("the runtime's channel: {error}"),
            }
        }
    }

    /// The first update matching `matches`.
    pub(crate) async fn until(&mut self, matches: impl Fn(&AgentUpdate) -> bool) -> AgentUpdate {
        loop {
            let update = self.next().await;
            if matches(&update) {
                return update;
            }
        }
    }

    /// Waits until `session` enters the state named `name`.
    pub(crate) async fn until_state(&mut self, session: &str, name: &str) -> ShadowState {
        let update = self
            .until(|u| {
                &*u.session_id == session
                    && matches!(&u.output, Output::StateChanged { state, .. } if state.name() == name)
            })
            .await;
        match update.output {
            Output::StateChanged { state, .. } => state,
            _ => unreachable!("matched a state change"),
        }
    }

    /// Sends `prompt` to `handle` and answers every request per `policy`
    /// until the agent rests (`Idle`, `Done` or `Error`).
    pub(crate) async fn turn(&mut self, handle: &ShadowHandle, prompt: &str, policy: Policy) -> ShadowState {
        handle.send(ShadowEvent::UserInput(prompt.to_owned())).await.expect("input sent");
        self.settle("main", policy).await
    }

    /// Answers requests per `policy` until `session` rests.
    pub(crate) async fn settle(&mut self, session: &str, policy: Policy) -> ShadowState {
        loop {
            let update = self.next().await;
            match update.output {
                Output::PermissionRequested { request_id, .. } => {
                    let reply =
                        ShadowEvent::PermissionReply { request_id, allowed: policy.allow, remember: policy.remember };
                    self.agent(&update.session_id).send(reply).await.expect("reply sent");
                }
                Output::Question { request_id, .. } => {
                    let answer = ShadowEvent::QuestionAnswered { request_id, answers: vec![policy.answer.to_owned()] };
                    self.agent(&update.session_id).send(answer).await.expect("answer sent");
                }
                Output::StateChanged { state, .. } if &*update.session_id == session && at_rest(&state) => {
                    self.drain();
                    return state;
                }
                _ => {}
            }
        }
    }

    pub(crate) fn agent(&self, session: &str) -> ShadowHandle {
        self.runtime.get(session).expect("the agent is running")
    }

    /// The states `session` published, in order.
    pub(crate) fn published(&self, session: &str) -> Vec<&'static str> {
        self.outputs(session)
            .filter_map(|o| match o {
                Output::StateChanged { state, .. } => Some(state.name()),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn outputs<'a>(&'a self, session: &'a str) -> impl Iterator<Item = &'a Output> + 'a {
        self.seen.iter().filter(move |u| &*u.session_id == session).map(|u| &u.output)
    }

    pub(crate) fn responses(&self, session: &str) -> Vec<String> {
        self.outputs(session)
            .filter_map(|o| match o {
                Output::Response(text) => Some(text.clone()),
                _ => None,
            })
            .collect()
    }
}

pub(crate) fn at_rest(state: &ShadowState) -> bool {
    matches!(state, ShadowState::Idle | ShadowState::Done | ShadowState::Error { .. })
}

/// The states the history went through: where it started, then every
/// state a hop changed to.
pub(crate) fn states(history: &History<Shadow>) -> Vec<&'static str> {
    let mut states = vec![history.transitions().next().map_or("Idle", |t| t.from.name())];
    states.extend(history.transitions().filter(|t| t.from != t.to).map(|t| t.to.name()));
    states
}

/// The hops of the history as `(from, event, to, action)`.
pub(crate) fn hops(history: &History<Shadow>) -> Vec<agent_fsm::HopNames> {
    history
        .transitions()
        .map(|t| (t.from.name(), t.event.map(|e| e.name()), t.to.name(), t.action.map(|a| a.name())))
        .collect()
}

/// The agent's history is the table's own path: the recorded events, fed
/// to a fresh machine built like the agent's, take exactly the recorded
/// hops (no hop the table would not take, none missing) and end in the
/// agent's state and context. The states the effects published are the
/// history's changes of state, in order. Returns the history.
pub(crate) async fn assert_history_is_the_tables_path(
    h: &mut Harness,
    handle: &ShadowHandle,
    initial: ShadowContext,
) -> History<Shadow> {
    let history = handle.history().await.expect("history");
    let (state, context) = handle.inspect(|m| (m.state().clone(), m.context().clone())).await.expect("inspect");
    // Every step so far was published before the worker answered.
    h.drain();
    let events = history.events().expect("the runtime records the event log");
    let mut fresh = Shadow::new(initial);
    let mut table = Recorder::default();
    for record in events {
        fresh.handle_event_with(record.event.clone(), &mut table);
    }
    let recorded: Vec<_> = history.transitions().map(|t| (t.from, t.event, t.to, t.action, t.row)).collect();
    let replayed: Vec<_> = table.steps.iter().map(|s| (s.from, s.event, s.to, s.action, s.row)).collect();
    assert_eq!(history.evicted(), 0);
    assert_eq!(recorded, replayed, "the history is the table's path");
    assert_eq!(fresh.state(), &state);
    assert_eq!(fresh.context(), &context);
    let session = context.session_id.as_str();
    assert_eq!(h.published(session), states(&history)[1..].to_vec(), "every change published, nothing else");
    history
}

pub(crate) fn main_context(rules: &[(&str, Permission)]) -> ShadowContext {
    rules.iter().fold(ShadowContext::new("main"), |ctx, (tool, rule)| ctx.with_rule(*tool, *rule))
}

pub(crate) async fn conversation(handle: &ShadowHandle) -> Vec<Message> {
    handle.inspect(|m| m.context().conversation.clone()).await.expect("inspect")
}

pub(crate) fn ok(id: &str, content: &str) -> Message {
    Message::tool_result(id, content)
}

pub(crate) fn err(id: &str, content: &str) -> Message {
    Message::tool_error(id, content)
}

pub(crate) fn interrupted() -> Message {
    Message::user(INTERRUPTED)
}
