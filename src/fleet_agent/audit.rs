//! What a fleet run left in Postgres, checked row by row: every agent at
//! `Done` after exactly the steps its plan takes, its log without gap,
//! every write fenced and no epoch shared by two workers, every inbox row
//! applied once by the step it names, and each agent's ledger, rebuilt by
//! replaying its log, holding the approvals sent to it once each.

use std::collections::BTreeMap;

use postgres::Client;

use super::{Event, FleetAgent, Plan, State};

/// The origin a step whose event came from the agent's mailbox (the
/// fleet's inbox) is written with.
const INPUT: &str = "input";

/// What the checks found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Agents in the store.
    pub agents: usize,
    /// Agents whose log ends in `Done`.
    pub done: usize,
    /// Event rows.
    pub events: u64,
    /// Inbox rows.
    pub inbox: u64,
    /// Approvals applied, over every agent.
    pub approvals: usize,
    /// Distinct (agent, epoch) pairs the events were written under: more
    /// than the agents when agents moved between workers.
    pub epochs: u64,
    /// Each broken promise, one line each; empty when the run is clean.
    pub problems: Vec<String>,
}

impl Report {
    /// Whether every check held.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Quotes a schema name for SQL.
#[must_use]
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A connection to `url` with `schema` first in its search path.
///
/// # Errors
/// The server's, when it cannot be reached.
pub fn connect(url: &str, schema: &str) -> Result<Client, postgres::Error> {
    let mut client = Client::connect(url, postgres::NoTls)?;
    client.batch_execute(&format!("SET search_path TO {}", quote_ident(schema)))?;
    Ok(client)
}

/// Checks every promise of a fleet run of `expected` agents, each run
/// with `plan`, against the store `client` reads (its search path set to
/// the fleet's schema).
///
/// # Errors
/// The server's, when a query fails.
pub fn audit(client: &mut Client, plan: Plan, expected: usize) -> Result<Report, postgres::Error> {
    let mut report = Report::default();
    let mut problems = Vec::new();

    let agents: Vec<String> =
        client.query("SELECT agent FROM agents ORDER BY agent", &[])?.iter().map(|r| r.get(0)).collect();
    report.agents = agents.len();
    if agents.len() != expected {
        problems.push(format!("{} agents in the store, {expected} created", agents.len()));
    }

    // Fencing: every step was written by a worker under its lease, and no
    // epoch of an agent has two writers.
    let unfenced: i64 =
        client.query_one("SELECT count(*) FROM events WHERE epoch IS NULL OR worker IS NULL", &[])?.get(0);
    if unfenced > 0 {
        problems.push(format!("{unfenced} event rows written without a fence"));
    }
    for row in client.query(
        "SELECT agent, epoch, string_agg(DISTINCT worker, ',') FROM events
         GROUP BY agent, epoch HAVING count(DISTINCT worker) > 1",
        &[],
    )? {
        let (agent, epoch, workers): (String, i64, String) = (row.get(0), row.get(1), row.get(2));
        problems.push(format!("{agent}: epoch {epoch} written by several workers ({workers})"));
    }
    report.epochs = u64::try_from(
        client.query_one("SELECT count(*) FROM (SELECT DISTINCT agent, epoch FROM events) AS e", &[])?.get::<_, i64>(0),
    )
    .unwrap_or(0);

    // The inbox: every row applied, by a step of its own that took that
    // very event from the mailbox, and every such step one row's.
    let unapplied: i64 = client.query_one("SELECT count(*) FROM inbox WHERE applied_seq IS NULL", &[])?.get(0);
    if unapplied > 0 {
        problems.push(format!("{unapplied} inbox rows never applied"));
    }
    for row in client.query(
        "SELECT agent, applied_seq, count(*) FROM inbox WHERE applied_seq IS NOT NULL
         GROUP BY agent, applied_seq HAVING count(*) > 1",
        &[],
    )? {
        let (agent, seq, n): (String, i64, i64) = (row.get(0), row.get(1), row.get(2));
        problems.push(format!("{agent}: {n} inbox rows applied at step {seq}"));
    }
    for row in client.query(
        "SELECT i.id, i.agent, i.event, e.event, e.origin FROM inbox i
         LEFT JOIN events e ON e.agent = i.agent AND e.seq = i.applied_seq
         WHERE i.applied_seq IS NOT NULL",
        &[],
    )? {
        let (id, agent, sent, took, origin): (i64, String, String, Option<String>, Option<String>) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        let same = took.as_deref().is_some_and(|took| json(took) == json(&sent));
        if !same || origin.as_deref() != Some(INPUT) {
            problems.push(format!("{agent}: inbox row {id} ({sent}) is not the step it names ({took:?}, {origin:?})"));
        }
    }
    let inputs: BTreeMap<String, i64> = client
        .query("SELECT agent, count(*) FROM events WHERE origin = $1 GROUP BY agent", &[&INPUT])?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let rows: BTreeMap<String, i64> = client
        .query("SELECT agent, count(*) FROM inbox GROUP BY agent", &[])?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    report.inbox = u64::try_from(rows.values().sum::<i64>()).unwrap_or(0);
    if inputs != rows {
        problems.push("the steps taken from the mailbox are not the inbox's rows, one each".to_owned());
    }

    // Each agent's log, replayed.
    let mut sent_approvals: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in client.query("SELECT agent, event FROM inbox ORDER BY id", &[])? {
        let (agent, event): (String, String) = (row.get(0), row.get(1));
        if let Ok(Event::Approved { id, .. }) = serde_json::from_str(&event) {
            sent_approvals.entry(agent).or_default().push(id);
        }
    }
    let not_done: i64 = client.query_one("SELECT count(*) FROM leases WHERE NOT done", &[])?.get(0);
    if not_done > 0 {
        problems.push(format!("{not_done} leases not marked done"));
    }
    for agent in &agents {
        let log = client.query("SELECT seq, state, event FROM events WHERE agent = $1 ORDER BY seq", &[agent])?;
        report.events += log.len() as u64;
        let seqs: Vec<i64> = log.iter().map(|r| r.get(0)).collect();
        if seqs.iter().zip(1..).any(|(&seq, want)| seq != want) {
            problems.push(format!("{agent}: the log has a gap: {seqs:?}"));
        }
        if log.len() as u64 != plan.steps() {
            problems.push(format!("{agent}: {} steps, the plan takes {}", log.len(), plan.steps()));
        }
        let mut machine = FleetAgent::new(plan);
        for row in &log {
            let (seq, state, event): (i64, String, String) = (row.get(0), row.get(1), row.get(2));
            match serde_json::from_str::<Event>(&event) {
                Ok(event) => {
                    machine.handle_event(event);
                }
                Err(error) => problems.push(format!("{agent}: step {seq} does not decode: {error}")),
            }
            if machine.state().name() != state {
                problems.push(format!("{agent}: step {seq} recorded {state}, replays to {}", machine.state().name()));
            }
        }
        let end = machine.state();
        if matches!(end, State::Done { .. }) {
            report.done += 1;
        } else {
            problems.push(format!("{agent}: ends in {}", end.name()));
        }
        let ledger = end.ledger();
        let applied: Vec<String> = ledger.approvals.iter().map(|a| a.id.clone()).collect();
        report.approvals += applied.len();
        let sent = sent_approvals.get(agent).cloned().unwrap_or_default();
        if applied != sent || applied.len() != plan.approvals() {
            problems.push(format!("{agent}: approvals applied {applied:?}, sent {sent:?}"));
        }
        let calls: Vec<String> = plan.calls().into_iter().map(|c| c.id).collect();
        if ledger.tools != calls {
            problems.push(format!("{agent}: tool results {:?}", ledger.tools));
        }
        if !ledger.strays.is_empty() {
            problems.push(format!("{agent}: strays {:?}", ledger.strays));
        }
    }
    report.problems = problems;
    Ok(report)
}

fn json(text: &str) -> Option<serde_json::Value> {
    serde_json::from_str(text).ok()
}
