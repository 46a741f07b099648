//! The writes of a Postgres store, each run in one transaction on a
//! connection thread: create, append (one step or several), finish, fork;
//! and what a fenced store adds to each, the lease check and the inbox
//! row a step takes.

use std::time::SystemTime;

use postgres::error::SqlState;
use postgres::{Client, Transaction};

use super::pool::{Statements, read_err, write_err};
use super::{Fence, get, seq_to_sql, to_pg_time};
use crate::store::{EffectKind, FORMAT_VERSION, Snapshot, StepRecord, StoreError};

/// Locks `agent`'s lease row for the rest of the transaction (shared: the
/// steps of the agent's one writer do not wait for each other, a claim
/// that bumps the epoch waits for them) and refuses unless `fence` holds
/// it.
///
/// # Errors
/// [`StoreError::Fenced`] when the lease is another worker's, at another
/// epoch, released, or absent.
pub(crate) fn check_fence(
    tx: &mut Transaction<'_>,
    statements: &mut Statements,
    agent: &str,
    fence: &Fence,
) -> Result<(), StoreError> {
    let sql = "SELECT worker, epoch FROM leases WHERE agent = $1 FOR SHARE";
    let statement = statements.get(tx, sql).map_err(read_err)?;
    let row = tx.query_opt(&statement, &[&agent]).map_err(read_err)?;
    let (holder, current) = match row {
        Some(row) => (get::<Option<String>>(&row, 0)?, Some(get::<i64>(&row, 1)?)),
        None => (None, None),
    };
    let current = current.map(|epoch| u64::try_from(epoch).unwrap_or(0));
    if holder.as_deref() == Some(fence.worker.as_str()) && current == Some(fence.epoch) {
        return Ok(());
    }
    Err(StoreError::Fenced {
        agent: agent.to_owned(),
        worker: fence.worker.clone(),
        epoch: fence.epoch,
        holder,
        current,
    })
}

pub(crate) fn create(
    client: &mut Client,
    statements: &mut Statements,
    fence: Option<&Fence>,
    agent: &str,
    machine: &str,
    at: SystemTime,
    initial: &Snapshot,
) -> Result<(), StoreError> {
    let mut tx = client.transaction().map_err(write_err)?;
    if let Some(fence) = fence {
        check_fence(&mut tx, statements, agent, fence)?;
    }
    let format = i32::try_from(FORMAT_VERSION).unwrap_or(i32::MAX);
    let sql = "INSERT INTO agents (agent, machine, format, next_seq, created_at) VALUES ($1, $2, $3, 1, $4)
               ON CONFLICT (agent) DO NOTHING";
    let statement = statements.get(&mut tx, sql).map_err(write_err)?;
    // A concurrent create of the same id waits for the first and then
    // inserts nothing, as an id already there does.
    if tx.execute(&statement, &[&agent, &machine, &format, &to_pg_time(at)]).map_err(write_err)? == 0 {
        return Err(StoreError::AgentExists(agent.to_owned()));
    }
    let sql = "INSERT INTO snapshots (agent, seq, format, state, data) VALUES ($1, 0, $2, $3, $4)";
    let statement = statements.get(&mut tx, sql).map_err(write_err)?;
    let format = i32::try_from(initial.format).unwrap_or(i32::MAX);
    tx.execute(&statement, &[&agent, &format, &initial.state, &initial.data]).map_err(write_err)?;
    tx.commit().map_err(write_err)
}

/// Appends `steps` in one transaction: all or none.
pub(crate) fn append_all(
    client: &mut Client,
    statements: &mut Statements,
    fence: Option<&Fence>,
    agent: &str,
    steps: &[StepRecord],
) -> Result<(), StoreError> {
    let mut tx = client.transaction().map_err(write_err)?;
    if let Some(fence) = fence {
        check_fence(&mut tx, statements, agent, fence)?;
    }
    for step in steps {
        append_in(&mut tx, statements, fence, agent, step)?;
    }
    if let Some(fence) = fence
        && steps.iter().any(|step| fence.terminal.contains(&step.state.as_str()))
    {
        finish_lease(&mut tx, statements, agent)?;
    }
    tx.commit().map_err(write_err)
}

/// Marks the lease of `agent`, which the step written in `tx` brought to a
/// terminal state, done, and refuses the inbox rows no step will take now
/// (`refusal` `finished`): a send after this transaction is refused with
/// the fleet's `Finished` error instead of accepted and never applied.
/// Taken under the inbox's lock, which sends hold too, so that a send is
/// either before (its row refused here) or after (it sees the lease done). The worker and epoch stay until the
/// worker's loop releases the lease: the agent's last writes still pass
/// the fence.
fn finish_lease(tx: &mut Transaction<'_>, statements: &mut Statements, agent: &str) -> Result<(), StoreError> {
    for sql in [
        "SELECT pg_advisory_xact_lock(hashtext('agent_fsm inbox ' || $1))",
        "UPDATE leases SET done = true, expires_at = NULL WHERE agent = $1",
        "UPDATE inbox SET applied_seq = -1, refusal = 'finished' WHERE agent = $1 AND applied_seq IS NULL",
    ] {
        let statement = statements.get(tx, sql).map_err(write_err)?;
        tx.execute(&statement, &[&agent]).map_err(write_err)?;
    }
    Ok(())
}

/// The error of a write in an append: a unique violation or a
/// serialization failure means another writer wrote this step first.
fn append_err(agent: &str, step: &StepRecord) -> impl Fn(postgres::Error) -> StoreError {
    move |e| match e.code() {
        Some(code)
            if *code == SqlState::UNIQUE_VIOLATION
                || *code == SqlState::T_R_SERIALIZATION_FAILURE
                || *code == SqlState::T_R_DEADLOCK_DETECTED =>
        {
            StoreError::Conflict { agent: agent.to_owned(), expected: step.seq.saturating_add(1), found: step.seq }
        }
        _ => write_err(e),
    }
}

/// Writes `step` in `tx`, checking that it is the agent's next one.
fn append_in(
    tx: &mut Transaction<'_>,
    statements: &mut Statements,
    fence: Option<&Fence>,
    agent: &str,
    step: &StepRecord,
) -> Result<(), StoreError> {
    let seq = seq_to_sql(step.seq);
    let failed = append_err(agent, step);
    // Moving `next_seq` locks the agent's row: a second writer waits for
    // this transaction, then finds the number taken.
    let sql = "UPDATE agents SET next_seq = next_seq + 1 WHERE agent = $1 RETURNING next_seq - 1";
    let statement = statements.get(tx, sql).map_err(write_err)?;
    let Some(row) = tx.query_opt(&statement, &[&agent]).map_err(&failed)? else {
        return Err(StoreError::UnknownAgent(agent.to_owned()));
    };
    let expected = u64::try_from(get::<i64>(&row, 0)?).unwrap_or(0);
    if step.seq != expected {
        return Err(StoreError::Conflict { agent: agent.to_owned(), expected, found: step.seq });
    }
    let epoch = fence.map(|f| seq_to_sql(f.epoch));
    let worker = fence.map(|f| f.worker.as_str());
    let sql = "INSERT INTO events (agent, seq, at, state, event, origin, epoch, worker)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
    let statement = statements.get(tx, sql).map_err(write_err)?;
    tx.execute(
        &statement,
        &[&agent, &seq, &to_pg_time(step.at), &step.state, &step.event, &step.origin, &epoch, &worker],
    )
    .map_err(&failed)?;
    // One statement for every row the step finishes or replaces, one for
    // every row it starts, however many there are.
    let ending: Vec<(EffectKind, &str)> = step
        .finished
        .iter()
        .map(|(kind, key)| (*kind, key.as_str()))
        .chain(step.started.iter().map(|e| (e.kind, e.key.as_str())))
        .collect();
    if !ending.is_empty() {
        let kinds: Vec<i16> = ending.iter().map(|(kind, _)| i16::from(kind.code())).collect();
        let keys: Vec<&str> = ending.iter().map(|(_, key)| *key).collect();
        let sql = "UPDATE effects SET finished = $1 WHERE agent = $2 AND finished IS NULL
                   AND (kind, key) IN (SELECT * FROM unnest($3::smallint[], $4::text[]))";
        let statement = statements.get(tx, sql).map_err(write_err)?;
        tx.execute(&statement, &[&seq, &agent, &kinds, &keys]).map_err(&failed)?;
    }
    if !step.started.is_empty() {
        let kinds: Vec<i16> = step.started.iter().map(|e| i16::from(e.kind.code())).collect();
        let keys: Vec<&str> = step.started.iter().map(|e| e.key.as_str()).collect();
        let deadlines: Vec<Option<SystemTime>> = step.started.iter().map(|e| e.deadline.map(to_pg_time)).collect();
        let events: Vec<Option<&str>> = step.started.iter().map(|e| e.event.as_deref()).collect();
        let sql = "INSERT INTO effects (agent, kind, key, started, deadline, event)
                   SELECT $1::text, kind, key, $2::bigint, deadline, event
                   FROM unnest($3::smallint[], $4::text[], $5::timestamptz[], $6::text[]) AS u (kind, key, deadline, event)";
        let statement = statements.get(tx, sql).map_err(write_err)?;
        tx.execute(&statement, &[&agent, &seq, &kinds, &keys, &deadlines, &events]).map_err(&failed)?;
    }
    if let Some(snapshot) = &step.snapshot {
        let format = i32::try_from(snapshot.format).unwrap_or(i32::MAX);
        let sql = "INSERT INTO snapshots (agent, seq, format, state, data) VALUES ($1, $2, $3, $4, $5)";
        let statement = statements.get(tx, sql).map_err(write_err)?;
        tx.execute(&statement, &[&agent, &seq, &format, &snapshot.state, &snapshot.data]).map_err(&failed)?;
    }
    if fence.is_some() && step.origin.as_deref() == Some(INPUT) {
        take_inbox_row(tx, statements, agent, seq, &step.event)?;
    }
    Ok(())
}

/// The origin of a step whose event came from the agent's mailbox, which
/// in a fleet only the agent's inbox rows reach, in id order.
pub(crate) const INPUT: &str = "input";

/// Marks the agent's inbox row that step `seq` took as applied: the oldest
/// unapplied row holding the step's event, else the oldest unapplied row.
/// The k-th mailbox step takes the k-th row, so a row is applied exactly
/// once, by the step that handled it, and the rows a crash left in the
/// mailbox stay unapplied, to be sent again. Matching the event first
/// keeps that true when the machine takes an event out of turn (a
/// `#[during_work]` event ahead of the input held back during work): the
/// row marked is the one whose event the step took. (The fleet's feeder
/// rewrites a row whose text is not the event as the step serializes it
/// before it sends the event, so the two texts are the same.)
fn take_inbox_row(
    tx: &mut Transaction<'_>,
    statements: &mut Statements,
    agent: &str,
    seq: i64,
    event: &str,
) -> Result<(), StoreError> {
    let sql = "UPDATE inbox SET applied_seq = $2 WHERE id = (
                   SELECT id FROM inbox WHERE agent = $1 AND applied_seq IS NULL
                   ORDER BY event = $3 DESC, id LIMIT 1 FOR UPDATE
               )";
    let statement = statements.get(tx, sql).map_err(write_err)?;
    if tx.execute(&statement, &[&agent, &seq, &event]).map_err(write_err)? == 0 {
        // Something other than the inbox sent to the agent's handle: the
        // step is logged all the same, and no row is marked.
        tracing::warn!(agent, seq, "a step from the mailbox found no unapplied inbox row");
    }
    Ok(())
}

pub(crate) fn finish(
    client: &mut Client,
    statements: &mut Statements,
    fence: Option<&Fence>,
    agent: &str,
    finished: &[(EffectKind, String)],
) -> Result<(), StoreError> {
    let mut tx = client.transaction().map_err(write_err)?;
    if let Some(fence) = fence {
        check_fence(&mut tx, statements, agent, fence)?;
    }
    let sql = "SELECT next_seq FROM agents WHERE agent = $1";
    let statement = statements.get(&mut tx, sql).map_err(read_err)?;
    let Some(row) = tx.query_opt(&statement, &[&agent]).map_err(read_err)? else {
        return Err(StoreError::UnknownAgent(agent.to_owned()));
    };
    let last = get::<i64>(&row, 0)? - 1;
    if !finished.is_empty() {
        let kinds: Vec<i16> = finished.iter().map(|(kind, _)| i16::from(kind.code())).collect();
        let keys: Vec<&str> = finished.iter().map(|(_, key)| key.as_str()).collect();
        let sql = "UPDATE effects SET finished = $1 WHERE agent = $2 AND finished IS NULL
                   AND (kind, key) IN (SELECT * FROM unnest($3::smallint[], $4::text[]))";
        let statement = statements.get(&mut tx, sql).map_err(write_err)?;
        tx.execute(&statement, &[&last, &agent, &kinds, &keys]).map_err(write_err)?;
    }
    tx.commit().map_err(write_err)
}

pub(crate) fn fork(
    client: &mut Client,
    statements: &mut Statements,
    source: &str,
    seq: u64,
    new: &str,
) -> Result<(), StoreError> {
    let mut tx = client.transaction().map_err(write_err)?;
    // The source's row locked: its log cannot grow while it is copied.
    let sql = "SELECT next_seq FROM agents WHERE agent = $1 FOR SHARE";
    let statement = statements.get(&mut tx, sql).map_err(read_err)?;
    let Some(row) = tx.query_opt(&statement, &[&source]).map_err(read_err)? else {
        return Err(StoreError::UnknownAgent(source.to_owned()));
    };
    let last = u64::try_from(get::<i64>(&row, 0)? - 1).unwrap_or(0);
    let sql = "SELECT 1 FROM agents WHERE agent = $1";
    let statement = statements.get(&mut tx, sql).map_err(read_err)?;
    if tx.query_opt(&statement, &[&new]).map_err(read_err)?.is_some() {
        return Err(StoreError::AgentExists(new.to_owned()));
    }
    if seq > last {
        return Err(StoreError::NoCheckpoint { agent: source.to_owned(), seq, last });
    }
    let at = seq_to_sql(seq);
    let sql = "INSERT INTO agents (agent, machine, format, next_seq, forked_from, forked_at, created_at)
               SELECT $1::text, machine, format, $3::bigint + 1, $2::text, $3::bigint, created_at FROM agents WHERE agent = $2
               ON CONFLICT (agent) DO NOTHING";
    let statement = statements.get(&mut tx, sql).map_err(write_err)?;
    if tx.execute(&statement, &[&new, &source, &at]).map_err(write_err)? == 0 {
        return Err(StoreError::AgentExists(new.to_owned()));
    }
    let copies = [
        "INSERT INTO events (agent, seq, at, state, event, origin, epoch, worker)
         SELECT $1::text, seq, at, state, event, origin, epoch, worker FROM events WHERE agent = $2 AND seq <= $3::bigint",
        "INSERT INTO snapshots (agent, seq, format, state, data)
         SELECT $1::text, seq, format, state, data FROM snapshots WHERE agent = $2 AND seq <= $3::bigint",
        "INSERT INTO effects (agent, kind, key, started, finished, deadline, event)
         SELECT $1::text, kind, key, started, CASE WHEN finished <= $3::bigint THEN finished END, deadline, event
         FROM effects WHERE agent = $2 AND started <= $3::bigint",
    ];
    for sql in copies {
        let statement = statements.get(&mut tx, sql).map_err(write_err)?;
        tx.execute(&statement, &[&new, &source, &at]).map_err(write_err)?;
    }
    tx.commit().map_err(write_err)
}
