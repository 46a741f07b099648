//! The reads of a Postgres store. Each is one statement (an implicit
//! transaction) or one read-only repeatable-read transaction, so it sees
//! the store at one instant; a statement that must tell an unknown agent
//! from one with nothing to return joins from the agent's row, which is
//! there (possibly with no match) or not.

use std::time::SystemTime;

use postgres::{Client, IsolationLevel};

use super::pool::{Statements, read_err, rows_err};
use super::{get, seq_to_sql};
use crate::store::{AgentInfo, Checkpoint, Effect, EffectKind, EventRecord, InFlight, Snapshot, StoreError};

/// A sequence number or step read back, which the store never writes
/// negative.
fn seq_from(agent: &str, what: &'static str, n: i64) -> Result<u64, StoreError> {
    u64::try_from(n).map_err(|_| StoreError::corrupt(agent, what, 0, format!("negative step {n}")))
}

pub(crate) fn agent(
    client: &mut Client,
    statements: &mut Statements,
    agent: &str,
) -> Result<Option<AgentInfo>, StoreError> {
    // One statement, so one instant: the agent's row, its log's last step,
    // and the last step any snapshot or effect row names.
    let sql = "SELECT a.machine, a.format, a.next_seq, a.forked_from, a.forked_at,
                      (SELECT max(seq) FROM events WHERE agent = a.agent),
                      GREATEST((SELECT max(seq) FROM snapshots WHERE agent = a.agent),
                               (SELECT max(started) FROM effects WHERE agent = a.agent))
               FROM agents a WHERE a.agent = $1";
    let statement = statements.get(client, sql).map_err(read_err)?;
    let Some(row) = client.query_opt(&statement, &[&agent]).map_err(read_err)? else { return Ok(None) };
    let format: i32 = get(&row, 1)?;
    let forked_from: Option<String> = get(&row, 3)?;
    let forked_at: Option<i64> = get(&row, 4)?;
    let forked_from = match forked_from.zip(forked_at) {
        Some((source, at)) => Some((source, seq_from(agent, "agent", at)?)),
        None => None,
    };
    let next_seq = seq_from(agent, "agent", get(&row, 2)?)?;
    let log_next = match get::<Option<i64>>(&row, 5)? {
        Some(last) => seq_from(agent, "event", last)?.saturating_add(1),
        None => 1,
    };
    // As SQLite refuses it: the log lost its last steps (rows deleted, a
    // restored backup of one table), which would otherwise read as an
    // agent that is behind, or one whose next step leaves a gap. Here the
    // agent's row counts its steps too.
    let beyond = get::<Option<i64>>(&row, 6)?.and_then(|n| u64::try_from(n).ok());
    if let Some(step) = beyond.into_iter().chain([next_seq.saturating_sub(1)]).filter(|&n| n >= log_next).max() {
        return Err(StoreError::corrupt(
            agent,
            "log",
            log_next,
            format!("step {step} has rows but the log ends before"),
        ));
    }
    if next_seq < log_next {
        let reason = format!(
            "the log holds step {} but the agent's row counts {} steps",
            log_next - 1,
            next_seq.saturating_sub(1)
        );
        return Err(StoreError::corrupt(agent, "agent", next_seq, reason));
    }
    // A version no release writes (a negative one, edited in) is a damaged
    // row, not a newer format to upgrade for.
    let format = u32::try_from(format).map_err(|_| {
        StoreError::corrupt(agent, "agent", next_seq, format!("format version {format} is not a version"))
    })?;
    Ok(Some(AgentInfo { machine: get(&row, 0)?, format, next_seq, forked_from }))
}

pub(crate) fn agents(client: &mut Client, statements: &mut Statements) -> Result<Vec<String>, StoreError> {
    let statement = statements.get(client, "SELECT agent FROM agents ORDER BY agent").map_err(read_err)?;
    client.query(&statement, &[]).map_err(read_err)?.iter().map(|row| get(row, 0)).collect()
}

pub(crate) fn snapshot_at_or_before(
    client: &mut Client,
    statements: &mut Statements,
    agent: &str,
    seq: u64,
) -> Result<Option<(u64, Snapshot)>, StoreError> {
    let sql = "SELECT s.seq, s.format, s.state, s.data FROM agents a
               LEFT JOIN LATERAL (
                   SELECT seq, format, state, data FROM snapshots
                   WHERE agent = a.agent AND seq <= $2 ORDER BY seq DESC LIMIT 1
               ) s ON true
               WHERE a.agent = $1";
    let statement = statements.get(client, sql).map_err(read_err)?;
    let Some(row) =
        client.query_opt(&statement, &[&agent, &seq_to_sql(seq)]).map_err(rows_err(agent, "snapshot", seq))?
    else {
        return Err(StoreError::UnknownAgent(agent.to_owned()));
    };
    let Some(at) = get::<Option<i64>>(&row, 0)? else { return Ok(None) };
    let format: i32 = get(&row, 1)?;
    let at = seq_from(agent, "snapshot", at)?;
    let format = u32::try_from(format)
        .map_err(|_| StoreError::corrupt(agent, "snapshot", at, format!("format version {format} is not a version")))?;
    let snapshot = Snapshot { format, state: get(&row, 2)?, data: get(&row, 3)? };
    Ok(Some((at, snapshot)))
}

pub(crate) fn events(
    client: &mut Client,
    statements: &mut Statements,
    agent: &str,
    after: u64,
    through: u64,
) -> Result<Vec<EventRecord>, StoreError> {
    let sql = "SELECT e.seq, e.at, e.state, e.event, e.origin FROM agents a
               LEFT JOIN events e ON e.agent = a.agent AND e.seq > $2 AND e.seq <= $3
               WHERE a.agent = $1 ORDER BY e.seq";
    let statement = statements.get(client, sql).map_err(read_err)?;
    let rows = client.query(&statement, &[&agent, &seq_to_sql(after), &seq_to_sql(through)]).map_err(rows_err(
        agent,
        "event",
        after.saturating_add(1),
    ))?;
    if rows.is_empty() {
        return Err(StoreError::UnknownAgent(agent.to_owned()));
    }
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        // The agent's row with no event in the range.
        let Some(seq) = get::<Option<i64>>(&row, 0)? else { continue };
        out.push(EventRecord {
            seq: seq_from(agent, "event", seq)?,
            at: get::<SystemTime>(&row, 1)?,
            state: get(&row, 2)?,
            event: get(&row, 3)?,
            origin: get(&row, 4)?,
        });
    }
    Ok(out)
}

pub(crate) fn in_flight(
    client: &mut Client,
    statements: &mut Statements,
    agent: &str,
    seq: u64,
) -> Result<Vec<InFlight>, StoreError> {
    let sql = "SELECT f.kind, f.key, f.started, f.deadline, f.event FROM agents a
               LEFT JOIN effects f ON f.agent = a.agent AND f.started <= $2 AND (f.finished IS NULL OR f.finished > $2)
               WHERE a.agent = $1 ORDER BY f.started, f.kind, f.key";
    let statement = statements.get(client, sql).map_err(read_err)?;
    let rows = client.query(&statement, &[&agent, &seq_to_sql(seq)]).map_err(rows_err(agent, "effect", seq))?;
    if rows.is_empty() {
        return Err(StoreError::UnknownAgent(agent.to_owned()));
    }
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let Some(code) = get::<Option<i16>>(&row, 0)? else { continue };
        let kind = u8::try_from(code)
            .ok()
            .and_then(EffectKind::from_code)
            .ok_or_else(|| StoreError::corrupt(agent, "effect", seq, format!("unknown effect kind {code}")))?;
        let effect = Effect { kind, key: get(&row, 1)?, deadline: get(&row, 3)?, event: get(&row, 4)? };
        out.push(InFlight { effect, started: seq_from(agent, "effect", get(&row, 2)?)? });
    }
    Ok(out)
}

pub(crate) fn checkpoints(
    client: &mut Client,
    statements: &mut Statements,
    agent: &str,
) -> Result<Vec<Checkpoint>, StoreError> {
    // Two statements: one snapshot of the store for both.
    let mut tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(read_err)?;
    let sql = "SELECT a.created_at, s.state FROM agents a
               LEFT JOIN snapshots s ON s.agent = a.agent AND s.seq = 0 WHERE a.agent = $1";
    let statement = statements.get(&mut tx, sql).map_err(read_err)?;
    let Some(first) = tx.query_opt(&statement, &[&agent]).map_err(read_err)? else {
        return Err(StoreError::UnknownAgent(agent.to_owned()));
    };
    let mut out = vec![Checkpoint {
        seq: 0,
        at: get(&first, 0)?,
        state: get::<Option<String>>(&first, 1)?.unwrap_or_default(),
        snapshot: true,
    }];
    let sql = "SELECT e.seq, e.at, e.state, s.seq IS NOT NULL FROM events e
               LEFT JOIN snapshots s ON s.agent = e.agent AND s.seq = e.seq
               WHERE e.agent = $1 ORDER BY e.seq";
    let statement = statements.get(&mut tx, sql).map_err(read_err)?;
    for row in tx.query(&statement, &[&agent]).map_err(read_err)? {
        out.push(Checkpoint {
            seq: seq_from(agent, "event", get(&row, 0)?)?,
            at: get(&row, 1)?,
            state: get(&row, 2)?,
            snapshot: get(&row, 3)?,
        });
    }
    tx.commit().map_err(read_err)?;
    Ok(out)
}
