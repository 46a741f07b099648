//! The fleet's outside world: the process that gives each agent its task
//! and approves each call as the agent asks, reading the requests from
//! the store (a step that led to `AwaitingApproval` is one request) and
//! sending the answers through the fleet's inbox.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use postgres::Client;

use super::Event;

/// What a drive sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Driven {
    /// Tasks sent, one per agent.
    pub tasks: usize,
    /// Approvals sent.
    pub approvals: usize,
}

/// Why a drive stopped short.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriveError {
    /// Reading the store failed.
    #[error("reading the store: {0}")]
    Store(#[from] postgres::Error),
    /// Sending an event failed.
    #[error("sending to {agent}: {error}")]
    Send {
        /// The agent.
        agent: String,
        /// What the send said.
        error: String,
    },
    /// Not every agent was done in time.
    #[error("{done} of {total} agents done after {after:?}")]
    TimedOut {
        /// Agents done.
        done: usize,
        /// Agents driven.
        total: usize,
        /// The limit.
        after: Duration,
    },
}

/// The task agent `agent` is given.
#[must_use]
pub fn task_for(agent: &str) -> Event {
    Event::Begin { task: format!("tidy the files of {agent}") }
}

/// The `n`-th approval (from 1) sent to `agent`, for its `n`-th request:
/// its id is unique in the fleet, so the ledger shows which one was
/// applied.
#[must_use]
pub fn approval_for(agent: &str, n: usize) -> Event {
    Event::Approved { id: format!("{agent}/approval-{n}"), request: n }
}

/// Sends every agent of `agents` its task with `send`, then, polling the
/// store `client` reads every `poll`, an approval each time an agent asks
/// for one, until every agent is `Done` or `limit` has passed.
///
/// # Errors
/// [`DriveError`]: the store, a send, or the time limit.
pub fn drive<F, E>(
    client: &mut Client,
    agents: &[String],
    poll: Duration,
    limit: Duration,
    mut send: F,
) -> Result<Driven, DriveError>
where
    F: FnMut(&str, &Event) -> Result<(), E>,
    E: std::fmt::Display,
{
    let start = Instant::now();
    let mut driven = Driven::default();
    let mut send = |agent: &str, event: &Event| {
        send(agent, event).map_err(|e| DriveError::Send { agent: agent.to_owned(), error: e.to_string() })
    };
    for agent in agents {
        send(agent, &task_for(agent))?;
        driven.tasks += 1;
    }
    let mut approved: BTreeMap<&str, usize> = agents.iter().map(|a| (a.as_str(), 0)).collect();
    loop {
        let rows = client.query(
            "SELECT agent, count(*) FILTER (WHERE state = 'AwaitingApproval'), bool_or(state = 'Done')
             FROM events GROUP BY agent",
            &[],
        )?;
        let mut done = 0;
        for row in rows {
            let (agent, asks, ended): (String, i64, bool) = (row.get(0), row.get(1), row.get(2));
            done += usize::from(ended);
            let Some(sent) = approved.get_mut(agent.as_str()) else { continue };
            while (*sent as i64) < asks {
                *sent += 1;
                send(&agent, &approval_for(&agent, *sent))?;
                driven.approvals += 1;
            }
        }
        if done >= agents.len() {
            return Ok(driven);
        }
        if start.elapsed() >= limit {
            return Err(DriveError::TimedOut { done, total: agents.len(), after: limit });
        }
        std::thread::sleep(poll);
    }
}
