//! The inspector against clients that do not know its token, and pages of
//! other origins, over real sockets on 127.0.0.1: a client without the
//! token cannot keep a connection once answered (so it cannot hold the
//! inspector's places for as long as it likes, asking again within each
//! idle limit), no page is shown inside another page's frame (a page
//! on another port of 127.0.0.1 is the same site: the browser sends it
//! the inspector's cookie), and a model that streams megabytes at once,
//! or calls a tool with megabytes of arguments, costs each open page no
//! more than what is shown of it.

use std::time::Duration;

use agent_fsm::inspector::{AgentView, Inspector, MAX_CONNECTIONS, Shown};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle, from_fn, spawn};
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
        Open,
    }
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        Push,
    }
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
    }
    transitions! {
        Closed + Push => Open / Nothing,
        Open + Push => Closed / Nothing,
    }
}
use door::Machine;

/// Bounds each wait: well under the inspector's 30 s idle limit, so that a
/// connection the inspector leaves open fails the test rather than being
/// closed as idle.
const LIMIT: Duration = Duration::from_secs(10);

fn agent() -> MachineHandle<Machine, ()> {
    spawn(Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new())
}

/// Sends `request` (its head, without the final blank line) on a new
/// connection, keep-alive, and reads until the server closes it: the whole
/// response. Fails if the server keeps the connection open.
async fn answered_then_closed(inspector: &Inspector, request: &str) -> String {
    let mut stream =
        timeout(LIMIT, TcpStream::connect(inspector.local_addr())).await.expect("connect in time").expect("connect");
    stream.write_all(format!("{request}\r\n\r\n").as_bytes()).await.expect("write");
    let mut response = Vec::new();
    timeout(LIMIT, stream.read_to_end(&mut response))
        .await
        .unwrap_or_else(|_| {
            panic!("the connection was kept open after: {}", String::from_utf8_lossy(&response));
        })
        .expect("read");
    String::from_utf8_lossy(&response).into_owned()
}

/// A request without the token, refused or for an asset, and one for
/// another host, close their connection once answered, though they asked
/// to keep it: a client that cannot read the agents keeps no place.
#[tokio::test]
async fn a_client_without_the_token_keeps_no_connection() {
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let host = inspector.local_addr();
    let refused = answered_then_closed(&inspector, &format!("GET /api/agents HTTP/1.1\r\nHost: {host}")).await;
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let asset = answered_then_closed(&inspector, &format!("GET /favicon.ico HTTP/1.1\r\nHost: {host}")).await;
    assert!(asset.starts_with("HTTP/1.1 204"), "{asset}");
    let elsewhere = answered_then_closed(&inspector, "GET /assets/index.js HTTP/1.1\r\nHost: example.com").await;
    assert!(elsewhere.starts_with("HTTP/1.1 421"), "{elsewhere}");
    let cookie = format!("{}=0123", inspector.cookie().split('=').next().unwrap_or_default());
    let wrong = answered_then_closed(&inspector, &format!("GET / HTTP/1.1\r\nHost: {host}\r\nCookie: {cookie}")).await;
    assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
    inspector.shutdown().await;
}

/// As many clients as the inspector has places, each answered once
/// without the token, leave room for the page: its request is answered at
/// once, not after the idle limit frees a place.
#[tokio::test]
async fn clients_without_the_token_leave_room_for_the_page() {
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let handle = agent();
    handle.send(door::Event::Push).await.expect("send");
    let id = inspector.attach(&handle, AgentView::new("door")).await.expect("attach");
    let host = inspector.local_addr();
    // Each keeps its socket, as a client asking again within the idle limit
    // would.
    let mut held = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        let mut stream = timeout(LIMIT, TcpStream::connect(host)).await.expect("connect in time").expect("connect");
        let request = format!("GET /assets/inspector.css HTTP/1.1\r\nHost: {host}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        held.push(stream);
    }
    let mut page = timeout(LIMIT, TcpStream::connect(host)).await.expect("connect in time").expect("connect");
    let request = format!(
        "GET /api/agents HTTP/1.1\r\nHost: {host}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
        inspector.cookie()
    );
    page.write_all(request.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    timeout(LIMIT, page.read_to_end(&mut response))
        .await
        .expect("the page is answered while the others' sockets stay open")
        .expect("read");
    let response = String::from_utf8_lossy(&response);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains(&format!("\"id\":{id}")) && response.contains("\"state\":\"Open\""), "{response}");
    drop(held);
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}

/// Every page, and the answers the token brings, say that no other page
/// may frame them: a page on another port, which the browser sends the
/// cookie, cannot show the agent's page under its own and steer a click
/// onto the approve button.
#[tokio::test]
async fn no_page_may_be_framed() {
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let handle = agent();
    let id = inspector.attach(&handle, AgentView::new("door")).await.expect("attach");
    let host = inspector.local_addr();
    let cookie = inspector.cookie();
    let by_token = inspector.agent_url(id);
    let by_token = by_token.split_once(&host.to_string()).map_or("", |(_, path)| path).to_owned();
    for (path, with) in [
        ("/".to_owned(), format!("Cookie: {cookie}")),
        (format!("/agents/{id}"), format!("Cookie: {cookie}")),
        (by_token, String::new()),
        ("/api/agents".to_owned(), format!("Cookie: {cookie}")),
    ] {
        let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n{with}");
        let response = answered_then_closed(&inspector, &request).await;
        let head = response.split_once("\r\n\r\n").map_or(response.as_str(), |(head, _)| head).to_lowercase();
        assert!(head.starts_with("http/1.1 200"), "{path}: {head}");
        assert!(head.contains("\r\nx-frame-options: deny\r\n"), "{path}: {head}");
        assert!(head.contains("\r\ncontent-security-policy: frame-ancestors 'none'\r\n"), "{path}: {head}");
    }
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}

/// How much one output streams at once: a model's single delta can be
/// this big (an event of the model's stream is read up to 16 MiB).
const FLOOD: usize = 4 << 20;

/// Streams [`FLOOD`] bytes in one output on each push, ending with a mark.
struct Flood;

impl Effects<Machine> for Flood {
    type Output = String;

    fn perform(&mut self, _: door::Action, cx: &mut EffectContext<'_, Machine, String>) {
        cx.output(format!("{}the end", "x".repeat(FLOOD)));
    }
}

/// The first message of type `t` an open page of agent `id` is sent
/// after `push` is pushed.
async fn first_update(
    inspector: &Inspector,
    id: usize,
    push: &MachineHandle<Machine, String>,
    t: &str,
) -> serde_json::Value {
    let host = inspector.local_addr();
    let mut page = timeout(LIMIT, TcpStream::connect(host)).await.expect("connect in time").expect("connect");
    let events =
        format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {host}\r\nCookie: {}\r\n\r\n", inspector.cookie());
    page.write_all(events.as_bytes()).await.expect("write");
    push.send(door::Event::Push).await.expect("push");
    let mut seen = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    timeout(LIMIT, async {
        loop {
            let n = page.read(&mut buffer).await.expect("read");
            assert!(n > 0, "the stream ended");
            seen.extend_from_slice(&buffer[..n]);
            let received = String::from_utf8_lossy(&seen);
            let found = received
                .lines()
                .filter_map(|line| line.strip_prefix("data: "))
                .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
                .find(|message| message["t"] == t);
            if let Some(message) = found {
                break message;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {t} update in time"))
}

/// A tool whose label holds megabytes (a call's arguments: a whole file
/// to write), and a note as long, reach an open page as their first 4 KiB
/// and a count of the rest.
#[tokio::test]
async fn a_huge_tool_label_or_note_reaches_the_page_clipped() {
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let tool: MachineHandle<Machine, String> = spawn(Machine::new(), Flood, ExecutorConfig::new());
    let view = AgentView::new("tool")
        .outputs(|text: &String| Some(Shown::ToolStarted { id: "1".into(), label: format!("write_file {text}") }));
    let id = inspector.attach(&tool, view).await.expect("attach");
    let update = first_update(&inspector, id, &tool, "tool").await;
    let label = update["tool"]["label"].as_str().expect("a label");
    let more = format!("… ({} bytes more)", "write_file ".len() + FLOOD + "the end".len() - 4096);
    assert!(label.len() <= 4096 + more.len(), "a label of {} bytes was sent", label.len());
    assert!(label.starts_with("write_file xxx") && label.ends_with(&more), "its start and how much more");

    let noter: MachineHandle<Machine, String> = spawn(Machine::new(), Flood, ExecutorConfig::new());
    let view = AgentView::new("noter").outputs(|text: &String| Some(Shown::Note(text.clone())));
    let id = inspector.attach(&noter, view).await.expect("attach");
    let update = first_update(&inspector, id, &noter, "note").await;
    let note = update["text"].as_str().expect("a note");
    assert!(note.len() <= 4096 + more.len(), "a note of {} bytes was sent", note.len());
    assert!(note.starts_with("xxx") && note.ends_with("bytes more)"), "its start and how much more");
    inspector.shutdown().await;
    tool.shutdown().await.expect("shutdown");
    noter.shutdown().await.expect("shutdown");
}

/// A tool named by its arguments (as a view that uses the label as the
/// call's id does) is sent to the pages by number: its megabytes of id
/// are neither sent when it starts nor when it finishes.
#[tokio::test]
async fn a_tool_named_by_its_arguments_is_sent_by_number() {
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let handle: MachineHandle<Machine, String> = spawn(Machine::new(), Flood, ExecutorConfig::new());
    // The first output starts the call, the next one finishes it.
    let started = std::sync::atomic::AtomicBool::new(false);
    let view = AgentView::new("tool").outputs(move |text: &String| {
        Some(if started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            Shown::ToolFinished { id: text.clone() }
        } else {
            Shown::ToolStarted { id: text.clone(), label: text.clone() }
        })
    });
    let id = inspector.attach(&handle, view).await.expect("attach");
    let update = first_update(&inspector, id, &handle, "tool").await;
    let number = update["tool"]["id"].as_u64().unwrap_or_else(|| panic!("not a number: {:.80}", update.to_string()));
    let update = first_update(&inspector, id, &handle, "tool_done").await;
    assert_eq!(update["id"].as_u64(), Some(number), "{:.80}", update.to_string());
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}

/// One delta of megabytes reaches an open page as its end only, in an
/// update of the size of the text the page keeps: what the open pages'
/// queue of updates holds stays bounded, however much a model streams.
#[tokio::test]
async fn a_huge_delta_reaches_the_page_as_its_end() {
    let handle: MachineHandle<Machine, String> = spawn(Machine::new(), Flood, ExecutorConfig::new());
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let view = AgentView::new("door").outputs(|text: &String| Some(Shown::TextDelta(text.clone())));
    let id = inspector.attach(&handle, view).await.expect("attach");
    let text = first_update(&inspector, id, &handle, "text").await;
    let delta = text["delta"].as_str().expect("a delta");
    assert!(delta.len() <= 64 * 1024, "a delta of {} bytes was sent", delta.len());
    assert!(delta.len() >= 32 * 1024 && delta.ends_with("xthe end"), "the end is sent");
    assert_eq!(text["reset"], true, "it replaces the text shown");
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}
