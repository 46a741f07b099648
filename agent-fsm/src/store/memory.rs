//! [`MemoryStore`]: a [`CheckpointStore`] in memory, for tests and as the
//! baseline the SQLite store is measured against. It follows the same
//! rules as the SQLite store, byte quota included, so one test body runs
//! against both.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use super::{
    AgentInfo, Checkpoint, CheckpointStore, Effect, EventRecord, FORMAT_VERSION, InFlight, Snapshot, StepRecord,
    StoreError,
};

/// A checkpoint store in memory: gone with the process.
///
/// ```
/// use agent_fsm::store::{CheckpointStore, MemoryStore};
/// let store = MemoryStore::new();
/// assert!(store.agents().unwrap().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    agents: HashMap<String, Log>,
    /// Bytes of text held, counted as the quota counts them.
    used: usize,
    quota: Option<usize>,
}

/// One agent's rows.
#[derive(Debug, Clone)]
struct Log {
    machine: String,
    format: u32,
    created: SystemTime,
    forked_from: Option<(String, u64)>,
    /// Event `n` at index `n - 1`.
    events: Vec<EventRecord>,
    snapshots: BTreeMap<u64, Snapshot>,
    effects: Vec<Row>,
}

/// An effect row: started at a step, finished at a later one or not yet.
#[derive(Debug, Clone)]
struct Row {
    effect: Effect,
    started: u64,
    finished: Option<u64>,
}

impl Row {
    fn in_flight_at(&self, seq: u64) -> bool {
        self.started <= seq && self.finished.is_none_or(|f| f > seq)
    }
}

impl Log {
    fn next_seq(&self) -> u64 {
        self.events.len() as u64 + 1
    }
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that refuses, with [`StoreError::Full`], a write that
    /// would take the text it holds past `bytes`: a full disk, simulated.
    #[must_use]
    pub fn with_quota(bytes: usize) -> Self {
        Self { inner: Mutex::new(Inner { quota: Some(bytes), ..Inner::default() }) }
    }

    /// The bytes of text the store holds (events, snapshots, effect rows):
    /// what a step costs, without any backend's overhead.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.lock().used
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every write checks before it changes anything, so a panic cannot
        // leave half a step behind: the data is sound after one.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Inner {
    fn log(&self, agent: &str) -> Result<&Log, StoreError> {
        self.agents.get(agent).ok_or_else(|| StoreError::UnknownAgent(agent.to_owned()))
    }

    /// Takes `bytes` more from the quota, or refuses.
    fn reserve(&mut self, bytes: usize) -> Result<(), StoreError> {
        let total = self.used.saturating_add(bytes);
        if let Some(quota) = self.quota
            && total > quota
        {
            return Err(StoreError::Full(format!("{total} bytes would pass the quota of {quota}")));
        }
        self.used = total;
        Ok(())
    }
}

fn snapshot_bytes(s: &Snapshot) -> usize {
    s.state.len() + s.data.len()
}

fn effect_bytes(e: &Effect) -> usize {
    e.key.len() + e.event.as_ref().map_or(0, String::len)
}

impl CheckpointStore for MemoryStore {
    fn create(&self, agent: &str, machine: &str, at: SystemTime, initial: &Snapshot) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if inner.agents.contains_key(agent) {
            return Err(StoreError::AgentExists(agent.to_owned()));
        }
        inner.reserve(agent.len() + machine.len() + snapshot_bytes(initial))?;
        let log = Log {
            machine: machine.to_owned(),
            format: FORMAT_VERSION,
            created: at,
            forked_from: None,
            events: Vec::new(),
            snapshots: BTreeMap::from([(0, initial.clone())]),
            effects: Vec::new(),
        };
        inner.agents.insert(agent.to_owned(), log);
        Ok(())
    }

    fn agent(&self, agent: &str) -> Result<Option<AgentInfo>, StoreError> {
        Ok(self.lock().agents.get(agent).map(|log| AgentInfo {
            machine: log.machine.clone(),
            format: log.format,
            next_seq: log.next_seq(),
            forked_from: log.forked_from.clone(),
        }))
    }

    fn agents(&self) -> Result<Vec<String>, StoreError> {
        let mut ids: Vec<String> = self.lock().agents.keys().cloned().collect();
        ids.sort();
        Ok(ids)
    }

    fn append(&self, agent: &str, step: &StepRecord) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let expected = inner.log(agent)?.next_seq();
        if step.seq != expected {
            return Err(StoreError::Conflict { agent: agent.to_owned(), expected, found: step.seq });
        }
        let bytes = step.event.len()
            + step.origin.as_ref().map_or(0, String::len)
            + step.state.len()
            + step.started.iter().map(effect_bytes).sum::<usize>()
            + step.snapshot.as_ref().map_or(0, snapshot_bytes);
        inner.reserve(bytes)?;
        let Some(log) = inner.agents.get_mut(agent) else {
            return Err(StoreError::UnknownAgent(agent.to_owned()));
        };
        log.events.push(EventRecord {
            seq: step.seq,
            at: step.at,
            state: step.state.clone(),
            event: step.event.clone(),
            origin: step.origin.clone(),
        });
        for (kind, key) in &step.finished {
            finish(&mut log.effects, *kind, key, step.seq);
        }
        for effect in &step.started {
            finish(&mut log.effects, effect.kind, &effect.key, step.seq);
            log.effects.push(Row { effect: effect.clone(), started: step.seq, finished: None });
        }
        if let Some(snapshot) = &step.snapshot {
            log.snapshots.insert(step.seq, snapshot.clone());
        }
        Ok(())
    }

    fn finish(&self, agent: &str, finished: &[(super::EffectKind, String)]) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let Some(log) = inner.agents.get_mut(agent) else {
            return Err(StoreError::UnknownAgent(agent.to_owned()));
        };
        let last = log.next_seq() - 1;
        for (kind, key) in finished {
            finish(&mut log.effects, *kind, key, last);
        }
        Ok(())
    }

    fn snapshot_at_or_before(&self, agent: &str, seq: u64) -> Result<Option<(u64, Snapshot)>, StoreError> {
        let inner = self.lock();
        let log = inner.log(agent)?;
        Ok(log.snapshots.range(..=seq).next_back().map(|(seq, s)| (*seq, s.clone())))
    }

    fn events(&self, agent: &str, after: u64, through: u64) -> Result<Vec<EventRecord>, StoreError> {
        let inner = self.lock();
        let log = inner.log(agent)?;
        Ok(log.events.iter().filter(|e| e.seq > after && e.seq <= through).cloned().collect())
    }

    fn in_flight(&self, agent: &str, seq: u64) -> Result<Vec<InFlight>, StoreError> {
        let inner = self.lock();
        let log = inner.log(agent)?;
        Ok(log
            .effects
            .iter()
            .filter(|row| row.in_flight_at(seq))
            .map(|row| InFlight { effect: row.effect.clone(), started: row.started })
            .collect())
    }

    fn checkpoints(&self, agent: &str) -> Result<Vec<Checkpoint>, StoreError> {
        let inner = self.lock();
        let log = inner.log(agent)?;
        let first = log.snapshots.get(&0).map(|s| s.state.clone()).unwrap_or_default();
        let mut out = vec![Checkpoint { seq: 0, at: log.created, state: first, snapshot: true }];
        out.extend(log.events.iter().map(|e| Checkpoint {
            seq: e.seq,
            at: e.at,
            state: e.state.clone(),
            snapshot: log.snapshots.contains_key(&e.seq),
        }));
        Ok(out)
    }

    fn fork(&self, source: &str, seq: u64, new: &str) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let log = inner.log(source)?;
        if inner.agents.contains_key(new) {
            return Err(StoreError::AgentExists(new.to_owned()));
        }
        let last = log.next_seq() - 1;
        if seq > last {
            return Err(StoreError::NoCheckpoint { agent: source.to_owned(), seq, last });
        }
        let events: Vec<EventRecord> = log.events.iter().filter(|e| e.seq <= seq).cloned().collect();
        let snapshots: BTreeMap<u64, Snapshot> =
            log.snapshots.range(..=seq).map(|(seq, s)| (*seq, s.clone())).collect();
        let effects: Vec<Row> = log
            .effects
            .iter()
            .filter(|row| row.started <= seq)
            .map(|row| Row { finished: row.finished.filter(|f| *f <= seq), ..row.clone() })
            .collect();
        let bytes = new.len()
            + log.machine.len()
            + events.iter().map(|e| e.event.len() + e.state.len()).sum::<usize>()
            + snapshots.values().map(snapshot_bytes).sum::<usize>()
            + effects.iter().map(|row| effect_bytes(&row.effect)).sum::<usize>();
        let copy = Log {
            machine: log.machine.clone(),
            format: log.format,
            created: log.created,
            forked_from: Some((source.to_owned(), seq)),
            events,
            snapshots,
            effects,
        };
        inner.reserve(bytes)?;
        inner.agents.insert(new.to_owned(), copy);
        Ok(())
    }
}

/// Marks the row of `kind` and `key` in flight finished at `seq`.
fn finish(rows: &mut [Row], kind: super::EffectKind, key: &str, seq: u64) {
    for row in rows.iter_mut().filter(|r| r.finished.is_none() && r.effect.kind == kind && r.effect.key == key) {
        row.finished = Some(seq);
    }
}
