//! The inspector falling behind its agent again and again while a page
//! has stopped reading, over real HTTP on 127.0.0.1: each time, the open
//! pages are to be sent a fresh snapshot (a megabyte or so once the agent
//! has made thousands of hops). The snapshots must not wait in the pages'
//! queue for the page that stopped reading (up to a thousand of them,
//! a gigabyte), only the word that one is due: the pages still reading
//! are each sent one, and the memory of the agent's process stays flat.

use std::time::Duration;

use agent_fsm::inspector::{AgentView, Inspector, Shown};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle, spawn};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

#[agent_fsm::state_machine(fallback = Nothing)]
mod switch {
    #[states]
    #[derive(Debug, Clone)]
    pub(crate) enum State {
        #[initial]
        Off,
        On,
    }
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        Push,
        Shout,
    }
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
        Shout,
    }
    transitions! {
        Off + Push => On / Nothing,
        On + Push => Off / Nothing,
        Off + Shout => Off / Shout,
    }
}
use switch::{Event, Machine};

const LIMIT: Duration = Duration::from_secs(30);

/// The agent's notification log keeps this many.
const CAPACITY: usize = 4;

/// Shouts more outputs in one step than the log keeps: the inspector
/// falls behind.
struct Shouter;

impl Effects<Machine> for Shouter {
    type Output = String;

    fn perform(&mut self, action: switch::Action, cx: &mut EffectContext<'_, Machine, String>) {
        if matches!(action, switch::Action::Shout) {
            for _ in 0..10 * CAPACITY {
                cx.output("!".to_owned());
            }
        }
    }
}

/// The process's resident memory, in bytes (Linux).
fn resident() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Opens agent `id`'s update stream, as its page does.
async fn open_page(inspector: &Inspector, id: usize) -> TcpStream {
    let addr = inspector.local_addr();
    let mut page = timeout(LIMIT, TcpStream::connect(addr)).await.expect("connect in time").expect("connect");
    let events =
        format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\n\r\n", inspector.cookie());
    page.write_all(events.as_bytes()).await.expect("write");
    page
}

/// A page reading its updates, counting the snapshots among them.
struct Reader {
    page: TcpStream,
    /// The end of what was read, which may hold the start of a marker.
    tail: Vec<u8>,
    snapshots: usize,
}

impl Reader {
    const MARK: &[u8] = b"\"t\":\"snapshot\"";

    /// Reads until `n` snapshots have come.
    async fn until(&mut self, n: usize) {
        let mut buffer = vec![0u8; 1 << 16];
        while self.snapshots < n {
            let read = timeout(LIMIT, self.page.read(&mut buffer))
                .await
                .unwrap_or_else(|_| panic!("only {} snapshots of {n} in time", self.snapshots))
                .expect("read");
            assert!(read > 0, "the stream ended after {} snapshots", self.snapshots);
            self.tail.extend_from_slice(&buffer[..read]);
            self.snapshots += self.tail.windows(Self::MARK.len()).filter(|w| *w == Self::MARK).count();
            let keep = self.tail.len().saturating_sub(Self::MARK.len() - 1);
            self.tail.drain(..keep);
        }
    }
}

#[tokio::test]
async fn falling_behind_queues_no_snapshot_for_a_page_that_stopped_reading() {
    let handle: MachineHandle<Machine, String> =
        spawn(Machine::new(), Shouter, ExecutorConfig::new().notification_capacity(CAPACITY));
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let view = AgentView::new("switch").outputs(|text: &String| Some(Shown::TextDelta(text.clone())));
    let id = inspector.attach(&handle, view).await.expect("attach");
    // Thousands of hops, each followed (one per step, on this runtime):
    // a snapshot is a megabyte or so.
    for _ in 0..5000 {
        handle.send(Event::Push).await.expect("push");
    }
    handle.wait_idle().await.expect("idle");

    let _stopped = open_page(&inspector, id).await; // never read
    let mut reader = Reader { page: open_page(&inspector, id).await, tail: Vec::new(), snapshots: 0 };
    reader.until(1).await;
    let before = resident();

    // Each shout makes the inspector fall behind: every page is due a
    // fresh snapshot, and the one reading gets it. (Queued for the page
    // that stopped reading, the 150 would hold 50 MB; that page is closed
    // as idle only after 30 s.)
    let times = 150;
    for n in 0..times {
        handle.send(Event::Shout).await.expect("shout");
        reader.until(n + 2).await;
    }
    match (before, resident()) {
        (Some(before), Some(after)) => {
            let grown = after.saturating_sub(before);
            assert!(grown < 25 << 20, "{} MB more held after {times} snapshots were due", grown >> 20);
        }
        _ => println!("no /proc/self/statm: the memory is not measured"),
    }
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}
