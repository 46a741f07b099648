//! What a durable agent's journal takes from the worker: an id for every
//! piece of effect work, the step that started it and the one by which it
//! ended, the stream each item came from, and the replay that rebuilds the
//! work in flight after a restart. The checkpoint store's side
//! (`store::durable`) implements [`StepJournal`]; the worker only calls it,
//! and an agent without a journal pays one test of a flag per event.

// Without the `store` feature nothing implements the journal, and parts of
// this module are only read by it.
#![cfg_attr(not(feature = "store"), allow(dead_code))]

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::StateMachine;

/// The id of a piece of effect work: the sequence number of the step whose
/// action started it, and its rank among the work that action started
/// (tasks, streams, timers and sends counted together, in call order).
/// Performing the same action again from the same machine starts the same
/// work in the same order, so the ids of a replay match the originals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct WorkId {
    pub(crate) step: u64,
    pub(crate) rank: u32,
}

impl fmt::Display for WorkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.step, self.rank)
    }
}

impl WorkId {
    /// The id a store row's key names (`"{step}.{rank}"`).
    pub(crate) fn parse(key: &str) -> Option<Self> {
        let (step, rank) = key.split_once('.')?;
        Some(Self { step: step.parse().ok()?, rank: rank.parse().ok()? })
    }
}

/// What kind of work an id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WorkKind {
    Task,
    Stream,
    /// A timer that lets input through.
    Deadline,
    /// A timer that holds input back.
    Pause,
    /// An event for delivery right after its step.
    Send,
}

/// A durable agent's bookkeeping of its work, kept by [`Work`].
#[derive(Debug, Default)]
pub(crate) struct Tracking {
    step: u64,
    rank: u32,
    /// Work started by the current step, in call order.
    pub(crate) started: Vec<(WorkKind, WorkId)>,
    /// Work that ended since the last step was written.
    pub(crate) ended: Vec<(WorkKind, WorkId)>,
    /// The stream whose item is the event being delivered.
    pub(crate) origin: Option<WorkId>,
    /// While a step is replayed after a restart: the work of that step
    /// still in flight, with the number of items a stream's machine already
    /// took. Everything else its action starts is dropped (it ended before
    /// the restart, or is restored from its own row, as timers and sends are).
    pub(crate) replay: Option<Keep>,
    /// Tasks wait in the queue until the step that started them is written
    /// (persisting before the action is performed).
    pub(crate) hold: bool,
}

impl Tracking {
    /// The step with sequence number `step` begins.
    pub(crate) fn begin_step(&mut self, step: u64) {
        self.step = step;
        self.rank = 0;
    }

    /// Ids the next piece of work of `kind`. `None` during a replay if that
    /// work is not to run again; otherwise its id and, for a stream, how
    /// many of its items to skip.
    pub(crate) fn start(&mut self, kind: WorkKind) -> Option<(WorkId, u64)> {
        let id = WorkId { step: self.step, rank: self.rank };
        self.rank = self.rank.saturating_add(1);
        match &mut self.replay {
            Some(keep) if matches!(kind, WorkKind::Task | WorkKind::Stream) => match keep.get(&id) {
                // Taken out of `keep`: what is left there once the step is
                // replayed is work in flight its action no longer starts.
                Some(&(was, skip)) if was == kind => {
                    keep.remove(&id);
                    Some((id, skip))
                }
                _ => None,
            },
            Some(_) => None,
            None => {
                self.started.push((kind, id));
                Some((id, 0))
            }
        }
    }

    /// Work `id` of `kind` ended (finished, failed, was cancelled, or its
    /// timer was dropped with its state).
    pub(crate) fn end(&mut self, kind: WorkKind, id: Option<WorkId>) {
        if let Some(id) = id {
            self.ended.push((kind, id));
        }
    }
}

/// Where the event of a step came from, when the journal records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// An item of the stream with this id.
    Stream(WorkId),
    /// The handles' mailbox (`send`, `call`): input from outside the agent.
    Input,
}

/// A step's failure to be written, as the store reported it.
pub(crate) type JournalError = Arc<dyn std::error::Error + Send + Sync>;

/// The work of a replayed step to start again: each piece by id, with its
/// kind (a task or a stream) and the number of items a stream's machine
/// already took.
pub(crate) type Keep = HashMap<WorkId, (WorkKind, u64)>;

/// What rebuilds a durable agent's work after a restart, handed to the
/// worker once, at start. The machine given to the worker is the one
/// before `steps[0]`.
pub(crate) struct Replay<E> {
    /// The logged events to feed again, by sequence number, each with the
    /// work its action started that is still in flight (tasks and streams
    /// are performed again: the action runs again, and only that work of it
    /// starts), or `None` when the action is not performed again.
    pub(crate) steps: Vec<(u64, E, Option<Keep>)>,
    /// Timers still pending: id, time left, whether it holds input, event.
    pub(crate) timers: Vec<(WorkId, Duration, bool, E)>,
    /// Sent events not yet delivered, in the order they are due.
    pub(crate) sends: Vec<(WorkId, E)>,
}

/// A durable agent's writer of steps, called by the worker.
pub(crate) trait StepJournal<M: StateMachine>: Send {
    /// The replay that rebuilds the agent, taken once at start.
    fn take_replay(&mut self) -> Option<Replay<M::Event>>;

    /// The step of `event` (which came from `origin`: a stream, if it is
    /// an item, or the mailbox) begins; returns its sequence number.
    ///
    /// # Errors
    /// The event does not serialize.
    fn begin(&mut self, event: &M::Event, origin: Option<Origin>) -> Result<u64, JournalError>;

    /// The step's action was performed: writes it, with the work it
    /// started and the work that ended since the last step.
    ///
    /// # Errors
    /// The store refused the write, or an event to store does not serialize.
    fn commit(&mut self, machine: &M, work: StepWork<'_, M::Event>) -> Result<(), JournalError>;

    /// Work ended between two steps (a stream's end, seen after its last
    /// item's step): writes its end, so that a restart does not perform it
    /// again.
    ///
    /// # Errors
    /// The store refused the write.
    fn ended(&mut self, ended: Vec<(WorkKind, WorkId)>) -> Result<(), JournalError>;

    /// The agent stops: writes what is still buffered.
    ///
    /// # Errors
    /// The store refused the write.
    fn stop(&mut self) -> Result<(), JournalError>;

    /// Whether tasks wait until their step is written.
    fn holds_tasks(&self) -> bool;

    /// A write that failed off the worker's thread (a writer thread's),
    /// if one did; otherwise `cx` is woken when one does, so that an agent
    /// with nothing more to do learns of it then, not at its next step.
    fn poll_failure(&mut self, cx: &mut std::task::Context<'_>) -> Option<JournalError>;

    /// The error of a restart whose replay of step `id.step` did not start
    /// its work `id` of `kind` again, which the store has in flight: the
    /// action no longer starts that work there (the effects changed since
    /// the step was written), and its result would never come.
    fn not_started_again(&self, id: WorkId, kind: WorkKind) -> JournalError;
}

/// Work a step started, as its row needs it.
pub(crate) enum Started<'a, E> {
    Task(WorkId),
    Stream(WorkId),
    Timer {
        id: WorkId,
        /// A pause rather than a deadline.
        holds: bool,
        /// The time left until it fires.
        left: Duration,
        event: &'a E,
    },
    Send {
        id: WorkId,
        event: &'a E,
    },
}

/// What a step changed in the work in flight.
pub(crate) struct StepWork<'a, E> {
    pub(crate) started: Vec<Started<'a, E>>,
    pub(crate) ended: Vec<(WorkKind, WorkId)>,
}
