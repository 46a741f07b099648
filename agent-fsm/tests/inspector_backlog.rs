//! What the inspector holds for a page that stops reading, over real HTTP
//! on 127.0.0.1: a client that opens an agent's update stream and reads
//! nothing more while the agent streams megabytes of text. The updates it
//! has not read are held up to [`PAGE_BACKLOG`] bytes, not a thousand
//! updates of up to 128 KiB each (128 MB for as long as the idle limit):
//! past them they are dropped, and the page, once it reads again, is sent
//! a fresh snapshot in their place. With many pages open at once, half
//! of them stopped, the pages still reading are sent every change.

use std::time::Duration;

use agent_fsm::inspector::{AgentView, Inspector, PAGE_BACKLOG, Shown};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle, spawn};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::timeout;

#[agent_fsm::state_machine(fallback = Nothing)]
mod talker {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum State {
        #[initial]
        Talking,
        #[terminal]
        Done,
    }
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        Say(String),
        Stop,
    }
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
        Speak(String),
    }
    transitions! {
        Talking + Say(text) => Talking / Speak(text),
        Talking + Stop => Done / Speak("the end".to_owned()),
    }
}
use talker::{Event, Machine};

const LIMIT: Duration = Duration::from_secs(60);

/// Streams each `Speak` as an output.
struct Speaker;

impl Effects<Machine> for Speaker {
    type Output = String;

    fn perform(&mut self, action: talker::Action, cx: &mut EffectContext<'_, Machine, String>) {
        if let talker::Action::Speak(text) = action {
            cx.output(text);
        }
    }
}

/// Reads `stream`'s events, each whole (what came of the next one is
/// left in `pending`), handing each to `each` until it returns true.
async fn events_until(stream: &mut TcpStream, pending: &mut Vec<u8>, mut each: impl FnMut(&[u8]) -> bool) {
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = pending.drain(..end + 2).collect();
            if each(&event) {
                return;
            }
        }
        let n = timeout(LIMIT, stream.read(&mut buffer)).await.expect("an update in time").expect("read");
        assert!(n > 0, "the stream ended");
        pending.extend_from_slice(&buffer[..n]);
    }
}

fn holds(event: &[u8], needle: &str) -> bool {
    event.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The message an event carries, if any.
fn message(event: &[u8]) -> Option<serde_json::Value> {
    let event = String::from_utf8_lossy(event);
    let data = event.lines().find_map(|line| line.strip_prefix("data: "))?;
    serde_json::from_str(data).ok()
}

/// The state the index lists agent `id` in.
async fn listed_state(inspector: &Inspector) -> String {
    let addr = inspector.local_addr();
    let mut index = timeout(LIMIT, TcpStream::connect(addr)).await.expect("connect in time").expect("connect");
    let list = format!(
        "GET /api/agents HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
        inspector.cookie()
    );
    index.write_all(list.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    timeout(LIMIT, index.read_to_end(&mut response)).await.expect("answer in time").expect("read");
    let response = String::from_utf8_lossy(&response);
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    let list: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {response}"));
    list[0]["state"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_page_that_stops_reading_is_held_its_backlog_in_bytes_then_resent_a_snapshot() {
    timeout(LIMIT, stalled_page()).await.expect("the test timed out");
}

async fn stalled_page() {
    // The inspector's subscription keeps up: nothing is missed there.
    let handle: MachineHandle<Machine, String> =
        spawn(Machine::new(), Speaker, ExecutorConfig::new().notification_capacity(4096));
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let view = AgentView::new("talker").outputs(|text: &String| Some(Shown::TextDelta(text.clone())));
    let id = inspector.attach(&handle, view).await.expect("attach");

    // A page with a small receive buffer, so that what the kernel holds
    // for it is small beside what is streamed.
    let addr = inspector.local_addr();
    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("a small receive buffer");
    let mut page = timeout(LIMIT, socket.connect(addr)).await.expect("connect in time").expect("connect");
    let events =
        format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\n\r\n", inspector.cookie());
    page.write_all(events.as_bytes()).await.expect("write");
    let mut pending = Vec::new();
    events_until(&mut page, &mut pending, |event| holds(event, "\"t\":\"snapshot\"")).await;

    // Five times the backlog, in 200 deltas of 100 KB: far fewer updates
    // than the thousand a page may fall behind by.
    let deltas = 200;
    let size = 5 * PAGE_BACKLOG / deltas;
    for n in 0..deltas {
        let text = format!("<{n}>{}", "x".repeat(size));
        handle.send(Event::Say(text)).await.expect("say");
    }
    handle.send(Event::Stop).await.expect("stop");
    // Every delta is in the agent's log once the index shows the state
    // that follows them.
    while listed_state(&inspector).await != "Done" {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Up to the last delta, in an update or in a snapshot's text.
    let mut messages = Vec::new();
    events_until(&mut page, &mut pending, |event| {
        messages.extend(message(event));
        holds(event, "the end")
    })
    .await;
    let snapshots = messages.iter().filter(|m| m["t"] == "snapshot").count();
    let texts = messages.iter().filter(|m| m["t"] == "text").count();
    assert!(snapshots >= 1, "the page was never sent a fresh snapshot ({texts} of {deltas} deltas sent)");
    assert!(texts < deltas, "every delta was held for the page: {texts}");
    let last = messages.iter().rev().find(|m| m["t"] == "snapshot").expect("a snapshot");
    assert_eq!(last["state"], "Done", "the fresh snapshot is taken when the page reads again");
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_half_the_pages_stopped_the_others_are_sent_everything() {
    timeout(LIMIT, many_pages()).await.expect("the test timed out");
}

async fn many_pages() {
    let handle: MachineHandle<Machine, String> =
        spawn(Machine::new(), Speaker, ExecutorConfig::new().notification_capacity(4096));
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let view = AgentView::new("talker").outputs(|text: &String| Some(Shown::TextDelta(text.clone())));
    let id = inspector.attach(&handle, view).await.expect("attach");
    let addr = inspector.local_addr();
    let events =
        format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\n\r\n", inspector.cookie());
    let pages = 16;
    // Held open, never read.
    let mut stopped = Vec::new();
    let mut readers = Vec::new();
    for n in 0..pages {
        // The pages stopped with a small receive buffer, as above.
        let socket = TcpSocket::new_v4().expect("socket");
        if n % 2 == 0 {
            socket.set_recv_buffer_size(4096).expect("a small receive buffer");
        }
        let mut page = timeout(LIMIT, socket.connect(addr)).await.expect("connect in time").expect("connect");
        page.write_all(events.as_bytes()).await.expect("write");
        let mut pending = Vec::new();
        events_until(&mut page, &mut pending, |event| holds(event, "\"t\":\"snapshot\"")).await;
        if n % 2 == 0 {
            stopped.push(page);
        } else {
            // Each reader counts the deltas it is sent, and the snapshots.
            readers.push(tokio::spawn(async move {
                let (mut texts, mut snapshots) = (0, 0);
                events_until(&mut page, &mut pending, |event| {
                    texts += usize::from(holds(event, "\"t\":\"text\""));
                    snapshots += usize::from(holds(event, "\"t\":\"snapshot\""));
                    holds(event, "the end")
                })
                .await;
                (texts, snapshots)
            }));
        }
    }

    let deltas = 100;
    let size = 5 * PAGE_BACKLOG / deltas;
    for n in 0..deltas {
        handle.send(Event::Say(format!("<{n}>{}", "x".repeat(size)))).await.expect("say");
    }
    handle.send(Event::Stop).await.expect("stop");
    while listed_state(&inspector).await != "Done" {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for reader in readers {
        let (texts, snapshots) = reader.await.expect("a reader");
        assert!(
            texts == deltas + 1 || snapshots > 0,
            "a page reading was sent {texts} deltas of {deltas} and no fresh snapshot"
        );
    }
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}
