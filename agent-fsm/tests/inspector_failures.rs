//! An agent whose worker fails, followed by the inspector over real HTTP
//! on 127.0.0.1: its page says that it failed and why, not only that it
//! finished, as it would for an agent that stopped normally.

use std::time::Duration;

use agent_fsm::inspector::{AgentView, Inspector};
use agent_fsm::runtime::{ExecutorConfig, MachineHandle, from_fn, spawn};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

#[agent_fsm::state_machine(fallback = Nothing)]
mod fragile {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum State {
        #[initial]
        Idle,
        #[terminal]
        Done,
    }
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        Crash,
        Finish,
    }
    use super::crash;

    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
    }
    transitions! {
        Idle + Crash => { crash(); } Idle / Nothing,
        Idle + Finish => Done / Nothing,
    }
}
use fragile::{Event, Machine};

/// The bug of the `Crash` row (a function: a `panic!` in the row itself
/// would leave the rest of the row unreachable).
fn crash() {
    panic!("the row's own bug");
}

const LIMIT: Duration = Duration::from_secs(10);

/// The notes a page is shown until the agent's end (that of its
/// snapshot, for a page opened after it), its snapshot's included.
async fn notes_until_the_end(inspector: &Inspector, id: usize) -> Vec<String> {
    let addr = inspector.local_addr();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let text = format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    stream.write_all(text.as_bytes()).await.expect("write");
    let mut seen = String::new();
    let mut buffer = [0u8; 8192];
    let mut messages: Vec<serde_json::Value> = Vec::new();
    while !messages.iter().any(|m| m["t"] == "end" || (m["t"] == "snapshot" && m["finished"] == true)) {
        let n = timeout(LIMIT, stream.read(&mut buffer)).await.expect("an update in time").expect("read");
        assert!(n > 0, "the stream ended before the agent did: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
        messages = seen
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect();
    }
    let mut notes = Vec::new();
    for message in &messages {
        let texts = match message["t"].as_str() {
            Some("snapshot") => message["notes"].as_array().cloned().unwrap_or_default(),
            Some("note") => vec![message.clone()],
            _ => Vec::new(),
        };
        notes.extend(texts.iter().filter_map(|note| note["text"].as_str().map(str::to_owned)));
    }
    notes
}

#[tokio::test]
async fn a_failed_worker_is_shown_as_failed_with_its_cause() {
    let handle: MachineHandle<Machine, ()> = spawn(Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new());
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, AgentView::new("fragile")).await.expect("attach");
    let page = notes_until_the_end(&inspector, id);
    let crash = async {
        // The page opens first: its snapshot, then the crash.
        tokio::task::yield_now().await;
        let _ = handle.send(Event::Crash).await;
    };
    let (notes, ()) = tokio::join!(page, crash);
    assert!(
        notes.iter().any(|n| n.contains("failed") && n.contains("the row's own bug")),
        "the page says the worker failed, and why: {notes:?}"
    );
}

#[tokio::test]
async fn a_worker_that_stops_normally_has_no_failure_note() {
    let handle: MachineHandle<Machine, ()> = spawn(Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new());
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, AgentView::new("steady")).await.expect("attach");
    // A terminal state: the worker stops there, normally.
    handle.send(Event::Finish).await.expect("finish");
    timeout(LIMIT, handle.wait_finished()).await.expect("in time").expect("a normal stop");
    let notes = notes_until_the_end(&inspector, id).await;
    assert!(notes.iter().all(|n| !n.contains("failed")), "{notes:?}");
}
