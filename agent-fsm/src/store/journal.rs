//! [`Journal`]: the typed writer of one agent's steps. It serializes the
//! events and snapshots of a machine, numbers the steps and decides when a
//! snapshot is due, so that the one who drives the machine (the executor,
//! or a plain loop) only says what each step started and finished.

use std::marker::PhantomData;
use std::num::NonZeroU64;
use std::time::SystemTime;

use serde::Serialize;

use super::{CheckpointStore, Effect, EffectKind, FORMAT_VERSION, Snapshot, StepRecord, StoreError};
use crate::snapshot::{self, SnapshotError};
use crate::{Named, StateMachine};

/// When a [`Journal`] stores a snapshot with a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SnapshotPolicy {
    /// When the event bytes logged since the last snapshot reach that
    /// snapshot's size. A snapshot of `n` bytes then follows `n` bytes of
    /// events, by which time the machine has grown by about as much, so
    /// the next snapshot is about `2n`: snapshots add about twice the
    /// events' bytes, and a step costs about three times its event (plus
    /// its effect rows) however long the conversation grows, while a
    /// restore replays at most one snapshot's worth of events.
    #[default]
    Proportional,
    /// Every that many events.
    Every(NonZeroU64),
    /// Only checkpoint 0: a restore replays the whole log.
    Never,
}

/// Writes one agent's steps to a [`CheckpointStore`].
///
/// ```
/// # use agent_fsm::store::{Journal, MemoryStore, restore};
/// #[agent_fsm::state_machine(fallback = Nothing, serde, name = Counter)]
/// mod counter {
///     #[states]
///     #[derive(Debug)]
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
/// use agent_fsm::StateMachine as _;
/// let store = MemoryStore::new();
/// let mut machine = counter::Counter::new(0);
/// let mut journal = Journal::create(&store, "agent-1", &machine)?;
/// for k in 1..=3 {
///     let event = counter::Event::Add(k);
///     let step = journal.begin(&event)?;
///     machine.handle_event(event);
///     journal.commit(&store, step, &machine)?;
/// }
/// let restored = restore::<counter::Counter, _>(&store, "agent-1")?;
/// assert!(matches!(restored.machine.state(), counter::State::Counting { n: 6 }));
/// assert_eq!(restored.next_seq, 4);
/// # Ok::<(), agent_fsm::store::StoreError>(())
/// ```
#[derive(Debug)]
pub struct Journal<M> {
    agent: String,
    policy: SnapshotPolicy,
    counters: Counters,
    machine: PhantomData<fn() -> M>,
}

/// Where a [`Journal`] is: its next step, and what was logged since the
/// last snapshot.
#[derive(Debug, Clone, Copy)]
struct Counters {
    next_seq: u64,
    /// Event bytes logged since the last snapshot.
    since_bytes: usize,
    /// Events logged since the last snapshot.
    since_events: u64,
    /// The size of the last snapshot.
    last_snapshot: usize,
}

/// A step begun: its event serialized, and the effect rows it will start
/// and finish, written by [`Journal::commit`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a step is written by `Journal::commit`"]
pub struct PendingStep {
    event: String,
    origin: Option<String>,
    finished: Vec<(EffectKind, String)>,
    started: Vec<Effect>,
}

impl PendingStep {
    /// Records that this step's event is the result of the work of `kind`
    /// under `key`, which is then no longer in flight.
    pub fn finish(&mut self, kind: EffectKind, key: impl Into<String>) {
        self.finished.push((kind, key.into()));
    }

    /// Records where the event came from (see [`StepRecord::origin`](super::StepRecord::origin)).
    pub fn set_origin(&mut self, origin: impl Into<String>) {
        self.origin = Some(origin.into());
    }

    /// Records that this step's action started `effect`.
    pub fn start(&mut self, effect: Effect) {
        self.started.push(effect);
    }

    /// The event, serialized.
    #[must_use]
    pub fn event(&self) -> &str {
        &self.event
    }
}

impl<M> Journal<M>
where
    M: StateMachine,
    M::State: Serialize,
    M::Context: Serialize,
    M::Event: Serialize,
{
    /// Adds `agent` to `store` with `machine` as its checkpoint 0.
    ///
    /// # Errors
    /// [`StoreError::AgentExists`], [`StoreError::Encode`] if the machine
    /// does not serialize, or the store's write error.
    pub fn create<S: CheckpointStore + ?Sized>(store: &S, agent: &str, machine: &M) -> Result<Self, StoreError> {
        Self::create_at(store, agent, machine, SystemTime::now())
    }

    /// [`create`](Self::create), checkpoint 0's time being `at` (a durable
    /// agent's clock).
    pub(crate) fn create_at<S: CheckpointStore + ?Sized>(
        store: &S,
        agent: &str,
        machine: &M,
        at: SystemTime,
    ) -> Result<Self, StoreError> {
        let snapshot = snapshot_of(machine)?;
        store.create(agent, M::DESCRIPTION.name, at, &snapshot)?;
        Ok(Self::resume(agent, 1, snapshot.data.len(), 0, 0))
    }

    /// The journal of an agent whose next step is `next_seq`.
    pub(crate) fn resume(
        agent: &str,
        next_seq: u64,
        last_snapshot: usize,
        since_bytes: usize,
        since_events: u64,
    ) -> Self {
        Self {
            agent: agent.to_owned(),
            policy: SnapshotPolicy::default(),
            counters: Counters { next_seq, since_bytes, since_events, last_snapshot },
            machine: PhantomData,
        }
    }

    /// This journal with snapshots taken by `policy`.
    #[must_use]
    pub fn with_policy(mut self, policy: SnapshotPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The agent's id.
    #[must_use]
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The sequence number of the next step.
    #[must_use]
    pub fn next_seq(&self) -> u64 {
        self.counters.next_seq
    }

    /// Serializes an event as the log keeps it (for a timer's event).
    ///
    /// # Errors
    /// [`StoreError::Encode`] if serde refuses the event, or it holds a
    /// float that is not finite (JSON would write it as `null`, which does
    /// not read back).
    pub fn encode(event: &M::Event) -> Result<String, StoreError> {
        crate::finite::to_string(event).map_err(|e| StoreError::Encode(SnapshotError::Data(e)))
    }

    /// Begins a step: serializes `event`, which `handle_event` is about to
    /// consume.
    ///
    /// # Errors
    /// [`StoreError::Encode`] if serde refuses the event.
    pub fn begin(&self, event: &M::Event) -> Result<PendingStep, StoreError> {
        Ok(PendingStep { event: Self::encode(event)?, origin: None, finished: Vec::new(), started: Vec::new() })
    }

    /// Writes `step`, taken by `machine` (which has handled its event), in
    /// one transaction, with a snapshot when the policy says one is due.
    /// Returns the step's sequence number.
    ///
    /// On an error nothing was written and the journal is unchanged: the
    /// store still holds the checkpoint before this step.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] if another writer appended to the agent,
    /// [`StoreError::Encode`] if a due snapshot does not serialize, or the
    /// store's write error.
    pub fn commit<S: CheckpointStore + ?Sized>(
        &mut self,
        store: &S,
        step: PendingStep,
        machine: &M,
    ) -> Result<u64, StoreError> {
        self.commit_at(store, step, machine, SystemTime::now())
    }

    /// [`commit`](Self::commit), the step's time being `at` (a durable
    /// agent's clock, which its timers' deadlines are read against).
    pub(crate) fn commit_at<S: CheckpointStore + ?Sized>(
        &mut self,
        store: &S,
        step: PendingStep,
        machine: &M,
        at: SystemTime,
    ) -> Result<u64, StoreError> {
        let saved = self.counters;
        let record = self.prepare(step, machine, at)?;
        if let Err(error) = store.append(&self.agent, &record) {
            self.counters = saved;
            return Err(error);
        }
        Ok(record.seq)
    }

    /// The record of `step`, handled at `at`, with the journal moved past
    /// it, without writing it: for a writer that appends it elsewhere (on
    /// another thread, or later). On an error the journal is unchanged.
    pub(crate) fn prepare(&mut self, step: PendingStep, machine: &M, at: SystemTime) -> Result<StepRecord, StoreError> {
        let c = self.counters;
        let since_bytes = c.since_bytes + step.event.len();
        let since_events = c.since_events + 1;
        let due = match self.policy {
            SnapshotPolicy::Proportional => since_bytes >= c.last_snapshot,
            SnapshotPolicy::Every(n) => since_events >= n.get(),
            SnapshotPolicy::Never => false,
        };
        // A poisoned machine has no state to save; replaying the log
        // poisons it again, so the event alone is enough.
        let snapshot = if due && !machine.is_poisoned() { Some(snapshot_of(machine)?) } else { None };
        let record = StepRecord {
            seq: c.next_seq,
            at,
            state: machine.status().to_string(),
            event: step.event,
            origin: step.origin,
            finished: step.finished,
            started: step.started,
            snapshot,
        };
        self.counters = match &record.snapshot {
            Some(snapshot) => Counters {
                next_seq: c.next_seq + 1,
                last_snapshot: snapshot.data.len(),
                since_bytes: 0,
                since_events: 0,
            },
            None => Counters { next_seq: c.next_seq + 1, since_bytes, since_events, ..c },
        };
        Ok(record)
    }
}

/// `machine` as a store keeps it.
pub(crate) fn snapshot_of<M>(machine: &M) -> Result<Snapshot, StoreError>
where
    M: StateMachine,
    M::State: Serialize,
    M::Context: Serialize,
{
    let data = snapshot::to_json(machine).map_err(StoreError::Encode)?;
    Ok(Snapshot { format: FORMAT_VERSION, state: machine.state().name().to_owned(), data })
}
