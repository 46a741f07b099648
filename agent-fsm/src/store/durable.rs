//! Durable agents: [`Durable`] spawns a machine on the runtime with its
//! steps written to a [`CheckpointStore`], or, when the store already
//! holds the agent, spawns it again where its last written step left it,
//! with the work that was in flight performed again and its timers and
//! sends re-armed.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::restore::{machine_of, replay_checked};
use super::{CheckpointStore, EffectKind, Journal, SnapshotPolicy, StoreError};
use crate::StateMachine;
use crate::runtime::durable::{Keep, Replay, WorkId, WorkKind};
use crate::runtime::{Effects, ExecutorConfig, MachineHandle};

mod writer;

#[cfg(feature = "fleet")]
pub(crate) use writer::StepMark;
pub(crate) use writer::StepWatch;
use writer::Writer;
pub use writer::{Clock, Durability};

/// How a durable agent started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Start {
    /// The store did not hold the agent: it was added, as the machine given.
    New,
    /// The store held the agent: it continues after its step `last`.
    Resumed {
        /// The last step written before.
        last: u64,
    },
}

/// Spawns agents whose steps are written to a checkpoint store, and
/// spawns them again from it after their process is gone.
///
/// The contract:
/// - every event written to the log entered `handle_event` exactly once,
///   across restarts: spawned again, the agent replays its log into the
///   machine (without performing the actions again) and continues after it;
/// - effect work (a task, a stream) whose end was not written before the
///   process died is performed again after the restart, by performing the
///   action that started it again with the machine as it was then, with the
///   same key: at least once, so a tool that must not act twice
///   deduplicates by its key. The work is named by its step and its rank
///   among what the action starts, so an action that no longer starts it
///   there (a release whose effects set a timer before the tool call, or
///   open a stream where they spawned a task) fails the agent with
///   [`StoreError::Corrupt`] rather than leave its machine waiting for a
///   result that never comes. Only that work of the action starts again;
///   what the action does besides scheduling work (a line printed) is done
///   again too, while its sends and timers are not (they are restored from
///   their own rows). A stream performed again skips the items the machine
///   took before the restart, so a source that replays the same items
///   continues where it stopped; one that ends before it yielded them
///   again fails with [`EffectFailure::Diverged`](crate::runtime::EffectFailure::Diverged)
///   (its `on_failure` says what the machine gets), as what the machine
///   waits for will not come; a stream's end is written when the worker
///   sees it (its failure too, when the failure gives no event), so a
///   stream that ended is not opened again;
/// - a step that fails the worker (the machine or the effects panicking, a
///   row leaving the machine poisoned) is not written, nor are the ends of
///   the work seen since the last step written: spawned again, the agent
///   is where the step before left it, with that work in flight (the task
///   whose result the failed step took is performed again);
/// - a timer is re-armed for the time left of its deadline (fired at once
///   if it passed meanwhile, and never waiting longer than the delay it
///   was set for if the clock was set back; timers due together fire in
///   the order they were set); an event sent for delivery after its step
///   is delivered after the restart if it was not before;
/// - a stop (shutdown, every handle dropped) is a pause: the work it
///   cancels, and the shutdown event, are not written, so the next spawn
///   continues that work. Events still in the inbox when the agent stops
///   are not written. An agent that reached a terminal state is spawned
///   again as it ended, its cancelled work not performed again;
/// - an agent runs in one place at a time. Nothing locks it at spawn: two
///   spawns of one agent (two processes on one SQLite file) both resume,
///   and both perform its work in flight again; the first step written
///   wins, and the other's is refused with [`StoreError::Conflict`], which
///   stops that agent, so the log stays one. Only steps are compared: work
///   one of them marks finished between two steps (a stream that ended
///   after its last item's step) is marked for both, before either wrote
///   a step, and the other then waits for an end it will not see again.
///   (A fleet's fenced `PgStore` refuses every write of a worker that lost
///   the agent's lease.)
///
/// ```
/// # use std::sync::Arc;
/// # use agent_fsm::store::{Durable, MemoryStore, Start};
/// # use agent_fsm::runtime::ExecutorConfig;
/// #[agent_fsm::state_machine(fallback = Nothing, serde, name = Counter)]
/// mod counter {
///     #[states]
///     #[derive(Debug, Clone)]
///     pub enum State { #[initial] Counting { n: u32 } }
///     #[events]
///     #[derive(Debug)]
///     pub enum Event { Add(u32) }
///     #[actions]
///     #[derive(Debug, Default)]
///     pub enum Action { #[default] Nothing }
///     transitions! {
///         Counting { n } + Add(k) => Counting { n: n + k } / Nothing,
///     }
/// }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = Arc::new(MemoryStore::new());
/// let durable = Durable::new(store.clone(), "agent-1");
/// let (handle, start) = durable.spawn(|| counter::Counter::new(0), (), ExecutorConfig::new())?;
/// assert_eq!(start, Start::New);
/// handle.send(counter::Event::Add(2)).await?;
/// handle.wait_idle().await?; // what is still in the inbox at a stop is not written
/// handle.shutdown().await?;
///
/// // Later, in another process: the same call continues the agent.
/// let (handle, start) = Durable::new(store, "agent-1").spawn(|| counter::Counter::new(0), (), ExecutorConfig::new())?;
/// assert_eq!(start, Start::Resumed { last: 1 });
/// assert!(matches!(handle.state().await?, counter::State::Counting { n: 2 }));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Durable {
    store: Arc<dyn CheckpointStore>,
    agent: String,
    durability: Durability,
    policy: SnapshotPolicy,
    clock: Clock,
    /// Told where the journal is (the fleet's watcher reads it).
    watch: Option<StepWatch>,
}

impl fmt::Debug for Durable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Durable")
            .field("agent", &self.agent)
            .field("durability", &self.durability)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Durable {
    /// The agent `agent` of `store`, written [`Durability::BeforeAction`],
    /// with [`SnapshotPolicy::Proportional`] snapshots and the system clock.
    pub fn new(store: Arc<dyn CheckpointStore>, agent: impl Into<String>) -> Self {
        Self {
            store,
            agent: agent.into(),
            durability: Durability::default(),
            policy: SnapshotPolicy::default(),
            clock: Arc::new(SystemTime::now),
            watch: None,
        }
    }

    /// This agent with its journal telling `watch` where it is.
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    #[must_use]
    pub(crate) fn watch(mut self, watch: StepWatch) -> Self {
        self.watch = Some(watch);
        self
    }

    /// When steps are written.
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// When snapshots are taken.
    #[must_use]
    pub fn snapshots(mut self, policy: SnapshotPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The wall clock the deadlines of stored timers are read against,
    /// and the times of the steps written (the system's by default; a
    /// test on paused tokio time passes one that follows tokio's clock).
    /// A restart re-arms a timer for the time left to its deadline, and
    /// never for longer than the delay it was set for, should the clock
    /// have been set back meanwhile.
    #[must_use]
    pub fn clock(mut self, clock: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Spawns the agent on the configuration's tracker: from the store if
    /// it holds the agent (`new` is not called), else as `new()`, which is
    /// written as its checkpoint 0.
    ///
    /// # Errors
    /// What reading the store, or adding the agent to it, gives (see
    /// [`restore`](super::restore)): a store written by another machine, an
    /// unknown format, a corrupt row; [`StoreError::Corrupt`] too for a log
    /// that the machine does not replay to the states it recorded, or that
    /// misses a step, from the snapshot the work in flight is performed
    /// again from (which may be older than the one `restore` reads), and
    /// for work in flight whose key does not name the step that started it.
    ///
    /// # Panics
    /// Like `tokio::spawn`, if called outside a tokio runtime.
    pub fn spawn<M, E>(
        &self,
        new: impl FnOnce() -> M,
        effects: E,
        config: ExecutorConfig<M>,
    ) -> Result<(MachineHandle<M, E::Output>, Start), StoreError>
    where
        M: StateMachine + Send + 'static,
        M::State: Serialize + DeserializeOwned,
        M::Context: Serialize + DeserializeOwned,
        M::Event: Serialize + DeserializeOwned + Send + 'static,
        E: Effects<M>,
    {
        let tracker = config.inner.tracker.clone();
        let (handle, worker, start) = self.pair(new, effects, config)?;
        tracker.spawn(worker);
        Ok((handle, start))
    }

    /// [`spawn`](Self::spawn), with the worker handed back as a future (see
    /// [`runtime::pair`](crate::runtime::pair)).
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn).
    #[allow(clippy::type_complexity)]
    pub fn pair<M, E>(
        &self,
        new: impl FnOnce() -> M,
        effects: E,
        config: ExecutorConfig<M>,
    ) -> Result<(MachineHandle<M, E::Output>, impl Future<Output = ()> + Send + 'static, Start), StoreError>
    where
        M: StateMachine + Send + 'static,
        M::State: Serialize + DeserializeOwned,
        M::Context: Serialize + DeserializeOwned,
        M::Event: Serialize + DeserializeOwned + Send + 'static,
        E: Effects<M>,
    {
        self.pair_from(Some(new), effects, config)
    }

    /// [`pair`](Self::pair) for an agent the store already holds: it
    /// continues after its last written step, which is returned.
    ///
    /// # Errors
    /// [`StoreError::UnknownAgent`] if the store does not hold the agent
    /// (nothing is added), or as [`spawn`](Self::spawn).
    #[allow(clippy::type_complexity)]
    pub fn resume<M, E>(
        &self,
        effects: E,
        config: ExecutorConfig<M>,
    ) -> Result<(MachineHandle<M, E::Output>, impl Future<Output = ()> + Send + 'static + use<M, E>, u64), StoreError>
    where
        M: StateMachine + Send + 'static,
        M::State: Serialize + DeserializeOwned,
        M::Context: Serialize + DeserializeOwned,
        M::Event: Serialize + DeserializeOwned + Send + 'static,
        E: Effects<M>,
    {
        let (handle, worker, start) = self.pair_from(None::<fn() -> M>, effects, config)?;
        match start {
            Start::Resumed { last } => Ok((handle, worker, last)),
            Start::New => Err(StoreError::UnknownAgent(self.agent.clone())),
        }
    }

    /// [`pair`](Self::pair), adding the agent as `new()` if the store does
    /// not hold it and `new` is given.
    #[allow(clippy::type_complexity)]
    fn pair_from<M, E, N>(
        &self,
        new: Option<N>,
        effects: E,
        config: ExecutorConfig<M>,
    ) -> Result<
        (MachineHandle<M, E::Output>, impl Future<Output = ()> + Send + 'static + use<M, E, N>, Start),
        StoreError,
    >
    where
        N: FnOnce() -> M,
        M: StateMachine + Send + 'static,
        M::State: Serialize + DeserializeOwned,
        M::Context: Serialize + DeserializeOwned,
        M::Event: Serialize + DeserializeOwned + Send + 'static,
        E: Effects<M>,
    {
        let (machine, journal, replay, start) = match self.store.agent(&self.agent)? {
            None => {
                let Some(new) = new else { return Err(StoreError::UnknownAgent(self.agent.clone())) };
                let machine = new();
                let journal = Journal::create_at(&*self.store, &self.agent, &machine, (self.clock)())?;
                (machine, journal, None, Start::New)
            }
            Some(_) => {
                let restored = super::restore::<M, _>(&*self.store, &self.agent)?;
                let last = restored.next_seq - 1;
                if restored.machine.is_terminal() {
                    // An agent that ended is not given its work again: the
                    // work its stop cancelled is still in flight in the store.
                    (restored.machine, restored.journal, None, Start::Resumed { last })
                } else {
                    let (machine, replay) = resume_plan::<M>(&*self.store, &self.agent, last, &*self.clock)?;
                    (machine, restored.journal, Some(replay), Start::Resumed { last })
                }
            }
        };
        let writer = Writer::<M>::new(
            journal.with_policy(self.policy),
            Arc::clone(&self.store),
            self.durability,
            Arc::clone(&self.clock),
            replay,
            self.watch.clone(),
        );
        let (handle, worker) = crate::runtime::pair_with(machine, effects, config, Some(Box::new(writer)));
        Ok((handle, worker, start))
    }
}

/// The machine to hand the worker and the replay that brings it to step
/// `last` with its work in flight: the replay starts before the oldest
/// step whose task or stream is still in flight, whose action it performs
/// again.
fn resume_plan<M>(
    store: &dyn CheckpointStore,
    agent: &str,
    last: u64,
    clock: &dyn Fn() -> SystemTime,
) -> Result<(M, Replay<M::Event>), StoreError>
where
    M: StateMachine,
    M::State: DeserializeOwned,
    M::Context: DeserializeOwned,
    M::Event: DeserializeOwned,
{
    let rows = store.in_flight(agent, last)?;
    let id_of = |key: &str, seq: u64| {
        WorkId::parse(key).ok_or_else(|| StoreError::corrupt(agent, "effect", seq, format!("bad work key `{key}`")))
    };
    let mut perform: BTreeMap<u64, Keep> = BTreeMap::new();
    let mut streams = HashMap::new();
    let mut timers = Vec::new();
    let mut sends = Vec::new();
    let now = clock();
    for row in &rows {
        let id = id_of(&row.effect.key, row.started)?;
        // Work is keyed by the step that started it, which its row names
        // too, and checkpoint 0 starts none: a row that says otherwise (an
        // edited one) names work no replayed step would perform again.
        if id.step != row.started || row.started == 0 {
            let reason = format!("work key `{}` does not name step {}, which started it", row.effect.key, row.started);
            return Err(StoreError::corrupt(agent, "effect", row.started, reason));
        }
        let event = || -> Result<M::Event, StoreError> {
            let text = row.effect.event.as_deref().unwrap_or("null");
            serde_json::from_str(text).map_err(|e| StoreError::corrupt(agent, "effect", row.started, e))
        };
        match row.effect.kind {
            EffectKind::Task => {
                perform.entry(id.step).or_default().insert(id, (WorkKind::Task, 0));
            }
            EffectKind::Stream => {
                perform.entry(id.step).or_default().insert(id, (WorkKind::Stream, 0));
                streams.insert(format!("stream:{id}"), id);
            }
            EffectKind::Timer | EffectKind::Pause => {
                let deadline = row.effect.deadline.unwrap_or(now);
                let left = deadline.duration_since(now).unwrap_or(Duration::ZERO);
                // A clock set back since the timer was written (an NTP
                // correction, a host whose clock ran ahead) would add the
                // time it went back to the wait: no timer waits longer than
                // the delay it was set for, its deadline less its step's time.
                let set_for = match store.events(agent, row.started.saturating_sub(1), row.started)?.first() {
                    Some(step) => deadline.duration_since(step.at).unwrap_or(Duration::ZERO),
                    None => left,
                };
                timers.push((id, left.min(set_for), row.effect.kind == EffectKind::Pause, event()?));
            }
            EffectKind::Send => sends.push((id, event()?)),
        }
    }
    // Timers due at the same moment fire in the order they are armed:
    // arm them by deadline, then as they were set (step, then call order
    // within it), not in the store's order of their keys as text
    // (`"1.10"` before `"1.2"`).
    timers.sort_by_key(|(id, left, _, _)| (*left, *id));
    // Sends are due latest step first (what a step sends goes before the
    // older sends still waiting), in call order within a step.
    sends.sort_by_key(|(id, _)| (std::cmp::Reverse(id.step), id.rank));
    let before = perform.keys().next().map_or(last, |first| first.saturating_sub(1));
    let (from, snap) = store
        .snapshot_at_or_before(agent, before)?
        .ok_or_else(|| StoreError::corrupt(agent, "log", 0, "no snapshot at or before the step"))?;
    let machine = machine_of::<M>(agent, from, &snap)?;
    let records = store.events(agent, from, last)?;
    // `restore` checked the steps after the newest snapshot; this replay
    // may start further back, before the oldest step whose work is still
    // in flight. Those steps are checked too, on a machine of their own,
    // before the worker performs any action again: a release whose
    // transitions changed, or a log that lost a row, is refused here
    // rather than run as a machine that is not the one the store holds.
    replay_checked(agent, &mut machine_of::<M>(agent, from, &snap)?, from, last, &records)?;
    let mut steps = Vec::new();
    for record in records {
        if let Some(origin) = &record.origin
            && let Some(id) = streams.get(origin)
            && let Some((_, skip)) = perform.get_mut(&id.step).and_then(|keep| keep.get_mut(id))
        {
            *skip += 1;
        }
        let event: M::Event =
            serde_json::from_str(&record.event).map_err(|e| StoreError::corrupt(agent, "event", record.seq, e))?;
        steps.push((record.seq, event));
    }
    let steps = steps.into_iter().map(|(seq, event)| (seq, event, perform.remove(&seq))).collect();
    Ok((machine, Replay { steps, timers, sends }))
}
