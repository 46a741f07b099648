//! A worker's claims: agents of its machine taken up to its capacity, a
//! batch at a time, each started from its checkpoint; a start that fails
//! (the caller's function panics, the checkpoint does not read in time) is
//! counted against its agent, which rests here for a lease.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tokio::time::Instant;

use super::Loop;
use crate::fleet::halt::{StartFailure, halt_unreadable_ids, start_failed};
use crate::fleet::running::{Resumable, Spawn};
use crate::fleet::{FleetError, db};
use crate::panics::panic_message;
use crate::runtime::{Effects, ExecutorConfig};
use crate::store::StoreError;
use crate::store::postgres::pool::untranslatable;

/// How many agents a worker claims at once, between two looks at its
/// renewals and notifications.
const CLAIM_BATCH: usize = 32;

impl<M, E, F> Loop<M, E, F>
where
    M: Resumable,
    E: Effects<M>,
    F: FnMut(&str) -> (E, ExecutorConfig<M>),
{
    /// Claims agents up to the worker's capacity, at most [`CLAIM_BATCH`],
    /// and spawns them; true if it may find more at once.
    pub(super) async fn claim(&mut self) -> bool {
        let room = (self.worker.capacity as usize).saturating_sub(self.running.len()).min(CLAIM_BATCH);
        if room == 0 {
            return false;
        }
        let now = Instant::now();
        self.resting.retain(|_, until| *until > now);
        let exclude: Vec<&str> = self.running.keys().chain(self.resting.keys()).map(String::as_str).collect();
        let limit = i64::try_from(room).unwrap_or(i64::MAX);
        let lease = db::millis(self.worker.lease);
        let (client, machine) = (self.control.get(), M::DESCRIPTION.name);
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] =
            [&self.worker.id, &limit, &exclude, &lease, &machine, &self.life];
        let claimed = client.query(db::CLAIM_AGENTS, &params);
        let rows = match tokio::time::timeout(self.worker.lease, claimed).await {
            Ok(Ok(rows)) => rows,
            Ok(Err(error)) => {
                tracing::warn!(%error, "cannot claim agents");
                // An id the server cannot send fails every claim picking it.
                return untranslatable(&error) && halt_unreadable_ids(&client, self.worker.lease).await;
            }
            Err(_) => {
                tracing::warn!(lease = ?self.worker.lease, "cannot claim agents: no answer within a lease");
                return false;
            }
        };
        let full = rows.len() == room;
        let mut spawns = Vec::with_capacity(rows.len());
        let mut failed = Vec::new();
        for row in rows {
            let (Ok(agent), Ok(epoch)) = (row.try_get::<_, String>(0), row.try_get::<_, i64>(1)) else {
                tracing::error!("a lease row does not read as the schema says");
                continue;
            };
            let epoch = db::unsigned(epoch);
            // Renewed from the claim on: an agent resumed first may keep
            // the runtime busy for longer than a lease before the others'
            // resumes are done.
            self.keeper.hold(&agent, epoch);
            self.report.claimed += 1;
            tracing::info!(agent = agent.as_str(), epoch, "agent claimed");
            // The caller's function: a panic in it for one agent is that
            // agent's failure, not the worker's.
            let (effects, config) = match catch_unwind(AssertUnwindSafe(|| (self.agents)(&agent))) {
                Ok(built) => built,
                Err(panic) => {
                    failed.push((agent, epoch, StartFailure::Panicked(panic_message(&*panic))));
                    continue;
                }
            };
            spawns.push(Spawn {
                fleet: &self.worker.fleet,
                control: self.control.clone(),
                worker: &self.worker.id,
                agent,
                epoch,
                effects,
                config,
                durability: self.worker.durability,
                snapshots: self.worker.snapshots,
                ended: self.ended_tx.clone(),
                pulse: self.keeper.pulse(),
            });
        }
        // Resumed side by side: each reads its checkpoint. A read that
        // waits (on a lock, a connection that does not answer) is given up
        // after half a lease, as a failed resume, rather than keep the loop
        // from its renewals, which would let the leases of the agents it
        // runs lapse: renewed every third of a lease, they are then renewed
        // within five sixths of one. (A bound as short as the renewals'
        // period would fail resumes that are only slow, a batch of them
        // queued on the store's connections on a busy machine.)
        let wait = self.worker.lease / 2;
        let started = futures::future::join_all(spawns.into_iter().map(|spawn| {
            let (agent, epoch) = (spawn.agent.clone(), spawn.epoch);
            async move {
                let started = tokio::time::timeout(wait, spawn.start()).await.unwrap_or_else(|_| {
                    Err(FleetError::Store(StoreError::Read(
                        format!("the checkpoint was not read within {wait:?}").into(),
                    )))
                });
                (agent, epoch, started)
            }
        }))
        .await;
        for (agent, epoch, result) in started {
            match result {
                Ok(running) => {
                    self.running.insert(agent, running);
                }
                Err(error) => failed.push((agent, epoch, StartFailure::Resume(error))),
            }
        }
        for (agent, epoch, failure) in failed {
            self.keeper.release(&agent);
            tracing::error!(agent = agent.as_str(), epoch, %failure, "cannot start the agent");
            self.report.failed += 1;
            let client = self.control.get();
            let attempts = self.worker.fleet.config().event_attempts;
            let settled = start_failed(&client, &agent, &self.worker.id, epoch, &failure, attempts);
            if tokio::time::timeout(self.worker.lease, settled).await.is_err() {
                tracing::warn!(agent = agent.as_str(), "cannot count the failed start: no answer within a lease");
            }
            // Its lease expires unrenewed: tried again a lease later,
            // unless halted meanwhile.
            self.resting.insert(agent, Instant::now() + self.worker.lease);
        }
        full
    }
}
