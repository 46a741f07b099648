//! Senders and workers racing on a real Postgres server
//! (`AGENT_FSM_PG_URL`, in a schema of its own): several processes' worth
//! of senders, each on a connection of its own, send to the same agents at
//! once while two workers share them, one of them frozen past its lease and
//! another handing its agents back midway. Every event is applied exactly
//! once (none twice, none lost, none refused), each sender's events in the
//! order it sent them.

mod fleet_support;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agent_fsm::fleet::Worker;
use fleet_support::{Db, Event, Job, Proc, taken, until, within};

const LEASE: Duration = Duration::from_millis(400);
const AGENTS: u32 = 4;
const SENDERS: u32 = 6;
/// Events each sender sends to each agent.
const EACH: u32 = 60;

fn agent(i: u32) -> String {
    format!("racer-{i}")
}

/// The event sender `s` sends as its `n`-th to an agent.
fn value(s: u32, n: u32) -> u32 {
    s * 1000 + n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_sends_to_shared_agents_are_applied_once_each_in_order() {
    let Some(db) = Db::new("races") else { return };
    let fleet = db.fleet(LEASE).await;
    for i in 0..AGENTS {
        within(fleet.create(&agent(i), &Job::new(Vec::new()))).await.expect("created");
    }
    let worker = |id: &str| Worker::new(&fleet, id).capacity(100).poll(Duration::from_millis(100));
    // The worker to be frozen holds every agent first.
    let b = Proc::start(worker("b"));
    for i in 0..AGENTS {
        until("the agent is claimed", || async {
            within(fleet.status(&agent(i))).await.expect("reads").worker.as_deref() == Some("b")
        })
        .await;
    }
    let a = Proc::start(worker("a"));

    let sent = Arc::new(AtomicU32::new(0));
    let mut senders = Vec::new();
    for s in 0..SENDERS {
        // A fleet of its own: a connection of its own, as another process's.
        let own = db.fleet(LEASE).await;
        let sent = Arc::clone(&sent);
        senders.push(tokio::spawn(async move {
            for n in 0..EACH {
                // Each sender walks the agents from its own start, so that
                // senders meet on one agent's inbox at once.
                for k in 0..AGENTS {
                    let id = agent((k + s) % AGENTS);
                    within(own.send(&id, &Event::Add(value(s, n)))).await.expect("sent");
                    sent.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    let total = SENDERS * EACH * AGENTS;
    until("a third is sent", || async { sent.load(Ordering::SeqCst) >= total / 3 }).await;
    // Frozen past its lease: its agents move to the other worker, and its
    // writes after the thaw are fenced off.
    let thaw = b.freeze();
    tokio::time::sleep(LEASE * 4).await;
    drop(thaw);
    until("two thirds are sent", || async { sent.load(Ordering::SeqCst) >= total * 2 / 3 }).await;
    // A clean hand-back while events are in flight, to a worker just started.
    let ra = a.stop().await;
    let c = Proc::start(worker("c"));
    for sender in senders {
        within(sender).await.expect("the sender did not panic");
    }
    for i in 0..AGENTS {
        within(fleet.send(&agent(i), &Event::Finish)).await.expect("sent");
    }
    for i in 0..AGENTS {
        until("the agent finishes", || async { within(fleet.status(&agent(i))).await.expect("reads").done }).await;
    }

    for i in 0..AGENTS {
        let id = agent(i);
        let applied = taken(&fleet, &id).await;
        let mut sorted = applied.clone();
        sorted.sort_unstable();
        let mut expected: Vec<u32> = (0..SENDERS).flat_map(|s| (0..EACH).map(move |n| value(s, n))).collect();
        expected.sort_unstable();
        assert_eq!(sorted, expected, "{id}: an event applied twice or lost");
        let mut last: HashMap<u32, u32> = HashMap::new();
        for v in applied {
            let (s, n) = (v / 1000, v % 1000);
            if let Some(before) = last.insert(s, n) {
                assert!(before < n, "{id}: sender {s}'s {n} applied after its {before}");
            }
        }
        let status = within(fleet.status(&id)).await.expect("reads");
        assert_eq!((status.steps, status.unapplied, status.refused), (u64::from(SENDERS * EACH) + 1, 0, 0));
    }
    // Every row marked applied by one step of its own, none left over.
    let client = db.client().await;
    let row = client
        .query_one(
            "SELECT count(*), count(DISTINCT (agent, applied_seq)), count(*) FILTER (WHERE applied_seq IS NULL OR applied_seq < 1)
             FROM inbox",
            &[],
        )
        .await
        .expect("reads");
    let (rows, steps, open): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    assert_eq!((rows, steps, open), (i64::from(total + AGENTS), i64::from(total + AGENTS), 0));

    let (rb, rc) = (b.stop().await, c.stop().await);
    assert_eq!(ra.failed + rb.failed + rc.failed, 0, "{ra:?} {rb:?} {rc:?}");
    assert!(rb.lost > 0, "the frozen worker lost no agent: {rb:?}");
    db.drop_schema().await;
}
