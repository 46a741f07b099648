//! [`Worker`]: one process's share of the fleet. Its loop registers the
//! worker and beats, claims agents up to its capacity (`claim.rs`), renews
//! their leases, wakes their feeders when their inbox has a new row,
//! handles their ends, and on shutdown hands them back, unless another
//! process registered under its id meanwhile.

mod claim;

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};
use tracing::Instrument;

use super::keeper::{Keeper, Renewals};
use super::running::{Control, End, Ended, Resumable, Running};
use super::{Fleet, FleetError, db};
use crate::StateMachine;
use crate::runtime::{Effects, ExecutorConfig};
use crate::store::{Durability, SnapshotPolicy};

/// A worker of a fleet: claims agents, runs them, and hands them back when
/// it stops. See the [module docs](super) for what it does and guarantees.
///
/// ```no_run
/// # use std::time::Duration;
/// # use agent_fsm::fleet::{Fleet, Worker};
/// # fn demo(fleet: &Fleet) {
/// let worker = Worker::new(fleet, "worker-1").capacity(500).lease(Duration::from_secs(5));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Worker {
    fleet: Fleet,
    id: String,
    capacity: u32,
    lease: Duration,
    poll: Duration,
    durability: Durability,
    snapshots: SnapshotPolicy,
}

/// What a worker did, returned when it stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerReport {
    /// Agents it claimed (an agent claimed twice counts twice).
    pub claimed: u64,
    /// Agents it ran to their terminal state.
    pub finished: u64,
    /// Agents it lost to another worker (its lease gone, a write fenced)
    /// or stopped because its renewals failed.
    pub lost: u64,
    /// Agents that failed on it (left for a retry a lease later).
    pub failed: u64,
    /// Agents it handed back when it stopped.
    pub handed_back: u64,
}

impl Worker {
    /// Worker `id` of `fleet`: 100 agents at most, the fleet's lease, an
    /// inbox poll every 5 seconds besides notifications, steps written
    /// [`Durability::BeforeAction`]. The id must be unique among the
    /// fleet's running workers: a process started under an id takes the
    /// leases of the one before it over at once (a process restarted after
    /// a crash need not wait for them to lapse), and the one before it, if
    /// it still runs, stops its agents and ends with
    /// [`FleetError::Replaced`] at its next beat.
    pub fn new(fleet: &Fleet, id: impl Into<String>) -> Self {
        Self {
            fleet: fleet.clone(),
            id: id.into(),
            capacity: 100,
            lease: fleet.config().lease,
            poll: Duration::from_secs(5),
            durability: Durability::default(),
            snapshots: SnapshotPolicy::default(),
        }
    }

    /// How many agents it runs at most (at least one).
    #[must_use]
    pub fn capacity(mut self, capacity: u32) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// How long its leases last (at least 30 ms); renewed every third of it.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(30));
        self
    }

    /// How often it looks for inbox rows a lost notification did not
    /// announce (at least 10 ms). It also looks each time it listens again
    /// after its listening connection closed, or opens its control
    /// connection again: what was sent meanwhile does not wait for the poll.
    #[must_use]
    pub fn poll(mut self, poll: Duration) -> Self {
        self.poll = poll.max(Duration::from_millis(10));
        self
    }

    /// When its agents' steps are written.
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// When its agents' snapshots are taken.
    #[must_use]
    pub fn snapshots(mut self, policy: SnapshotPolicy) -> Self {
        self.snapshots = policy;
        self
    }

    /// Its id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Runs the worker until `shutdown` completes, then stops its agents
    /// and hands them back. `agents` gives the effects and executor
    /// configuration of each agent it claims, by id; the agent itself comes
    /// from its checkpoint. A panic of `agents` fails that agent's start
    /// only, and is counted against it
    /// ([`FleetConfig::event_attempts`](super::FleetConfig::event_attempts)).
    /// Each claim calls it anew.
    ///
    /// # Errors
    /// [`FleetError::InvalidId`] for a worker id that holds a NUL byte or is
    /// longer than [`MAX_ID_BYTES`](super::MAX_ID_BYTES);
    /// [`FleetError::Connect`] or [`FleetError::Database`] if the worker
    /// cannot connect or register at start; [`FleetError::Replaced`] once
    /// another process registered under its id (its agents are stopped
    /// first, and nothing of the other's is handed back). Once running,
    /// database errors are logged and retried: a worker cut off from the
    /// database for a lease stops its agents, and takes agents again once
    /// it is back.
    pub async fn run<M, E, F, S>(self, agents: F, shutdown: S) -> Result<WorkerReport, FleetError>
    where
        M: StateMachine + Send + 'static,
        M::State: Serialize + DeserializeOwned,
        M::Context: Serialize + DeserializeOwned,
        M::Event: Serialize + DeserializeOwned + Send + 'static,
        E: Effects<M>,
        F: FnMut(&str) -> (E, ExecutorConfig<M>),
        S: Future<Output = ()>,
    {
        super::ids::check(&self.id)?;
        let span = tracing::info_span!("fleet_worker", worker = self.id.as_str());
        Loop::start(self, agents).instrument(span.clone()).await?.run(shutdown).instrument(span).await
    }
}

/// The worker's loop and what it keeps.
struct Loop<M: StateMachine, E: Effects<M>, F> {
    worker: Worker,
    agents: F,
    control: Control,
    running: HashMap<String, Running<M, E::Output>>,
    /// Agents that failed here, not claimed again before the instant.
    resting: HashMap<String, Instant>,
    ended_tx: mpsc::UnboundedSender<Ended>,
    ended: mpsc::UnboundedReceiver<Ended>,
    /// The notifications; `None` while the listening connection is down.
    notes: Option<(tokio_postgres::Client, mpsc::UnboundedReceiver<String>)>,
    /// Renews the leases of `running` from a thread of its own.
    keeper: Keeper,
    /// What tells this process from another registered under its id.
    life: String,
    report: WorkerReport,
}

impl<M, E, F> Loop<M, E, F>
where
    M: Resumable,
    E: Effects<M>,
    F: FnMut(&str) -> (E, ExecutorConfig<M>),
{
    async fn start(worker: Worker, agents: F) -> Result<Self, FleetError> {
        let target = worker.fleet.target().clone();
        let client = target.connect(None).await?;
        let notes = target.listen().await?;
        let capacity = i32::try_from(worker.capacity).unwrap_or(i32::MAX);
        let machine = M::DESCRIPTION.name;
        let life = super::ids::life();
        client.execute(db::REGISTER, &[&worker.id, &capacity, &machine, &life]).await.map_err(FleetError::db)?;
        tracing::info!(capacity = worker.capacity, lease_ms = db::millis(worker.lease), "worker registered");
        let renewals =
            Renewals { target, worker: worker.id.clone(), capacity, machine, life: life.clone(), lease: worker.lease };
        let keeper = Keeper::start(renewals)?;
        let (ended_tx, ended) = mpsc::unbounded_channel();
        Ok(Self {
            worker,
            agents,
            control: Control::new(client),
            running: HashMap::new(),
            resting: HashMap::new(),
            ended_tx,
            ended,
            notes: Some(notes),
            keeper,
            life,
            report: WorkerReport::default(),
        })
    }

    async fn run(mut self, shutdown: impl Future<Output = ()>) -> Result<WorkerReport, FleetError> {
        let mut renew = tokio::time::interval(self.worker.lease / 3);
        renew.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut poll = tokio::time::interval(self.worker.poll);
        poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut claim = true;
        tokio::pin!(shutdown);
        loop {
            // Renewals come first: however busy the worker is with
            // notifications or claims, its leases must not lapse.
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                _ = renew.tick() => {
                    if self.keeper.replaced() {
                        return Err(self.replaced().await);
                    }
                    self.renew().await;
                    claim = true;
                }
                Some(ended) = self.ended.recv() => {
                    // Room for another agent.
                    claim |= self.on_end(ended).await;
                }
                note = recv(&mut self.notes) => match note {
                    Some(note) => claim |= self.on_note(&note),
                    None => {
                        tracing::warn!("the notification connection closed; polling until it is back");
                        self.notes = None;
                    }
                },
                _ = poll.tick() => self.poll().await,
                // Nothing else is ready: claim, a batch at a time.
                () = std::future::ready(()), if claim => claim = self.claim().await,
            }
        }
        self.hand_back().await
    }

    /// Handles a notification; true if agents may be claimable.
    fn on_note(&mut self, note: &str) -> bool {
        if let Some(agent) = note.strip_prefix(db::INBOX) {
            if let Some(running) = self.running.get(agent) {
                running.wake.notify_one();
            }
            false
        } else if note == db::INBOX_ANY {
            for running in self.running.values() {
                running.wake.notify_one();
            }
            false
        } else {
            note == db::CLAIM
        }
    }

    /// An agent's run ended; true if the worker has room again.
    async fn on_end(&mut self, ended: Ended) -> bool {
        let Ended { agent, epoch, end } = ended;
        if self.running.get(&agent).is_none_or(|running| running.epoch != epoch) {
            return false;
        }
        match end {
            End::Terminal => {
                let client = self.control.get();
                let done =
                    self.bounded(client.execute(db::DONE, &[&agent, &self.worker.id, &epoch_to_sql(epoch)])).await;
                match done {
                    Ok(1) => {
                        tracing::info!(agent = agent.as_str(), epoch, "agent finished");
                        self.report.finished += 1;
                    }
                    Ok(_) => {
                        tracing::warn!(agent = agent.as_str(), epoch, "agent finished after its lease moved on");
                        self.report.lost += 1;
                    }
                    Err(error) => {
                        // The next owner resumes it as it ended, and marks it.
                        tracing::warn!(agent = agent.as_str(), %error, "cannot mark the agent done");
                        self.resting.insert(agent.clone(), Instant::now() + self.worker.lease);
                    }
                }
            }
            End::Stopped => tracing::info!(agent = agent.as_str(), epoch, "agent stopped"),
            End::Fenced => {
                tracing::warn!(agent = agent.as_str(), epoch, "agent fenced off: another worker holds it");
                self.report.lost += 1;
            }
            End::Failed(error) => {
                tracing::error!(agent = agent.as_str(), epoch, %error, "agent failed");
                self.report.failed += 1;
                self.resting.insert(agent.clone(), Instant::now() + self.worker.lease);
            }
        }
        self.keeper.release(&agent);
        self.running.remove(&agent);
        true
    }

    /// Checks in with the lease keeper, which renews the leases of the
    /// running agents and beats; drops the agents it found lost, and
    /// every agent once no renewal has been answered for a lease.
    async fn renew(&mut self) {
        self.keeper.pulse().beat();
        // The feeders' reads that failed on a closed connection, and the
        // notifications sent while nothing listened, are not repeated: the
        // inbox is looked at once the connections are back.
        let mut missed = self.reconnect().await;
        let target = self.worker.fleet.target().clone();
        if self.notes.is_none() {
            match self.bounded(target.listen()).await {
                Ok(notes) => {
                    self.notes = Some(notes);
                    missed = true;
                }
                Err(error) => tracing::warn!(%error, "cannot listen again"),
            }
        }
        let (mut renewed, held_off) = self.stop_lost();
        if renewed.elapsed() >= self.worker.lease && held_off && !self.running.is_empty() {
            // The keeper held off while this runtime showed no sign of life
            // (the process was paused, say), rather than fail: a renewal
            // now tells which leases another worker took meanwhile.
            self.keeper.renew_now().await;
            (renewed, _) = self.stop_lost();
        }
        if renewed.elapsed() >= self.worker.lease && !self.running.is_empty() {
            tracing::error!(agents = self.running.len(), "leases unrenewed for a lease: agents stopped");
            self.report.lost += self.running.len() as u64;
            self.running.clear();
            self.keeper.release_all();
        }
        if missed {
            self.poll().await;
        }
    }

    /// Stops the agents the keeper found lost; returns when the last
    /// answered renewal was sent, and whether the keeper held one off and
    /// has not ended one since.
    fn stop_lost(&mut self) -> (std::time::Instant, bool) {
        let (lost, renewed, held_off) = self.keeper.take();
        for (agent, epoch) in lost {
            if self.running.get(&agent).is_some_and(|running| running.epoch == epoch) {
                tracing::warn!(agent = agent.as_str(), "lease lost: agent stopped");
                self.report.lost += 1;
                self.running.remove(&agent);
            }
        }
        (renewed, held_off)
    }

    /// Opens the control connection again if it closed (the server
    /// restarted, say); true if it did.
    async fn reconnect(&mut self) -> bool {
        if !self.control.get().is_closed() {
            return false;
        }
        match self.bounded(self.worker.fleet.target().connect(None)).await {
            Ok(client) => {
                self.control.set(client);
                true
            }
            Err(error) => {
                tracing::warn!(%error, "cannot reconnect");
                false
            }
        }
    }

    /// The backstop: wakes the feeders of the agents with unapplied rows.
    async fn poll(&mut self) {
        if self.running.is_empty() {
            return;
        }
        let agents: Vec<&str> = self.running.keys().map(String::as_str).collect();
        match self.bounded(self.control.get().query(db::PENDING, &[&agents])).await {
            Ok(rows) => {
                for row in rows {
                    if let Ok(agent) = row.try_get::<_, String>(0)
                        && let Some(running) = self.running.get(&agent)
                    {
                        running.wake.notify_one();
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "cannot poll the inbox"),
        }
    }

    /// `query`, given up after a lease (by when the leases it would renew
    /// have lapsed anyway): on a connection the network cut off without a
    /// reset a query hangs, for as long as TCP retries, rather than fails,
    /// and the loop must go on meanwhile, to stop its agents once their
    /// leases have gone unrenewed.
    async fn bounded<T, Q: std::fmt::Display>(&self, query: impl Future<Output = Result<T, Q>>) -> Result<T, String> {
        match tokio::time::timeout(self.worker.lease, query).await {
            Ok(done) => done.map_err(|error| error.to_string()),
            Err(_) => Err(format!("no answer within a lease ({:?})", self.worker.lease)),
        }
    }

    /// Another process registered under this worker's id and holds its
    /// leases now: stops the agents (the other resumes them; their writes
    /// would be fenced off anyway) and leaves the leases and the row alone.
    async fn replaced(mut self) -> FleetError {
        self.report.lost += self.running.len() as u64;
        self.running.clear();
        self.keeper.release_all();
        self.keeper.stop().await;
        tracing::error!(report = ?self.report, "worker replaced: another process registered under its id");
        FleetError::Replaced { worker: self.worker.id.clone(), report: self.report }
    }

    /// Stops the agents (a pause: their work in flight is performed again
    /// by the next owner), hands their leases back and wakes the others;
    /// [`FleetError::Replaced`] instead of handing back the leases of a
    /// process that registered under this worker's id meanwhile.
    async fn hand_back(mut self) -> Result<WorkerReport, FleetError> {
        // The server may have closed the connection since the last renewal:
        // the leases are handed back on a new one rather than left to expire.
        self.reconnect().await;
        // No renewal or beat after this: the leases are handed back, the
        // worker's row removed.
        self.keeper.release_all();
        self.keeper.stop().await;
        let client = self.control.get();
        let replaced = match self.bounded(client.query_one(db::STOPPING, &[&self.worker.id, &self.life])).await {
            Ok(row) => row.try_get::<_, bool>(0).unwrap_or(false),
            Err(error) => {
                tracing::warn!(%error, "cannot mark the worker stopping");
                false
            }
        } || self.keeper.replaced();
        let lease = self.worker.lease;
        let stops = self.running.values().map(|running| {
            let handle = running.handle.clone();
            async move {
                // An agent that does not stop within a lease is dropped (a crash).
                let _ = tokio::time::timeout(lease, handle.shutdown()).await;
            }
        });
        futures::future::join_all(stops).await;
        // Agents that reached their terminal state meanwhile are marked done.
        while let Ok(ended) = self.ended.try_recv() {
            if matches!(ended.end, End::Terminal) {
                self.on_end(ended).await;
            }
        }
        if replaced {
            return Err(self.replaced().await);
        }
        let count = self.running.len() as u64;
        self.running.clear();
        let channel = self.worker.fleet.target().channel();
        match self.bounded(client.execute(db::RELEASE, &[&self.worker.id, &self.life])).await {
            Ok(released) => {
                tracing::info!(agents = released, "leases handed back");
                self.report.handed_back += count;
                if let Err(error) = self.bounded(client.execute(db::NOTIFY, &[&channel, &db::CLAIM])).await {
                    tracing::warn!(%error, "cannot notify the other workers");
                }
            }
            Err(error) => tracing::warn!(%error, "cannot hand the leases back: they expire"),
        }
        if let Err(error) = self.bounded(client.execute(db::DEREGISTER, &[&self.worker.id, &self.life])).await {
            tracing::warn!(%error, "cannot remove the worker's row");
        }
        tracing::info!(report = ?self.report, "worker stopped");
        Ok(self.report)
    }
}

/// The next notification; never, while not listening.
async fn recv(notes: &mut Option<(tokio_postgres::Client, mpsc::UnboundedReceiver<String>)>) -> Option<String> {
    match notes {
        Some((_, rx)) => rx.recv().await,
        None => std::future::pending().await,
    }
}

fn epoch_to_sql(epoch: u64) -> i64 {
    i64::try_from(epoch).unwrap_or(i64::MAX)
}
