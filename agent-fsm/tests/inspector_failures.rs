//! Failures the inspector's pages must show rather than hide, over real
//! HTTP on 127.0.0.1: an agent whose worker fails (its page says that it
//! failed and why, not only that it finished, as it would for an agent
//! that stopped normally), and a view whose closure panics on a state or
//! an output (the page says so and goes on following the agent, and an
//! approval it could not read again is withdrawn, not left answerable).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, Inspector, Shown};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle, from_fn, spawn};
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
    let cookie = inspector.cookie();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let text = format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n");
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
        Greet(String),
    }
    transitions! {
        Closed + Knock(who) => Asking { who } / Greet(who.clone()),
        Asking + Allow => Open / Nothing,
        Asking + Refuse => Closed / Nothing,
        Open + Refuse => Closed / Nothing,
    }
}

/// Greets whoever knocks, the output the page reads.
struct Greeter;

impl Effects<door::Machine> for Greeter {
    type Output = String;

    fn perform(&mut self, action: door::Action, cx: &mut EffectContext<'_, door::Machine, String>) {
        if let door::Action::Greet(who) = action {
            cx.output(who);
        }
    }
}

/// Reads a page's updates until `done` holds of the messages read so far.
async fn read_until(stream: &mut TcpStream, seen: &mut String, done: impl Fn(&[serde_json::Value]) -> bool) {
    let mut buffer = [0u8; 8192];
    loop {
        let messages: Vec<serde_json::Value> = seen
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect();
        if done(&messages) {
            return;
        }
        let n = timeout(LIMIT, stream.read(&mut buffer)).await.expect("an update in time").expect("read");
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
    }
}

#[tokio::test]
async fn a_view_that_panics_is_reported_and_the_page_goes_on() {
    let handle: MachineHandle<door::Machine, String> = spawn(door::Machine::new(), Greeter, ExecutorConfig::new());
    // The view's own bugs: reading a greeting for "mallory", and reading
    // any state once armed.
    let armed = Arc::new(AtomicBool::new(false));
    let view = {
        let armed = Arc::clone(&armed);
        AgentView::new("door")
            .outputs(|who: &String| {
                assert_ne!(who, "mallory", "the outputs reading's own bug");
                Some(Shown::Note(format!("greeted {who}")))
            })
            .approvals(move |state: &door::State| {
                assert!(!armed.load(Ordering::SeqCst), "the approvals reading's own bug");
                match state {
                    door::State::Asking { who } => Some(Approval {
                        summary: format!("let {who} in?"),
                        approve: door::Event::Allow,
                        deny: door::Event::Refuse,
                    }),
                    _ => None,
                }
            })
    };
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view).await.expect("attach");
    let addr = inspector.local_addr();
    let cookie = inspector.cookie();
    let mut page = TcpStream::connect(addr).await.expect("connect");
    page.write_all(
        format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n").as_bytes(),
    )
    .await
    .expect("write");
    let mut seen = String::new();
    let has = |t: &'static str, needle: &'static str| {
        move |messages: &[serde_json::Value]| messages.iter().any(|m| m["t"] == t && m.to_string().contains(needle))
    };

    // A greeting the outputs reading panics on: noted, and the page goes on.
    handle.send(door::Event::Knock("mallory".into())).await.expect("knock");
    read_until(&mut page, &mut seen, has("note", "the outputs reading's own bug")).await;
    read_until(&mut page, &mut seen, has("approval", "let mallory in?")).await;
    handle.send(door::Event::Refuse).await.expect("refuse");
    handle.send(door::Event::Knock("ann".into())).await.expect("knock");
    read_until(&mut page, &mut seen, has("approval", "let ann in?")).await;

    // A state the approvals reading panics on: noted, and the approval it
    // could not read again is withdrawn.
    armed.store(true, Ordering::SeqCst);
    handle.send(door::Event::Refuse).await.expect("refuse");
    read_until(&mut page, &mut seen, has("note", "the approvals reading's own bug")).await;
    read_until(&mut page, &mut seen, |m| m.last().is_some_and(|m| m["t"] == "approval" && m["approval"].is_null()))
        .await;
    let mut click = TcpStream::connect(addr).await.expect("connect");
    let text = format!(
        "POST /api/agents/{id}/approvals/2/approve HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\
         x-agent-fsm-inspector: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    click.write_all(text.as_bytes()).await.expect("write");
    let mut answer = String::new();
    timeout(LIMIT, click.read_to_string(&mut answer)).await.expect("in time").expect("read");
    assert!(answer.starts_with("HTTP/1.1 409"), "the withdrawn approval is not answered: {answer}");

    // And the page still follows the agent.
    armed.store(false, Ordering::SeqCst);
    handle.send(door::Event::Knock("bob".into())).await.expect("knock");
    read_until(&mut page, &mut seen, has("approval", "let bob in?")).await;
    handle.shutdown().await.expect("shutdown");
}
