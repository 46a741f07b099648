//! The inspector against clients that misbehave, over real sockets on
//! 127.0.0.1: a page that stops reading its updates, a request whose
//! headers never end, connections that never send one, agents attached at
//! the same time, and a click that waits for a busy agent. Neither may
//! keep the inspector from stopping, hold more than its share of the
//! process's descriptors, give two agents one page, nor take an approval
//! without sending it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, Inspector, Shown};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle, spawn};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::timeout;

#[agent_fsm::state_machine(fallback = Nothing)]
mod door {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum State {
        #[initial]
        Closed,
        Asking {
            who: String,
        },
        Open,
    }
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        Knock(String),
        Allow,
        Refuse,
    }
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
        Greet,
    }
    transitions! {
        Closed + Knock(who) => Asking { who } / Greet,
        Asking + Allow => Open / Nothing,
        Asking + Refuse => Closed / Nothing,
        Open + Knock(_) => Open / Greet,
        Open + Refuse => Closed / Nothing,
    }
}
use door::{Event, Machine, State};

type Handle = MachineHandle<Machine, String>;

const LIMIT: Duration = Duration::from_secs(10);

/// How much each greeting streams: a few of them fill a socket.
const GREETING: usize = 256 * 1024;

/// Greets with a long output, the text the page streams.
struct Greeter;

impl Effects<Machine> for Greeter {
    type Output = String;

    fn perform(&mut self, action: door::Action, cx: &mut EffectContext<'_, Machine, String>) {
        if matches!(action, door::Action::Greet) {
            cx.output("x".repeat(GREETING));
        }
    }
}

fn agent() -> Handle {
    spawn(Machine::new(), Greeter, ExecutorConfig::new())
}

fn asking(state: &State) -> Option<Approval<Event>> {
    match state {
        State::Asking { who } => {
            Some(Approval { summary: format!("let {who} in?"), approve: Event::Allow, deny: Event::Refuse })
        }
        _ => None,
    }
}

fn view(name: &str) -> AgentView<Machine, String> {
    AgentView::new(name).outputs(|text: &String| Some(Shown::TextDelta(text.clone()))).approvals(asking)
}

/// A client that reads nothing, with a small receive buffer, so that what
/// the server sends soon fills the socket.
async fn deaf_client(inspector: &Inspector, request: &str) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("buffer size");
    let mut stream = timeout(LIMIT, socket.connect(inspector.local_addr())).await.expect("in time").expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    stream
}

/// Stopping the inspector ends every connection in bounded time, even a
/// page that stopped reading its updates (its socket full, the end of its
/// stream cannot be written) and a request whose headers never end; the
/// server does not keep answering them after `shutdown` returned.
#[tokio::test]
async fn shutdown_ends_the_connections_of_clients_that_stall() {
    let handle = agent();
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view("door")).await.expect("attach");
    let addr = inspector.local_addr();
    let cookie = inspector.cookie();

    let page = format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n");
    let mut deaf = deaf_client(&inspector, &page).await;
    let mut endless =
        deaf_client(&inspector, &format!("GET / HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nX-More: ")).await;

    // Megabytes of streamed text, more than the page's socket holds.
    handle.send(Event::Knock("ann".into())).await.expect("knock");
    handle.send(Event::Allow).await.expect("allow");
    for _ in 0..40 {
        handle.send(Event::Knock("ann".into())).await.expect("knock");
    }
    handle.wait_idle().await.expect("idle");
    // A page that reads gets everything up to the last hop: the server
    // has written the deaf page's updates as far as its socket took them.
    let mut reader = TcpStream::connect(addr).await.expect("connect");
    reader.write_all(page.as_bytes()).await.expect("write");
    let mut seen = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    while !String::from_utf8_lossy(&seen).contains("\"hop_count\":42") {
        let n = timeout(LIMIT, reader.read(&mut buffer)).await.expect("a snapshot in time").expect("read");
        assert!(n > 0, "the stream ended");
        seen.extend_from_slice(&buffer[..n]);
    }

    timeout(LIMIT, inspector.shutdown()).await.expect("the inspector stops in bounded time");
    // Both stalled connections were closed by the server: reading them
    // to the end finishes (the deaf page's backlog, then the end).
    for (name, stream) in [("the deaf page", &mut deaf), ("the endless request", &mut endless)] {
        let drained = timeout(LIMIT, async {
            loop {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(drained.is_ok(), "{name}: the connection is still open after shutdown");
    }
    handle.shutdown().await.expect("shutdown");
}

/// Agents attached at the same time get distinct ids, each the index of
/// its own page: one attach still reading the agent's pending approval
/// (the view's closure, run while attaching) when another completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_attached_at_the_same_time_get_their_own_ids() {
    let inspector = Arc::new(Inspector::bind("127.0.0.1:0").await.expect("bind"));
    let (slow_handle, quick_handle) = (agent(), agent());
    let (attached, wait_for_quick) = mpsc::channel::<()>();
    let wait_for_quick = Mutex::new(wait_for_quick);
    let (reading, now_reading) = tokio::sync::oneshot::channel::<()>();
    let reading = Mutex::new(Some(reading));
    let first = AtomicBool::new(true);
    // The slow agent's view blocks its first read of the state until the
    // quick agent is attached (handing its runtime thread's other tasks
    // over, so that the quick attach runs meanwhile).
    let slow_view = AgentView::<Machine, String>::new("slow").approvals(move |state: &State| {
        if first.swap(false, Ordering::SeqCst) {
            if let Some(reading) = reading.lock().expect("lock").take() {
                let _ = reading.send(());
            }
            tokio::task::block_in_place(|| {
                let _ = wait_for_quick.lock().expect("lock").recv_timeout(LIMIT);
            });
        }
        asking(state)
    });
    let quick = {
        let (inspector, quick_handle) = (Arc::clone(&inspector), quick_handle.clone());
        tokio::spawn(async move {
            timeout(LIMIT, now_reading).await.expect("the slow attach reads the state").expect("signal");
            let id = inspector.attach(&quick_handle, view("quick")).await.expect("attach the quick one");
            attached.send(()).expect("signal");
            id
        })
    };
    let slow_id = timeout(LIMIT, inspector.attach(&slow_handle, slow_view)).await.expect("in time").expect("attach");
    let quick_id = timeout(LIMIT, quick).await.expect("in time").expect("the quick attach");
    assert_ne!(slow_id, quick_id, "two agents, one id");

    // Each id's page is its own agent's.
    let (_, list) = get(&inspector, "/api/agents").await;
    let list: serde_json::Value = serde_json::from_str(&list).expect("json");
    for (id, name) in [(slow_id, "slow"), (quick_id, "quick")] {
        let line = list.as_array().and_then(|l| l.iter().find(|a| a["name"] == name)).expect("listed");
        assert_eq!(line["id"], id, "{list}");
        let (addr, cookie) = (inspector.local_addr(), inspector.cookie());
        let page = format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n");
        let mut stream = TcpStream::connect(inspector.local_addr()).await.expect("connect");
        stream.write_all(page.as_bytes()).await.expect("write");
        let mut seen = String::new();
        let mut buffer = [0u8; 8192];
        while !seen.contains("\"t\":\"snapshot\"") {
            let n = timeout(LIMIT, stream.read(&mut buffer)).await.expect("in time").expect("read");
            assert!(n > 0, "the stream ended: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
        assert!(seen.contains(&format!("\"name\":\"{name}\"")), "page {id} shows another agent: {seen}");
    }
    slow_handle.shutdown().await.expect("shutdown");
    quick_handle.shutdown().await.expect("shutdown");
}

/// One GET; its status line and body.
async fn get(inspector: &Inspector, path: &str) -> (String, String) {
    let addr = inspector.local_addr();
    let cookie = inspector.cookie();
    let mut stream = timeout(LIMIT, TcpStream::connect(addr)).await.expect("connect in time").expect("connect");
    let text = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n");
    stream.write_all(text.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    timeout(LIMIT, stream.read_to_end(&mut response)).await.expect("answer in time").expect("read");
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (head.lines().next().unwrap_or_default().to_owned(), body.to_owned())
}

/// A click the server took is sent even when its request goes away while
/// the agent's inbox is full: here the inspector stops (cutting the
/// request) before the busy agent takes the event. The approval then
/// cannot be clicked again, so dropping the event would leave the agent
/// waiting for an answer it was given.
#[tokio::test]
async fn a_click_taken_reaches_the_agent_after_its_request_is_gone() {
    // The agent runs on a thread of its own, so that the test can hold its
    // worker (in an `inspect`) while its one-slot inbox is full.
    let (handle_tx, handle_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let agent_thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            let handle: Handle = spawn(Machine::new(), Greeter, ExecutorConfig::new().inbox_capacity(1));
            let _ = handle_tx.send(handle);
            let _ = stop_rx.await;
        });
    });
    let handle = timeout(LIMIT, handle_rx).await.expect("in time").expect("the agent");
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view("door")).await.expect("attach");
    handle.send(Event::Knock("ann".into())).await.expect("knock");
    handle.wait_idle().await.expect("idle");
    timeout(LIMIT, async {
        while !get(&inspector, "/api/agents").await.1.contains("\"approval\":true") {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the approval is shown");

    // The worker held, its inbox full.
    let (holding_tx, holding_rx) = tokio::sync::oneshot::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let held = {
        let handle = handle.clone();
        tokio::spawn(async move {
            handle
                .inspect(move |_| {
                    let _ = holding_tx.send(());
                    let _ = release_rx.recv_timeout(LIMIT);
                })
                .await
        })
    };
    timeout(LIMIT, holding_rx).await.expect("in time").expect("the worker is held");
    handle.send(Event::Knock("bob".into())).await.expect("fills the inbox");

    // Two clicks: one is taken, its event waiting for room in the inbox
    // (no answer yet); the other is refused, whichever came first.
    let addr = inspector.local_addr();
    let cookie = inspector.cookie();
    let text = format!(
        "POST /api/agents/{id}/approvals/1/approve HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\
         x-agent-fsm-inspector: 1\r\nContent-Length: 0\r\n\r\n"
    );
    let mut clicks = Vec::new();
    for _ in 0..2 {
        let mut click = TcpStream::connect(addr).await.expect("connect");
        click.write_all(text.as_bytes()).await.expect("write");
        clicks.push(click);
    }
    let (first, second) = clicks.split_at_mut(1);
    let (mut a, mut b) = ([0u8; 512], [0u8; 512]);
    let answer = timeout(LIMIT, async {
        tokio::select! {
            n = first[0].read(&mut a) => String::from_utf8_lossy(&a[..n.expect("read")]).into_owned(),
            n = second[0].read(&mut b) => String::from_utf8_lossy(&b[..n.expect("read")]).into_owned(),
        }
    })
    .await
    .expect("one click is answered");
    assert!(answer.starts_with("HTTP/1.1 409"), "taken once: {answer}");

    // The inspector stops, cutting the waiting request; then the agent
    // takes its inbox.
    timeout(LIMIT, inspector.shutdown()).await.expect("the inspector stops");
    release_tx.send(()).expect("release");
    timeout(LIMIT, held).await.expect("in time").expect("task").expect("inspect");
    timeout(LIMIT, async {
        loop {
            handle.wait_idle().await.expect("idle");
            if handle.state().await.expect("state") == State::Open {
                break;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the approval taken by the click reaches the agent");
    drop(clicks);
    handle.shutdown().await.expect("shutdown");
    let _ = stop_tx.send(());
    agent_thread.join().expect("the agent's thread");
}

/// A state that streams call after call without leaving it (the door's
/// `Open + Knock => Open / Greet`) never resets the page's text: the
/// inspector keeps its end only, so that neither its memory nor what each
/// page that opens is sent grows with everything ever streamed there.
#[tokio::test]
async fn the_text_of_a_state_that_keeps_streaming_is_bounded() {
    let handle = agent();
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view("door")).await.expect("attach");
    handle.send(Event::Knock("ann".into())).await.expect("knock");
    handle.send(Event::Allow).await.expect("allow");
    for _ in 0..8 {
        handle.send(Event::Knock("ann".into())).await.expect("knock");
    }
    handle.wait_idle().await.expect("idle");
    let addr = inspector.local_addr();
    let cookie = inspector.cookie();
    let snapshot = timeout(LIMIT, async {
        loop {
            let mut page = TcpStream::connect(addr).await.expect("connect");
            let text = format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n");
            page.write_all(text.as_bytes()).await.expect("write");
            let mut seen = Vec::new();
            let mut buffer = vec![0u8; 64 * 1024];
            // The snapshot is the first event: one `data:` line.
            let line = loop {
                let n = page.read(&mut buffer).await.expect("read");
                assert!(n > 0, "the stream ended");
                seen.extend_from_slice(&buffer[..n]);
                let text = String::from_utf8_lossy(&seen);
                if let Some(start) = text.find("data: ")
                    && let Some(end) = text[start..].find('\n')
                {
                    break text[start + 6..start + end].to_owned();
                }
            };
            let snapshot: serde_json::Value = serde_json::from_str(&line).expect("json");
            if snapshot["hop_count"] == 10 {
                break snapshot;
            }
        }
    })
    .await
    .expect("a snapshot after the last hop");
    let text = snapshot["text"].as_str().expect("text");
    assert!(text.len() <= GREETING, "{} bytes kept of {} streamed", text.len(), 8 * GREETING);
    assert!(text.len() >= 32 * 1024 && text.chars().all(|c| c == 'x'), "the end of the text is kept");
    handle.shutdown().await.expect("shutdown");
}

/// Connections that never send a request, opened by any local process,
/// hold at most `MAX_CONNECTIONS` descriptors of the agent's process: the
/// next connection is not accepted (so not answered) while they are all
/// open, and is answered as soon as one of them closes.
#[tokio::test]
async fn silent_connections_hold_no_more_than_the_limit() {
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let addr = inspector.local_addr();
    let mut silent = Vec::new();
    for _ in 0..agent_fsm::inspector::MAX_CONNECTIONS {
        silent.push(timeout(LIMIT, TcpStream::connect(addr)).await.expect("in time").expect("connect"));
    }
    // The kernel completes the handshake of the next one; the inspector
    // does not take it.
    let mut next = timeout(LIMIT, TcpStream::connect(addr)).await.expect("in time").expect("connect");
    let asset = format!("GET /assets/index.js HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    next.write_all(asset.as_bytes()).await.expect("write");
    let mut first = [0u8; 16];
    assert!(
        timeout(Duration::from_millis(300), next.read(&mut first)).await.is_err(),
        "a connection past the limit was answered"
    );
    drop(silent.pop());
    let mut answer = Vec::new();
    timeout(LIMIT, next.read_to_end(&mut answer)).await.expect("answered once a connection closed").expect("read");
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
    inspector.shutdown().await;
}
