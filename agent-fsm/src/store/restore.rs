//! Rebuilding a machine from a store: the newest snapshot at or before the
//! step asked for, then the events after it replayed through
//! `handle_event`, which is deterministic, so the machine is the one that
//! handled them live.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{CheckpointStore, EventRecord, FORMAT_VERSION, InFlight, Journal, Snapshot, StoreError};
use crate::StateMachine;
use crate::snapshot::{self, SnapshotError};

/// An agent rebuilt at its last step, ready to continue.
#[derive(Debug)]
#[non_exhaustive]
pub struct Restored<M> {
    /// The machine, as it was after the last step.
    pub machine: M,
    /// The effect work in flight after the last step: to start again
    /// under the same keys, timers for their remaining time.
    pub in_flight: Vec<InFlight>,
    /// The sequence number of the agent's next step.
    pub next_seq: u64,
    /// The journal to append the next steps with.
    pub journal: Journal<M>,
}

/// Rebuilds `agent` at its last step, with its work in flight and a journal
/// to continue.
///
/// # Errors
/// [`StoreError::UnknownAgent`]; [`StoreError::WrongMachine`] if another
/// machine wrote the agent; [`StoreError::UnknownFormat`] for a snapshot
/// or an agent of a newer format; [`StoreError::Corrupt`] for a row that
/// does not decode, a gap in the log (or, in SQLite and Postgres, rows of
/// steps past its end), or a replay that does not reach the state the log
/// recorded or whose transition panics; the store's read error.
pub fn restore<M, S>(store: &S, agent: &str) -> Result<Restored<M>, StoreError>
where
    M: StateMachine,
    M::State: Serialize + DeserializeOwned,
    M::Context: Serialize + DeserializeOwned,
    M::Event: Serialize + DeserializeOwned,
    S: CheckpointStore + ?Sized,
{
    let last = last_seq::<M, S>(store, agent)?;
    let rebuilt = rebuild::<M, S>(store, agent, last)?;
    let in_flight = store.in_flight(agent, last)?;
    let journal = Journal::resume(agent, last + 1, rebuilt.snapshot_len, rebuilt.replayed_bytes, rebuilt.replayed);
    Ok(Restored { machine: rebuilt.machine, in_flight, next_seq: last + 1, journal })
}

/// Rebuilds `agent` as it was after step `seq` (0: as it started): time
/// travel. The store is not changed; to continue from there, fork it
/// ([`CheckpointStore::fork`]) and [`restore`] the fork.
///
/// # Errors
/// As [`restore`], and [`StoreError::NoCheckpoint`] if `seq` is past the
/// agent's last step.
pub fn restore_at<M, S>(store: &S, agent: &str, seq: u64) -> Result<M, StoreError>
where
    M: StateMachine,
    M::State: DeserializeOwned,
    M::Context: DeserializeOwned,
    M::Event: DeserializeOwned,
    S: CheckpointStore + ?Sized,
{
    let last = last_seq::<M, S>(store, agent)?;
    if seq > last {
        return Err(StoreError::NoCheckpoint { agent: agent.to_owned(), seq, last });
    }
    Ok(rebuild::<M, S>(store, agent, seq)?.machine)
}

/// The agent's last sequence number, once its machine and format are
/// checked.
fn last_seq<M: StateMachine, S: CheckpointStore + ?Sized>(store: &S, agent: &str) -> Result<u64, StoreError> {
    let info = store.agent(agent)?.ok_or_else(|| StoreError::UnknownAgent(agent.to_owned()))?;
    if info.machine != M::DESCRIPTION.name {
        return Err(StoreError::WrongMachine {
            agent: agent.to_owned(),
            expected: M::DESCRIPTION.name,
            found: info.machine,
        });
    }
    if info.format > FORMAT_VERSION {
        return Err(StoreError::UnknownFormat {
            what: format!("agent `{agent}`"),
            found: info.format,
            supported: FORMAT_VERSION,
        });
    }
    Ok(info.next_seq.saturating_sub(1))
}

/// A machine rebuilt, and what the replay took.
struct Rebuilt<M> {
    machine: M,
    /// The size of the snapshot it started from.
    snapshot_len: usize,
    /// Events replayed after it, and their bytes.
    replayed: u64,
    replayed_bytes: usize,
}

fn rebuild<M, S>(store: &S, agent: &str, seq: u64) -> Result<Rebuilt<M>, StoreError>
where
    M: StateMachine,
    M::State: DeserializeOwned,
    M::Context: DeserializeOwned,
    M::Event: DeserializeOwned,
    S: CheckpointStore + ?Sized,
{
    let (from, snap) = store
        .snapshot_at_or_before(agent, seq)?
        .ok_or_else(|| StoreError::corrupt(agent, "log", 0, "no snapshot at or before the step"))?;
    let mut machine = machine_of::<M>(agent, from, &snap)?;
    let events = store.events(agent, from, seq)?;
    let replayed_bytes = events.iter().map(|record| record.event.len()).sum();
    replay_checked(agent, &mut machine, from, seq, events.iter())?;
    Ok(Rebuilt { machine, snapshot_len: snap.data.len(), replayed: seq - from, replayed_bytes })
}

/// The machine a snapshot (of step `seq`) holds.
pub(super) fn machine_of<M>(agent: &str, seq: u64, snap: &Snapshot) -> Result<M, StoreError>
where
    M: StateMachine,
    M::State: DeserializeOwned,
    M::Context: DeserializeOwned,
{
    // Version 1 is the only format so far; an older one would be read
    // here, by a `match` on the version.
    if snap.format != FORMAT_VERSION {
        return Err(StoreError::UnknownFormat {
            what: format!("the snapshot of agent `{agent}` at step {seq}"),
            found: snap.format,
            supported: FORMAT_VERSION,
        });
    }
    snapshot::from_json::<M>(&snap.data).map_err(|e| match e {
        SnapshotError::WrongMachine { expected, found } => {
            StoreError::WrongMachine { agent: agent.to_owned(), expected, found }
        }
        other => StoreError::corrupt(agent, "snapshot", seq, other),
    })
}

/// Feeds `machine`, the one after step `from`, the logged `events` through
/// step `through`, checking that they are every step in between and that
/// each reaches the state the log recorded: a log that is not this
/// machine's (a release changed a transition) or that lost a row is
/// refused rather than read as other steps.
pub(super) fn replay_checked<'a, M>(
    agent: &str,
    machine: &mut M,
    from: u64,
    through: u64,
    events: impl IntoIterator<Item = &'a EventRecord>,
) -> Result<(), StoreError>
where
    M: StateMachine,
    M::Event: DeserializeOwned,
{
    let mut expected = from + 1;
    for record in events {
        if record.seq != expected {
            return Err(StoreError::corrupt(agent, "log", expected, format!("found step {} instead", record.seq)));
        }
        let event: M::Event =
            serde_json::from_str(&record.event).map_err(|e| StoreError::corrupt(agent, "event", record.seq, e))?;
        // A step whose transition panicked was never logged (the worker
        // fails before writing it): a replay that panics is a log this
        // code did not write, or a row edited since, and is refused as
        // such rather than unwinding through the caller.
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| machine.handle_event(event))) {
            let message = crate::panics::panic_message(&*payload);
            return Err(StoreError::corrupt(agent, "event", record.seq, format!("replaying it panicked: {message}")));
        }
        // The live machine reached `record.state`; a replay that does not
        // is a log that is not this machine's (or a table that changed).
        if machine.status().to_string() != record.state {
            return Err(StoreError::corrupt(
                agent,
                "event",
                record.seq,
                format!("replay reached state `{}`, the log says `{}`", machine.status(), record.state),
            ));
        }
        expected += 1;
    }
    if expected != through + 1 {
        return Err(StoreError::corrupt(agent, "log", expected, "the step is missing"));
    }
    Ok(())
}
