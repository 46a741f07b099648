//! The inspector's approval after its subscription fell behind, over real
//! HTTP on 127.0.0.1: a step whose outputs overflow the agent's
//! notification log drops its own state, here the one that replaced the
//! pending request with another. The page must not go on offering the
//! replaced approval, whose approve button would now answer a request the
//! user never saw; nor go on showing the state that step left.

use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, Inspector, Shown};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle, spawn};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
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
        /// Someone asks, in place of the one asking if any.
        Rush(String),
        Allow,
        Refuse,
    }
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
        Shout,
    }
    transitions! {
        Closed + Knock(who) => Asking { who } / Nothing,
        Closed + Rush(who) => Asking { who } / Shout,
        Asking { .. } + Rush(who) => Asking { who } / Shout,
        Asking { .. } + Allow => Open / Nothing,
        Asking { .. } + Refuse => Closed / Nothing,
        Open + Refuse => Closed / Nothing,
    }
}
use door::{Event, Machine, State};

const LIMIT: Duration = Duration::from_secs(10);

/// The agent's notification log keeps this many.
const CAPACITY: usize = 4;

/// Shouts many more outputs in one step than the log keeps.
struct Shouter;

impl Effects<Machine> for Shouter {
    type Output = String;

    fn perform(&mut self, action: door::Action, cx: &mut EffectContext<'_, Machine, String>) {
        if matches!(action, door::Action::Shout) {
            for n in 0..10 * CAPACITY {
                cx.output(format!("shout {n}"));
            }
        }
    }
}

/// An approval that names who asks, but whose approve event does not (as
/// the module docs' example): only the summary tells two requests apart.
fn view() -> AgentView<Machine, String> {
    AgentView::new("door").outputs(|text: &String| Some(Shown::TextDelta(text.clone()))).approvals(|state: &State| {
        match state {
            State::Asking { who } => {
                Some(Approval { summary: format!("let {who} in?"), approve: Event::Allow, deny: Event::Refuse })
            }
            _ => None,
        }
    })
}

/// Reads the page's updates until `needle` is in them.
async fn read_until(stream: &mut TcpStream, seen: &mut String, needle: &str) {
    let mut buffer = [0u8; 8192];
    while !seen.contains(needle) {
        let n = timeout(LIMIT, stream.read(&mut buffer))
            .await
            .unwrap_or_else(|_| panic!("no {needle} in time: {seen}"))
            .expect("read");
        assert!(n > 0, "the stream ended before {needle}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
    }
}

/// Opens agent `id`'s update stream, as its page does; the stream and
/// what it sent up to its first snapshot.
async fn open_page(inspector: &Inspector, id: usize) -> (TcpStream, String) {
    let addr = inspector.local_addr();
    let mut page = timeout(LIMIT, TcpStream::connect(addr)).await.expect("connect in time").expect("connect");
    let events =
        format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\n\r\n", inspector.cookie());
    page.write_all(events.as_bytes()).await.expect("write");
    let mut seen = String::new();
    read_until(&mut page, &mut seen, "\"t\":\"snapshot\"").await;
    (page, seen)
}

/// One click on approval `approval`; the status line.
async fn approve(inspector: &Inspector, id: usize, approval: u64) -> String {
    let addr = inspector.local_addr();
    let mut stream = timeout(LIMIT, TcpStream::connect(addr)).await.expect("connect in time").expect("connect");
    let request = format!(
        "POST /api/agents/{id}/approvals/{approval}/approve HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\n\
         x-agent-fsm-inspector: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        inspector.cookie()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    timeout(LIMIT, stream.read_to_end(&mut response)).await.expect("answer in time").expect("read");
    String::from_utf8_lossy(&response).lines().next().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn an_approval_replaced_while_the_inspector_fell_behind_is_not_offered() {
    let handle: MachineHandle<Machine, String> =
        spawn(Machine::new(), Shouter, ExecutorConfig::new().notification_capacity(CAPACITY));
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view()).await.expect("attach");
    let (mut page, mut seen) = open_page(&inspector, id).await;

    handle.send(Event::Knock("alice".into())).await.expect("knock");
    read_until(&mut page, &mut seen, "\"summary\":\"let alice in?\"").await;
    // Mallory's request replaces Alice's in a step whose shouts push its
    // own state out of the log.
    handle.send(Event::Rush("mallory".into())).await.expect("rush");
    read_until(&mut page, &mut seen, "the inspector missed").await;
    assert!(seen.contains("\"summary\":\"let mallory in?\""), "the page was not shown the new request: {seen}");

    // A click on Alice's approval, sent by a page that had not yet seen
    // the change, does not let Mallory in.
    assert_eq!(approve(&inspector, id, 1).await, "HTTP/1.1 409 Conflict");
    let state = handle.inspect(|m| m.state().clone()).await.expect("state");
    assert_eq!(state, State::Asking { who: "mallory".into() });
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}

/// A hop dropped from the log with the step's outputs does not leave the
/// page on the state the agent left: the page is sent the state it is in
/// now, as is the index.
#[tokio::test]
async fn a_hop_missed_while_the_inspector_fell_behind_does_not_leave_the_page_behind() {
    let handle: MachineHandle<Machine, String> =
        spawn(Machine::new(), Shouter, ExecutorConfig::new().notification_capacity(CAPACITY));
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view()).await.expect("attach");
    let addr = inspector.local_addr();
    let (mut page, mut seen) = open_page(&inspector, id).await;
    let first = seen.len();

    handle.send(Event::Rush("mallory".into())).await.expect("rush");
    read_until(&mut page, &mut seen, "the inspector missed").await;
    let resent = seen[first..]
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .find(|message| message["t"] == "snapshot")
        .unwrap_or_else(|| panic!("no fresh snapshot: {}", &seen[first..]));
    assert_eq!(resent["state"], "Asking", "the page shows the state the agent is in");

    let mut index = timeout(LIMIT, TcpStream::connect(addr)).await.expect("connect in time").expect("connect");
    let list = format!(
        "GET /api/agents HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
        inspector.cookie()
    );
    index.write_all(list.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    timeout(LIMIT, index.read_to_end(&mut response)).await.expect("answer in time").expect("read");
    let response = String::from_utf8_lossy(&response);
    assert!(response.contains("\"state\":\"Asking\""), "{response}");
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}
