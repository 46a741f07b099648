//! The chat agent the store tests drive: a machine whose context grows
//! with every turn, another machine to read a store it did not write, and
//! `Agent`, which logs each step with the effect rows its action starts and
//! its result ends, as the executor does.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use std::time::{Duration, SystemTime};

use agent_fsm::store::{CheckpointStore, Effect, EffectKind, Journal, SnapshotPolicy, StoreError};
use serde::{Deserialize, Serialize};

/// A conversation: what the context of a chat agent grows with.
#[allow(unreachable_pub)]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Convo {
    /// Every prompt and reply, in order.
    pub messages: Vec<String>,
    /// Model calls made so far.
    pub calls: u32,
}

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Chat)]
mod chat {
    use super::Convo;

    #[context]
    pub type Context = Convo;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
        Calling {
            call: u32,
        },
        #[terminal]
        Done,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Prompt(String),
        Reply(u32, String),
        Timeout,
        Stop,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
        Call(u32),
        Respond(String),
        Bye,
    }

    transitions! {
        Idle + Prompt(text) => { ctx.messages.push(text); ctx.calls += 1; } Calling { call: ctx.calls } / Call(ctx.calls),
        Calling { call } + Reply(c, text) [*c == *call] => { ctx.messages.push(text.clone()); } Idle / Respond(text),
        Calling + Timeout => Idle / Nothing,
        Idle + Stop => Done / Bye,
    }
}

/// Another machine, to read a store it did not write.
#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Counter)]
pub(crate) mod counter {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        Tick,
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
    }

    transitions! {
        Idle + Tick => Idle / Nothing,
    }
}

pub(crate) use chat::{Action, Chat as Machine, Event};

/// A live agent: the machine and its journal, driven as the executor will.
pub(crate) struct Agent {
    pub(crate) machine: Machine,
    pub(crate) journal: Journal<Machine>,
}

impl Agent {
    pub(crate) fn new(store: &dyn CheckpointStore, id: &str) -> Self {
        let machine = Machine::new(Convo::default());
        let journal = Journal::create(store, id, &machine).expect("create");
        Self { machine, journal }
    }

    pub(crate) fn policy(mut self, policy: SnapshotPolicy) -> Self {
        self.journal = self.journal.with_policy(policy);
        self
    }

    /// One step: the event logged with the work its action starts (a
    /// keyed call and its deadline timer) and the work its result ends.
    pub(crate) fn step(&mut self, store: &dyn CheckpointStore, event: Event) -> Result<Action, StoreError> {
        let mut pending = self.journal.begin(&event)?;
        let result_of = match &event {
            Event::Reply(call, _) => Some(*call),
            Event::Timeout => Some(self.machine.context().calls),
            _ => None,
        };
        if let Some(call) = result_of {
            pending.finish(EffectKind::Task, format!("call-{call}"));
            pending.finish(EffectKind::Timer, "deadline");
        }
        let action = self.machine.handle_event(event);
        if let Action::Call(n) = action {
            pending.start(Effect::task(format!("call-{n}")));
            let deadline = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + u64::from(n));
            pending.start(Effect::timer("deadline", deadline, Journal::<Machine>::encode(&Event::Timeout)?));
        }
        self.journal.commit(store, pending, &self.machine)?;
        Ok(action)
    }

    /// A turn: a prompt and its reply.
    pub(crate) fn turn(&mut self, store: &dyn CheckpointStore, text: &str) {
        self.step(store, Event::Prompt(format!("user: {text}"))).expect("prompt");
        let call = self.machine.context().calls;
        self.step(store, Event::Reply(call, format!("model: {text}"))).expect("reply");
    }
}

/// Agent `id` in `store` after two turns and a prompt whose call and
/// deadline timer are in flight.
pub(crate) fn in_flight(store: &dyn CheckpointStore, id: &str) -> Agent {
    let mut agent = Agent::new(store, id);
    agent.turn(store, "one");
    agent.turn(store, "two");
    agent.step(store, Event::Prompt("user: three".to_owned())).expect("prompt");
    agent
}

pub(crate) fn assert_same(a: &Machine, b: &Machine) {
    assert_eq!(a.state(), b.state());
    assert_eq!(a.context(), b.context());
}
