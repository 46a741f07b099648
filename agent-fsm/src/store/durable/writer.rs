//! A durable agent's journal writer: encodes each step and writes it to
//! the store as the agent's [`Durability`] says (at once, from a thread
//! of its own while the action runs, or at the stop).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};

use futures::task::AtomicWaker;
use std::thread::JoinHandle;
use std::time::SystemTime;

use serde::Serialize;

use crate::StateMachine;
use crate::runtime::durable::{JournalError, Origin, Replay, Started, StepJournal, StepWork, WorkId, WorkKind};
use crate::store::{CheckpointStore, Effect, EffectKind, INPUT_ORIGIN, Journal, PendingStep, StepRecord, StoreError};

/// When a durable agent's steps reach its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Durability {
    /// Each step is written before the work its action starts runs: the
    /// action's tasks wait in the queue until the write returns (streams,
    /// timers and sends only run once the step is over anyway). A crash
    /// loses no step that started work, and no work runs that the store
    /// does not know of. The write is synchronous, on the worker's thread.
    #[default]
    BeforeAction,
    /// Each step is handed to a writer thread and written while its action
    /// is performed: the worker does not wait for the disk, and the steps
    /// that come while a write runs go in the next one together. A crash
    /// loses the steps not yet written; the work they started was
    /// performed and, not being in the store, is not performed again. A
    /// write the store refuses stops the agent as soon as the writer
    /// thread sees it, whether or not another step comes.
    WhileAction,
    /// Steps are kept in memory and written when the agent stops (a
    /// shutdown, a terminal state, every handle dropped), in one
    /// [`append_all`](CheckpointStore::append_all) per run of steps between
    /// two ends of work written on their own (a stream's end, seen between
    /// two steps): usually one. A crash loses every step since the agent
    /// was spawned; one during the stop's writes may leave their first
    /// runs written.
    OnStop,
}

/// A clock of wall time, for the deadlines of timers kept in a store.
pub type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// Where a durable agent's journal is, shared with whoever runs the agent
/// (the fleet): after the worker failed, it tells whether a step was under
/// way, and whether its event came from the mailbox, so that the failure
/// is counted against what caused it (an inbox row, or the agent's own
/// work), not guessed from the event's kind.
#[derive(Debug, Clone, Default)]
pub(crate) struct StepWatch(Arc<Mutex<StepMark>>);

/// What a [`StepWatch`] holds.
#[cfg_attr(not(feature = "fleet"), allow(dead_code))]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StepMark {
    /// The sequence number of the step under way, or of the next one when
    /// none is: a failure at the same number as the last one made no
    /// progress since.
    pub(crate) seq: u64,
    /// Whether a step began and was not written.
    pub(crate) open: bool,
    /// The open step's event, as the journal wrote it, when it came from
    /// the mailbox.
    pub(crate) input: Option<String>,
}

impl StepWatch {
    /// Where the journal is now.
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    pub(crate) fn mark(&self) -> StepMark {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set(&self, mark: StepMark) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = mark;
    }
}

/// A durable agent's [`StepJournal`]: encodes the steps and writes them
/// as its [`Durability`] says.
pub(super) struct Writer<M: StateMachine> {
    journal: Journal<M>,
    store: Arc<dyn CheckpointStore>,
    durability: Durability,
    clock: Clock,
    /// The step begun, written by `commit`.
    pending: Option<PendingStep>,
    replay: Option<Replay<M::Event>>,
    /// [`Durability::OnStop`]'s writes.
    buffered: Vec<Write>,
    /// [`Durability::WhileAction`]'s writer.
    thread: Option<WriterThread>,
    /// Told where the journal is, if someone asked.
    watch: Option<StepWatch>,
}

/// A write to the store: steps, or the ends of work that ended between two
/// steps.
enum Write {
    Step(StepRecord),
    Ends(Vec<(EffectKind, String)>),
}

/// Writes `writes` in order, consecutive steps in one transaction.
fn write_all(store: &dyn CheckpointStore, agent: &str, writes: Vec<Write>) -> Result<(), StoreError> {
    let mut steps = Vec::new();
    for write in writes {
        match write {
            Write::Step(record) => steps.push(record),
            Write::Ends(ends) => {
                if !steps.is_empty() {
                    store.append_all(agent, &std::mem::take(&mut steps))?;
                }
                store.finish(agent, &ends)?;
            }
        }
    }
    if steps.is_empty() { Ok(()) } else { store.append_all(agent, &steps) }
}

/// A thread that writes what it is sent, in order, and keeps the first
/// error (it writes nothing after one), waking the worker with it.
struct WriterThread {
    tx: mpsc::Sender<Write>,
    failed: Arc<Failure>,
    join: JoinHandle<()>,
}

/// A writer thread's first error, and the worker to wake with it.
#[derive(Default)]
struct Failure {
    error: Mutex<Option<StoreError>>,
    /// Set with the error: the worker looks at it on every poll, without
    /// the lock.
    set: AtomicBool,
    worker: AtomicWaker,
}

impl WriterThread {
    fn start(store: Arc<dyn CheckpointStore>, agent: String) -> Result<Self, StoreError> {
        let (tx, rx) = mpsc::channel::<Write>();
        let failed = Arc::new(Failure::default());
        let slot = Arc::clone(&failed);
        // A thread's name cannot hold a NUL byte (std panics on one), and
        // the agent's id is the user's to choose.
        let name = format!("agent-fsm-store-{}", agent.replace('\0', "\u{fffd}"));
        let join = std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                // What came in while the last write ran goes in one
                // transaction (one disk sync): the writer keeps up however
                // fast the steps come.
                while let Ok(first) = rx.recv() {
                    let mut batch = vec![first];
                    batch.extend(rx.try_iter());
                    if let Err(error) = write_all(&*store, &agent, batch) {
                        *slot.error.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
                        slot.set.store(true, Ordering::Release);
                        slot.worker.wake();
                        return;
                    }
                }
            })
            .map_err(|e| StoreError::Write(Box::new(e)))?;
        Ok(Self { tx, failed, join })
    }

    fn failure(&self) -> Option<StoreError> {
        self.failed.error.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

fn erased(error: StoreError) -> JournalError {
    Arc::new(error)
}

impl<M> Writer<M>
where
    M: StateMachine,
    M::State: Serialize,
    M::Context: Serialize,
    M::Event: Serialize,
{
    /// A writer of `journal`'s steps to `store`, as `durability` says,
    /// which first hands the worker `replay`, if any.
    pub(super) fn new(
        journal: Journal<M>,
        store: Arc<dyn CheckpointStore>,
        durability: Durability,
        clock: Clock,
        replay: Option<Replay<M::Event>>,
        watch: Option<StepWatch>,
    ) -> Self {
        if let Some(watch) = &watch {
            watch.set(StepMark { seq: journal.next_seq(), open: false, input: None });
        }
        Self { journal, store, durability, clock, pending: None, replay, buffered: Vec::new(), thread: None, watch }
    }

    /// Adds to `step` the work it started, its timers due `now` plus
    /// their delay, and the work that ended.
    fn encode(step: &mut PendingStep, work: StepWork<'_, M::Event>, now: SystemTime) -> Result<(), StoreError> {
        for (kind, id) in work.ended {
            step.finish(effect_kind(kind), id.to_string());
        }
        for started in work.started {
            let effect = match started {
                Started::Task(id) => Effect::task(id.to_string()),
                Started::Stream(id) => Effect::stream(id.to_string()),
                Started::Timer { id, holds, left, event } => {
                    let mut effect = Effect::timer(id.to_string(), now + left, Journal::<M>::encode(event)?);
                    if holds {
                        effect.kind = EffectKind::Pause;
                    }
                    effect
                }
                Started::Send { id, event } => Effect {
                    kind: EffectKind::Send,
                    key: id.to_string(),
                    deadline: None,
                    event: Some(Journal::<M>::encode(event)?),
                },
            };
            step.start(effect);
        }
        Ok(())
    }

    /// Writes `step`, handled at `at`, as the durability says.
    fn write(&mut self, step: PendingStep, machine: &M, at: SystemTime) -> Result<(), StoreError> {
        match self.durability {
            Durability::BeforeAction => self.journal.commit_at(&*self.store, step, machine, at).map(drop),
            Durability::WhileAction => {
                let record = self.journal.prepare(step, machine, at)?;
                if self.thread.is_none() {
                    self.thread = Some(WriterThread::start(Arc::clone(&self.store), self.journal.agent().to_owned())?);
                }
                let Some(thread) = &self.thread else { return Ok(()) };
                if let Some(error) = thread.failure() {
                    return Err(error);
                }
                // A writer that stopped left its error, read above or next time.
                let _ = thread.tx.send(Write::Step(record));
                Ok(())
            }
            Durability::OnStop => {
                let record = self.journal.prepare(step, machine, at)?;
                self.buffered.push(Write::Step(record));
                Ok(())
            }
        }
    }

    fn write_ends(&mut self, ends: Vec<(EffectKind, String)>) -> Result<(), StoreError> {
        match (&self.thread, self.durability) {
            (_, Durability::OnStop) => self.buffered.push(Write::Ends(ends)),
            (Some(thread), _) => {
                if let Some(error) = thread.failure() {
                    return Err(error);
                }
                let _ = thread.tx.send(Write::Ends(ends));
            }
            (None, _) => self.store.finish(self.journal.agent(), &ends)?,
        }
        Ok(())
    }
}

fn effect_kind(kind: WorkKind) -> EffectKind {
    match kind {
        WorkKind::Task => EffectKind::Task,
        WorkKind::Stream => EffectKind::Stream,
        WorkKind::Deadline => EffectKind::Timer,
        WorkKind::Pause => EffectKind::Pause,
        WorkKind::Send => EffectKind::Send,
    }
}

impl<M> StepJournal<M> for Writer<M>
where
    M: StateMachine,
    M::State: Serialize,
    M::Context: Serialize,
    M::Event: Serialize + Send,
{
    fn take_replay(&mut self) -> Option<Replay<M::Event>> {
        self.replay.take()
    }

    fn begin(&mut self, event: &M::Event, origin: Option<Origin>) -> Result<u64, JournalError> {
        let mut step = self.journal.begin(event).map_err(erased)?;
        match origin {
            Some(Origin::Stream(id)) => step.set_origin(format!("stream:{id}")),
            // A store that keeps an inbox (the fleet's) counts these steps
            // against it; a restart reads only stream origins.
            Some(Origin::Input) => step.set_origin(INPUT_ORIGIN.to_owned()),
            None => {}
        }
        if let Some(watch) = &self.watch {
            let input = matches!(origin, Some(Origin::Input)).then(|| step.event().to_owned());
            watch.set(StepMark { seq: self.journal.next_seq(), open: true, input });
        }
        self.pending = Some(step);
        Ok(self.journal.next_seq())
    }

    fn commit(&mut self, machine: &M, work: StepWork<'_, M::Event>) -> Result<(), JournalError> {
        let Some(mut step) = self.pending.take() else { return Ok(()) };
        // One reading of the clock for the step's time and its timers'
        // deadlines: a restart measures a timer's delay between the two.
        let now = (self.clock)();
        Self::encode(&mut step, work, now).map_err(erased)?;
        self.write(step, machine, now).map_err(erased)?;
        if let Some(watch) = &self.watch {
            watch.set(StepMark { seq: self.journal.next_seq(), open: false, input: None });
        }
        Ok(())
    }

    fn ended(&mut self, ended: Vec<(WorkKind, WorkId)>) -> Result<(), JournalError> {
        let ends = ended.into_iter().map(|(kind, id)| (effect_kind(kind), id.to_string())).collect();
        self.write_ends(ends).map_err(erased)
    }

    fn stop(&mut self) -> Result<(), JournalError> {
        let buffered = std::mem::take(&mut self.buffered);
        write_all(&*self.store, self.journal.agent(), buffered).map_err(erased)?;
        if let Some(WriterThread { tx, failed, join }) = self.thread.take() {
            drop(tx);
            // The writer ends once it has written what it was sent.
            let _ = join.join();
            if let Some(error) = failed.error.lock().unwrap_or_else(PoisonError::into_inner).take() {
                return Err(erased(error));
            }
        }
        Ok(())
    }

    fn holds_tasks(&self) -> bool {
        self.durability == Durability::BeforeAction
    }

    fn poll_failure(&mut self, cx: &mut std::task::Context<'_>) -> Option<JournalError> {
        let thread = self.thread.as_ref()?;
        thread.failed.worker.register(cx.waker());
        // Looked at after registering: a failure set in between is seen
        // here, or wakes the waker just registered.
        if !thread.failed.set.load(Ordering::Acquire) {
            return None;
        }
        thread.failure().map(erased)
    }

    fn not_started_again(&self, id: WorkId, kind: WorkKind) -> JournalError {
        let kind = match kind {
            WorkKind::Stream => "stream",
            _ => "task",
        };
        let reason = format!(
            "performed again after a restart, the step's action no longer starts its {kind} `{id}` still in flight \
             (the effects changed since the step was written)"
        );
        erased(StoreError::corrupt(self.journal.agent(), "effect", id.step, reason))
    }
}
