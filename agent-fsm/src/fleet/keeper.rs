//! The lease keeper: renews a worker's leases, and beats, every third of a
//! lease from a thread and a connection of its own. The worker's runtime
//! cannot be relied on for it: its agents' step writes block its threads
//! (durability `BeforeAction`), and a burst of steps across thousands of
//! agents holds them for longer than a lease, after which a loop renewing
//! on that runtime would find its renewals late and stop every agent it
//! runs, though no other worker had them.
//!
//! The keeper renews only while the worker's runtime shows signs of life
//! (its loop checked in, or one of its agents' store calls returned,
//! within the last lease): a runtime stuck for good (a tool blocking its
//! only thread) still lets its leases lapse, for other workers to take.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{Notify, oneshot, watch};
use tokio::time::MissedTickBehavior;
use tokio_postgres::Client;

use super::{FleetError, db};
use crate::store::{
    AgentInfo, Checkpoint, CheckpointStore, EffectKind, EventRecord, InFlight, Snapshot, StepRecord, StoreError,
};

/// What the keeper and the worker's loop share.
#[derive(Debug)]
struct Shared {
    /// The keeper's clock's origin, for `pulse`.
    origin: Instant,
    /// When the worker's runtime last showed a sign of life, in
    /// milliseconds since `origin`.
    pulse: AtomicU64,
    state: Mutex<State>,
    /// Asks the keeper for a renewal at once.
    kick: Notify,
}

#[derive(Debug)]
struct State {
    /// The agents to renew, with their epochs.
    held: HashMap<String, u64>,
    /// Agents whose renewal found the lease gone, for the loop to stop.
    lost: Vec<(String, u64)>,
    /// When the last renewal that was answered was sent.
    renewed: Instant,
    /// Whether the keeper held a renewal off (the worker's runtime showing
    /// no sign of life) and has not ended one since.
    held_off: bool,
    /// Whether a beat found the worker's row taken over by another life.
    replaced: bool,
}

/// A sign of life of the worker's runtime, given to the keeper.
#[derive(Debug, Clone)]
pub(crate) struct Pulse(Arc<Shared>);

impl Pulse {
    /// The runtime is alive now.
    pub(crate) fn beat(&self) {
        let millis = u64::try_from(self.0.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.pulse.fetch_max(millis, Ordering::Relaxed);
    }

    /// How long since the last sign of life.
    fn silence(&self) -> Duration {
        let last = Duration::from_millis(self.0.pulse.load(Ordering::Relaxed));
        self.0.origin.elapsed().saturating_sub(last)
    }
}

/// The worker's side of its keeper; dropping it stops the keeper's thread
/// (after the statement it may be running).
#[derive(Debug)]
pub(crate) struct Keeper {
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    /// Closes when the keeper's thread ends.
    done: Option<oneshot::Receiver<()>>,
    /// How many renewals the keeper attempted.
    attempts: watch::Receiver<u64>,
    lease: Duration,
}

/// Who the keeper renews for, and how.
pub(crate) struct Renewals {
    pub(crate) target: db::Target,
    pub(crate) worker: String,
    pub(crate) capacity: i32,
    /// The name of the worker's machine, kept in its row by each beat.
    pub(crate) machine: &'static str,
    /// The token of this process's life under the worker's id.
    pub(crate) life: String,
    pub(crate) lease: Duration,
}

impl Keeper {
    /// Starts the keeper's thread, which renews `held` leases until the
    /// keeper is dropped.
    ///
    /// # Errors
    /// [`FleetError::Connect`] if its thread or runtime cannot be started.
    pub(crate) fn start(renewals: Renewals) -> Result<Self, FleetError> {
        let shared = Arc::new(Shared {
            origin: Instant::now(),
            pulse: AtomicU64::new(0),
            state: Mutex::new(State {
                held: HashMap::new(),
                lost: Vec::new(),
                renewed: Instant::now(),
                held_off: false,
                replaced: false,
            }),
            kick: Notify::new(),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| FleetError::Connect(Box::new(e)))?;
        let (stop, stopped) = oneshot::channel();
        let (ended, done) = oneshot::channel::<()>();
        let (attempted, attempts) = watch::channel(0);
        let pulse = Pulse(Arc::clone(&shared));
        let lease = renewals.lease;
        std::thread::Builder::new()
            .name("agent-fsm-fleet-keeper".to_owned())
            .spawn(move || {
                runtime.block_on(keep(renewals, pulse, stopped, attempted));
                drop(ended);
            })
            .map_err(|e| FleetError::Connect(Box::new(e)))?;
        Ok(Self { shared, stop: Some(stop), done: Some(done), attempts, lease })
    }

    /// Asks the keeper for a renewal now and waits (a lease at most) until
    /// it was attempted: after the worker's runtime was stopped for a lease
    /// (a pause, a stall), when the keeper held off, the leases nobody took
    /// meanwhile are kept, and only those taken are found lost.
    pub(crate) async fn renew_now(&mut self) {
        let seen = *self.attempts.borrow_and_update();
        self.shared.kick.notify_one();
        let _ = tokio::time::timeout(self.lease, self.attempts.wait_for(|n| *n > seen)).await;
    }

    /// Stops the keeper and waits (three leases at most: a connect, a
    /// renewal and a beat, each bounded by one) until it no longer
    /// writes: a beat after the worker removed its row would add it again.
    pub(crate) async fn stop(&mut self) {
        drop(self.stop.take());
        if let Some(done) = self.done.take() {
            let _ = tokio::time::timeout(self.lease * 3, done).await;
        }
    }

    /// The handle the worker's runtime beats with.
    pub(crate) fn pulse(&self) -> Pulse {
        Pulse(Arc::clone(&self.shared))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Renews agent `agent`'s lease at `epoch` from now on.
    pub(crate) fn hold(&self, agent: &str, epoch: u64) {
        self.state().held.insert(agent.to_owned(), epoch);
    }

    /// Renews agent `agent`'s lease no more.
    pub(crate) fn release(&self, agent: &str) {
        self.state().held.remove(agent);
    }

    /// Renews no lease any more.
    pub(crate) fn release_all(&self) {
        self.state().held.clear();
    }

    /// The agents found lost since the last call, when the last answered
    /// renewal was sent, and whether the keeper held one off and has not
    /// ended one since.
    pub(crate) fn take(&self) -> (Vec<(String, u64)>, Instant, bool) {
        let mut state = self.state();
        (std::mem::take(&mut state.lost), state.renewed, state.held_off)
    }

    /// Whether a beat found the worker's row taken over by another process
    /// registered under its id.
    pub(crate) fn replaced(&self) -> bool {
        self.state().replaced
    }
}

/// The keeper's thread: every third of a lease, renews the held leases
/// (while the worker's runtime is alive) and beats.
async fn keep(renewals: Renewals, pulse: Pulse, mut stopped: oneshot::Receiver<()>, attempted: watch::Sender<u64>) {
    let Renewals { target, worker, capacity, machine, life, lease } = renewals;
    let mut tick = tokio::time::interval(lease / 3);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut client: Option<Client> = None;
    let bounded = |what| format!("{what}: no answer within a lease ({lease:?})");
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            _ = tick.tick() => {}
            () = pulse.0.kick.notified() => {}
        }
        if pulse.silence() >= lease {
            // Until a renewal attempted after this ends.
            pulse.0.state.lock().unwrap_or_else(PoisonError::into_inner).held_off = true;
            tracing::warn!("the worker's runtime shows no sign of life for a lease: its leases are left to lapse");
            continue;
        }
        if client.as_ref().is_none_or(Client::is_closed) {
            match tokio::time::timeout(lease, target.connect(None)).await {
                Ok(Ok(connected)) => client = Some(connected),
                Ok(Err(error)) => tracing::warn!(%error, "the lease keeper cannot connect"),
                Err(_) => tracing::warn!("{}", bounded("the lease keeper cannot connect")),
            }
        }
        let Some(connected) = &client else {
            // A renewal that failed, as one refused would.
            pulse.0.state.lock().unwrap_or_else(PoisonError::into_inner).held_off = false;
            attempted.send_modify(|n| *n += 1);
            continue;
        };
        let held: Vec<(String, u64)> = {
            let state = pulse.0.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.held.iter().map(|(agent, epoch)| (agent.clone(), *epoch)).collect()
        };
        let agents: Vec<&str> = held.iter().map(|(agent, _)| agent.as_str()).collect();
        let epochs: Vec<i64> = held.iter().map(|(_, epoch)| i64::try_from(*epoch).unwrap_or(i64::MAX)).collect();
        // The server extends each lease from when it runs the statement,
        // after this: a lease renewed is held for a lease from here.
        let sent = Instant::now();
        let millis = db::millis(lease);
        match tokio::time::timeout(lease, connected.query(db::RENEW, &[&worker, &agents, &epochs, &millis])).await {
            Ok(Ok(rows)) => {
                let kept: std::collections::HashSet<String> =
                    rows.iter().filter_map(|row| row.try_get(0).ok()).collect();
                let mut state = pulse.0.state.lock().unwrap_or_else(PoisonError::into_inner);
                state.renewed = sent;
                state.held_off = false;
                for (agent, epoch) in held {
                    // Still held at the epoch renewed, and not renewed: lost.
                    if !kept.contains(&agent) && state.held.get(&agent) == Some(&epoch) {
                        state.held.remove(&agent);
                        state.lost.push((agent, epoch));
                    }
                }
            }
            Ok(Err(error)) => tracing::warn!(%error, "cannot renew the leases"),
            Err(_) => tracing::warn!("{}", bounded("cannot renew the leases")),
        }
        pulse.0.state.lock().unwrap_or_else(PoisonError::into_inner).held_off = false;
        attempted.send_modify(|n| *n += 1);
        match tokio::time::timeout(lease, connected.execute(db::HEARTBEAT, &[&worker, &capacity, &machine, &life]))
            .await
        {
            Ok(Ok(0)) => {
                tracing::error!("another process registered under this worker's id: it has the worker's agents now");
                pulse.0.state.lock().unwrap_or_else(PoisonError::into_inner).replaced = true;
                return;
            }
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::warn!(%error, "heartbeat failed"),
            Err(_) => tracing::warn!("{}", bounded("heartbeat failed")),
        }
    }
}

/// A fenced store whose every call that returns is a sign of life of the
/// worker's runtime: an agent writing its steps is not stuck, however late
/// the loop is.
pub(crate) struct Stamped {
    pub(crate) store: Arc<dyn CheckpointStore>,
    pub(crate) pulse: Pulse,
}

impl Stamped {
    fn stamp<T>(&self, result: T) -> T {
        self.pulse.beat();
        result
    }
}

impl CheckpointStore for Stamped {
    fn create(&self, agent: &str, machine: &str, at: SystemTime, initial: &Snapshot) -> Result<(), StoreError> {
        self.stamp(self.store.create(agent, machine, at, initial))
    }

    fn agent(&self, agent: &str) -> Result<Option<AgentInfo>, StoreError> {
        self.stamp(self.store.agent(agent))
    }

    fn agents(&self) -> Result<Vec<String>, StoreError> {
        self.stamp(self.store.agents())
    }

    fn append(&self, agent: &str, step: &StepRecord) -> Result<(), StoreError> {
        self.stamp(self.store.append(agent, step))
    }

    fn append_all(&self, agent: &str, steps: &[StepRecord]) -> Result<(), StoreError> {
        self.stamp(self.store.append_all(agent, steps))
    }

    fn finish(&self, agent: &str, finished: &[(EffectKind, String)]) -> Result<(), StoreError> {
        self.stamp(self.store.finish(agent, finished))
    }

    fn snapshot_at_or_before(&self, agent: &str, seq: u64) -> Result<Option<(u64, Snapshot)>, StoreError> {
        self.stamp(self.store.snapshot_at_or_before(agent, seq))
    }

    fn events(&self, agent: &str, after: u64, through: u64) -> Result<Vec<EventRecord>, StoreError> {
        self.stamp(self.store.events(agent, after, through))
    }

    fn in_flight(&self, agent: &str, seq: u64) -> Result<Vec<InFlight>, StoreError> {
        self.stamp(self.store.in_flight(agent, seq))
    }

    fn checkpoints(&self, agent: &str) -> Result<Vec<Checkpoint>, StoreError> {
        self.stamp(self.store.checkpoints(agent))
    }

    fn fork(&self, source: &str, seq: u64, new: &str) -> Result<(), StoreError> {
        self.stamp(self.store.fork(source, seq, new))
    }
}
