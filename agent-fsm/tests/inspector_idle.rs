//! The inspector's idle limit, over real sockets on 127.0.0.1 with tokio's
//! clock paused, so that the limit's 30 s pass at once: a connection the
//! inspector has sent nothing for that long is closed, whether it never
//! sent a request, sends one a byte at a time, was left open after its
//! answer or stopped reading one, and gives its place back; an open page,
//! sent keep-alives, and a click waiting for a busy agent are not closed,
//! however long they last.
//!
//! The clock is held still ([`hold_clock`]) while a test waits on a socket
//! and moved on by hand: tokio would otherwise move it to the next timer
//! whenever every task waits, even for bytes the kernel delivers a moment
//! late on a loaded machine.

use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, IDLE_LIMIT, Inspector, MAX_CONNECTIONS};
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
        Asking,
        Open,
    }
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        Knock,
        Allow,
        Refuse,
        Waited,
    }
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
        Ask,
    }
    transitions! {
        Closed + Knock => Asking / Ask,
        Asking + Waited => Asking / Nothing,
        Asking + Allow => Open / Nothing,
        Asking + Refuse => Closed / Nothing,
        Open + Refuse => Closed / Nothing,
    }
}
use door::{Event, Machine, State};

/// Bounds each wait in the paused clock's time: several idle limits.
const LIMIT: Duration = Duration::from_secs(600);

/// How long, in real time, the clock is held at most: a test broken so
/// that it waits forever on a socket fails once this has passed.
const HELD: Duration = Duration::from_secs(20);

/// On asking, holds every event sent to the agent back for `busy` (a
/// pause, as a retry's backoff does): a click's event waits for room in
/// the inbox as long as that.
struct Asker {
    busy: Duration,
}

impl Effects<Machine> for Asker {
    type Output = ();

    fn perform(&mut self, action: door::Action, cx: &mut EffectContext<'_, Machine, ()>) {
        if matches!(action, door::Action::Ask) {
            cx.pause(self.busy, Event::Waited);
        }
    }
}

fn agent(busy: Duration) -> MachineHandle<Machine, ()> {
    spawn(Machine::new(), Asker { busy }, ExecutorConfig::new().inbox_capacity(1))
}

fn view() -> AgentView<Machine, ()> {
    AgentView::new("door").approvals(|state: &State| {
        (*state == State::Asking).then(|| Approval {
            summary: "let them in?".into(),
            approve: Event::Allow,
            deny: Event::Refuse,
        })
    })
}

/// Keeps tokio's paused clock from moving on by itself until dropped (or
/// for [`HELD`] of real time at most): tokio does not advance the clock
/// while a blocking task runs. Time then passes by
/// [`advance`](tokio::time::advance) only.
struct Held {
    _release: std::sync::mpsc::Sender<()>,
}

fn hold_clock() -> Held {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    tokio::task::spawn_blocking(move || {
        let _ = rx.recv_timeout(HELD);
    });
    Held { _release: tx }
}

/// A connection that sends `text`.
async fn send(inspector: &Inspector, text: &str) -> TcpStream {
    let mut stream =
        timeout(LIMIT, TcpStream::connect(inspector.local_addr())).await.expect("in time").expect("connect");
    stream.write_all(text.as_bytes()).await.expect("write");
    stream
}

/// What the server sent on `stream` until it closed it (or reset it).
async fn until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    timeout(LIMIT, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await
    .expect("the connection is closed");
    seen
}

/// Whether `stream` has nothing to read now: no answer, no end. (A check
/// that can only err towards passing: the kernel may be late to say.)
async fn quiet(stream: &TcpStream) -> bool {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    matches!(stream.try_read(&mut [0u8; 1]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// Connections that never send a request, holding every place, are
/// closed after the idle limit, and their places given back: the next
/// connection, waiting in the kernel's queue, is then answered, though
/// their client has not closed any of them.
#[tokio::test(start_paused = true)]
async fn silent_connections_are_closed_after_the_idle_limit() {
    let held = hold_clock();
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let addr = inspector.local_addr();
    let mut silent = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        silent.push(timeout(LIMIT, TcpStream::connect(addr)).await.expect("in time").expect("connect"));
    }
    let asset = format!("GET /assets/index.js HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let mut next = send(&inspector, &asset).await;
    tokio::time::advance(IDLE_LIMIT - Duration::from_secs(1)).await;
    assert!(quiet(&next).await, "answered before the limit, every place held");
    assert!(quiet(&silent[0]).await, "a silent connection closed before the limit");

    // Well past the limit: the server may have taken some of them a
    // moment after the clock first moved.
    tokio::time::advance(IDLE_LIMIT).await;
    let answer = String::from_utf8_lossy(&until_closed(&mut next).await).into_owned();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    for (n, stream) in silent.iter_mut().enumerate() {
        let sent = until_closed(stream).await;
        assert!(sent.is_empty(), "silent connection {n} was sent {sent:?}");
    }
    drop(held);
    inspector.shutdown().await;
}

/// A request sent a byte every second, its headers never ending, is
/// closed once the inspector has sent nothing for the idle limit: bytes
/// coming in do not keep a connection open, only an answer going out.
#[tokio::test(start_paused = true)]
async fn a_request_that_comes_a_byte_at_a_time_is_closed_after_the_idle_limit() {
    let held = hold_clock();
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let addr = inspector.local_addr();
    let mut stream = send(&inspector, &format!("GET / HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ")).await;
    for second in 1..IDLE_LIMIT.as_secs() {
        tokio::time::advance(Duration::from_secs(1)).await;
        stream.write_all(b"a").await.expect("write");
        assert!(quiet(&stream).await, "closed after {second} s");
    }
    // Well past the limit: the server may have taken the connection a
    // moment after the clock first moved.
    tokio::time::advance(IDLE_LIMIT).await;
    let sent = until_closed(&mut stream).await;
    assert!(sent.is_empty(), "answered: {}", String::from_utf8_lossy(&sent));
    drop(held);
    inspector.shutdown().await;
}

/// A client that asks for Mermaid's 0.8 MB sixteen times over (pipelined)
/// and stops reading, its socket full, is closed once nothing more could
/// be sent it for the idle limit: the rest of the answers are never sent.
#[tokio::test(start_paused = true)]
async fn a_client_that_stops_reading_is_closed_after_the_idle_limit() {
    const ASKED: usize = 16;
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let (addr, cookie) = (inspector.local_addr(), inspector.cookie());
    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("buffer size");
    let mut stream = timeout(LIMIT, socket.connect(addr)).await.expect("in time").expect("connect");
    // With the cookie: a connection without the token is closed after its
    // first answer.
    let asset = format!("GET /assets/mermaid.min.js HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n");
    stream.write_all(asset.repeat(ASKED).as_bytes()).await.expect("write");
    // The clock moves on by itself here, once the server waits for room
    // in the socket: a late wake-up from the kernel can only move the
    // server's last write later, which three limits leave room for.
    tokio::time::sleep(3 * IDLE_LIMIT).await;

    let held = hold_clock();
    let answer = until_closed(&mut stream).await;
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("an answer");
    let length: usize = String::from_utf8_lossy(&answer[..end])
        .lines()
        .find_map(|line| line.strip_prefix("content-length: ")?.parse().ok())
        .expect("a length");
    assert!(answer.len() < ASKED * length, "every answer was sent: {} bytes", answer.len());
    drop(held);
    inspector.shutdown().await;
}

/// An open page's update stream, its agent quiet, stays open past several
/// idle limits, sent a keep-alive more often than the limit, and still
/// carries the next hop; a connection left open beside it after its
/// answer is closed.
#[tokio::test(start_paused = true)]
async fn an_open_page_stays_open_while_an_idle_connection_is_closed() {
    let held = hold_clock();
    let handle = agent(Duration::ZERO);
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view()).await.expect("attach");
    let (addr, cookie) = (inspector.local_addr(), inspector.cookie());
    let events = format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n");
    let mut page = send(&inspector, &events).await;
    let mut seen = String::new();
    let mut buffer = [0u8; 4096];
    // Reads the page's stream until `end` is in what it sent since `from`.
    async fn read_until(page: &mut TcpStream, seen: &mut String, buffer: &mut [u8], from: usize, end: &str) {
        while !seen[from..].contains(end) {
            let n = timeout(LIMIT, page.read(buffer)).await.expect("in time").expect("read");
            assert!(n > 0, "the page's stream was closed: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    }
    read_until(&mut page, &mut seen, &mut buffer, 0, "\"t\":\"snapshot\"").await;
    // A request answered, its connection kept alive (HTTP/1.1's default;
    // with the cookie, as one without the token is closed at once).
    let favicon = format!("GET /favicon.ico HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n");
    let mut idle = send(&inspector, &favicon).await;
    let n = timeout(LIMIT, idle.read(&mut buffer)).await.expect("answered").expect("read");
    assert!(String::from_utf8_lossy(&buffer[..n]).starts_with("HTTP/1.1 204"), "{}", String::from_utf8_lossy(&buffer));

    // Four limits, in steps a little longer than the keep-alive's
    // interval: a keep-alive in each.
    let step = IDLE_LIMIT / 2 + Duration::from_secs(1);
    for _ in 0..8 {
        tokio::time::advance(step).await;
        let from = seen.len();
        read_until(&mut page, &mut seen, &mut buffer, from, ":\n\n").await;
    }
    let sent = until_closed(&mut idle).await;
    assert!(sent.is_empty(), "the idle connection was sent {sent:?}");

    handle.send(Event::Knock).await.expect("knock");
    let from = seen.len();
    read_until(&mut page, &mut seen, &mut buffer, from, "\"t\":\"hop\"").await;
    drop(held);
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}

/// A click answered only once its busy agent takes the event (its inbox
/// held full for three idle limits) gets its answer: a request being
/// answered is not idle, though nothing is sent meanwhile.
#[tokio::test(start_paused = true)]
async fn a_click_waiting_for_a_busy_agent_is_answered_after_the_idle_limit() {
    let held = hold_clock();
    let handle = agent(3 * IDLE_LIMIT);
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view()).await.expect("attach");
    let (addr, cookie) = (inspector.local_addr(), inspector.cookie());
    handle.send(Event::Knock).await.expect("knock");
    // The pause holds this one (refused in `Asking`) in the one-place
    // inbox: the click's event waits for room.
    handle.send(Event::Knock).await.expect("fills the inbox");
    let list = format!("GET /api/agents HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n");
    while !String::from_utf8_lossy(&until_closed(&mut send(&inspector, &list).await).await)
        .contains("\"approval\":true")
    {
        tokio::task::yield_now().await;
    }

    let click = format!(
        "POST /api/agents/{id}/approvals/1/approve HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\
         x-agent-fsm-inspector: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let mut click = send(&inspector, &click).await;
    for _ in 0..2 {
        tokio::time::advance(IDLE_LIMIT + Duration::from_secs(1)).await;
        assert!(quiet(&click).await, "the click was answered or closed while the agent was busy");
    }
    // Past the pause, which ends three limits after the knock.
    tokio::time::advance(IDLE_LIMIT).await;
    let answer = String::from_utf8_lossy(&until_closed(&mut click).await).into_owned();
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer:?}");
    handle.wait_idle().await.expect("idle");
    assert_eq!(handle.state().await.expect("state"), State::Open, "the click's event reached the agent");
    drop(held);
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}
