//! A fleet's agent with a large inbox backlog, on a real Postgres server
//! (`AGENT_FSM_PG_URL`): its worker reads the backlog a page at a time,
//! so the worker's memory does not grow with the backlog, and every event
//! is applied once, in the order sent.
//!
//! Alone in its binary: it measures the process's peak memory, which
//! another test running beside it would raise.

mod fleet_support;

use std::time::Duration;

use agent_fsm::fleet::{FleetConfig, Worker};
use agent_fsm::runtime::ExecutorConfig;
use fleet_support::{Db, within};

#[allow(unreachable_pub)]
#[agent_fsm::state_machine(fallback = Nothing, serde, name = Notes)]
mod notes {
    #[context]
    pub type Context = Vec<u32>;

    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub enum State {
        #[initial]
        Idle,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq)]
    pub enum Event {
        /// Its number is written down; its text is only carried.
        Note(u32, String),
    }

    #[actions]
    #[derive(Debug, Clone, PartialEq, Default)]
    pub enum Action {
        #[default]
        Nothing,
    }

    transitions! {
        Idle + Note(n, _text) => { ctx.push(n); } Idle / Nothing,
    }
}

/// Events in the backlog.
const EVENTS: u32 = 600;
/// The bytes of each event's text.
const TEXT: i32 = 128 * 1024;

/// The process's peak resident memory, in bytes (`VmHWM`).
fn peak() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("reads /proc/self/status");
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).expect("a VmHWM line");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number");
    kib * 1024
}

/// A backlog of 600 events of 128 KiB (75 MiB) sent before the worker
/// starts is applied whole, in order, while the worker's process grows by
/// far less than the backlog: it is never read into memory at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_backlog_is_read_in_pages_in_order_and_whole() {
    let Some(db) = Db::new("backlog_pages") else { return };
    let config = FleetConfig::new(db.url.clone()).schema(db.schema.clone()).lease(Duration::from_secs(5));
    let fleet = within(agent_fsm::fleet::Fleet::connect(config)).await.expect("connects");
    within(fleet.create("notes", &notes::Notes::new(Vec::new()))).await.expect("created");
    // Written by the server, as sends would write them: the test's own
    // memory never holds the backlog.
    let client = db.client().await;
    let insert = "INSERT INTO inbox (agent, event)
                  SELECT 'notes', '{\"event\":\"note\",\"data\":[' || i || ',\"'
                                  || left(repeat(md5(i::text), $2 / 32 + 1), $2) || '\"]}'
                  FROM generate_series(1, $1::bigint) AS i ORDER BY i";
    within(client.execute(insert, &[&i64::from(EVENTS), &TEXT])).await.expect("inserts the backlog");
    let before = peak();

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = Worker::new(&fleet, "a").poll(Duration::from_millis(100));
    let running = tokio::spawn(worker.run(|_: &str| ((), ExecutorConfig::<notes::Notes>::new()), async {
        let _ = stopped.await;
    }));
    let applied = || async {
        let store = fleet.store().clone();
        tokio::task::spawn_blocking(move || agent_fsm::store::restore::<notes::Notes, _>(&store, "notes"))
            .await
            .expect("joins")
            .expect("restores")
            .machine
            .context()
            .clone()
    };
    let waited = tokio::time::timeout(Duration::from_secs(120), async {
        while within(fleet.status("notes")).await.expect("reads").steps < u64::from(EVENTS) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the backlog was not applied in time");
    let grown = peak().saturating_sub(before);
    assert_eq!(applied().await, (1..=EVENTS).collect::<Vec<_>>(), "every event once, in order");
    let status = within(fleet.status("notes")).await.expect("reads");
    assert_eq!((status.unapplied, status.refused), (0, 0), "{status:?}");
    let backlog = u64::from(EVENTS) * u64::try_from(TEXT).expect("positive");
    assert!(grown < backlog / 2, "the worker grew by {grown} bytes for a backlog of {backlog}");

    let _ = stop.send(());
    within(running).await.expect("joins").expect("runs");
    db.drop_schema().await;
}
