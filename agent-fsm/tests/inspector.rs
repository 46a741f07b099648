//! The inspector's server over real HTTP on 127.0.0.1, without a browser:
//! the page and its assets are served from the binary, the updates stream
//! as server-sent events (a snapshot, then one message per change), the
//! approve and deny buttons send the view's events through the handle
//! once, and requests from elsewhere are refused. (The page itself, in
//! Chromium, is tested by the root package's `inspector_browser`.)

use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, Inspector, InspectorError, Shown};
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
        Open + Knock(_) => Open / Nothing,
        Open + Refuse => Closed / Nothing,
    }
}
use door::{Event, Machine, State};

type Handle = MachineHandle<Machine, String>;

const LIMIT: Duration = Duration::from_secs(10);

/// Greets with an output, the text the page streams.
struct Greeter;

impl Effects<Machine> for Greeter {
    type Output = String;

    fn perform(&mut self, action: door::Action, cx: &mut EffectContext<'_, Machine, String>) {
        if matches!(action, door::Action::Greet) {
            cx.output("hello ".to_owned());
        }
    }
}

fn agent() -> Handle {
    spawn(Machine::new(), Greeter, ExecutorConfig::new())
}

fn view() -> AgentView<Machine, String> {
    AgentView::new("front door").outputs(|text: &String| Some(Shown::TextDelta(text.clone()))).approvals(
        |state: &State| match state {
            State::Asking { who } => {
                Some(Approval { summary: format!("let {who} in?"), approve: Event::Allow, deny: Event::Refuse })
            }
            _ => None,
        },
    )
}

/// One HTTP/1.1 request with the inspector's cookie; the response's
/// status line and body (headers dropped; the body read to the end of the
/// connection).
async fn request(inspector: &Inspector, method: &str, path: &str, headers: &str) -> (String, String) {
    raw(inspector, method, path, &format!("Cookie: {}\r\n{headers}", inspector.cookie())).await
}

/// [`request`] without the cookie.
async fn raw(inspector: &Inspector, method: &str, path: &str, headers: &str) -> (String, String) {
    let (head, body) = exchange(inspector, method, path, headers).await;
    (head.lines().next().unwrap_or_default().to_owned(), body)
}

/// One HTTP/1.1 request as given; the response's head and body.
async fn exchange(inspector: &Inspector, method: &str, path: &str, headers: &str) -> (String, String) {
    let addr = inspector.local_addr();
    let mut stream = timeout(LIMIT, TcpStream::connect(addr)).await.expect("connect in time").expect("connect");
    let text = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}\r\n");
    stream.write_all(text.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    timeout(LIMIT, stream.read_to_end(&mut response)).await.expect("answer in time").expect("read");
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (head.to_owned(), body.to_owned())
}

/// Reads server-sent events from `stream` until one contains `needle`;
/// returns everything read.
async fn read_until(stream: &mut TcpStream, seen: &mut String, needle: &str) {
    let mut buffer = [0u8; 8192];
    while !seen.contains(needle) {
        let n = timeout(LIMIT, stream.read(&mut buffer)).await.expect("an update in time").expect("read");
        assert!(n > 0, "the stream ended before {needle}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
    }
}

/// The messages read so far (each `data:` line's JSON).
fn messages(seen: &str) -> Vec<serde_json::Value> {
    seen.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

async fn open_updates(inspector: &Inspector, id: usize) -> TcpStream {
    let addr = inspector.local_addr();
    let cookie = inspector.cookie();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let text = format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n");
    stream.write_all(text.as_bytes()).await.expect("write");
    stream
}

#[tokio::test]
async fn pages_and_assets_come_from_the_binary() {
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    assert!(inspector.url().starts_with("http://127.0.0.1:"));
    let (status, body) = request(&inspector, "GET", "/", "").await;
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("/assets/index.js"));
    let handle = agent();
    let id = inspector.attach(&handle, view()).await.expect("attach");
    let (status, body) = request(&inspector, "GET", &format!("/agents/{id}"), "").await;
    assert!(status.contains("200") && body.contains("/assets/mermaid.min.js") && body.contains("/assets/agent.js"));
    for asset in ["agent.js", "panels.js", "index.js", "inspector.css", "mermaid-LICENSE"] {
        let (status, body) = request(&inspector, "GET", &format!("/assets/{asset}"), "").await;
        assert!(status.contains("200") && !body.is_empty(), "{asset}: {status}");
        assert!(!body.contains("https://"), "{asset} names nothing off the machine");
    }
    let (status, _) = request(&inspector, "GET", "/assets/nothing.js", "").await;
    assert!(status.contains("404"), "{status}");
}

/// The page of an agent that is not attached, or of an id that is not a
/// number, is a 404 saying so, not the agent page, whose updates would
/// never come.
#[tokio::test]
async fn the_page_of_an_agent_not_attached_is_not_found() {
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let handle = agent();
    let id = inspector.attach(&handle, view()).await.expect("attach");
    for path in
        ["/agents/1", "/agents/abc", "/agents/-1", "/agents/1e3", "/agents/%30x", "/agents/99999999999999999999"]
    {
        let (status, body) = request(&inspector, "GET", path, "").await;
        assert!(status.contains("404"), "{path}: {status}");
        assert!(body.contains("No such agent") && !body.contains("agent.js"), "{path}: {body}");
    }
    let (status, _) = request(&inspector, "GET", &format!("/agents/{id}"), "").await;
    assert!(status.contains("200"), "{status}");
}

#[tokio::test]
async fn mermaid_is_served_compressed_and_whole() {
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let addr = inspector.local_addr();
    let cookie = inspector.cookie();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let text =
        format!("GET /assets/mermaid.min.js HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n");
    stream.write_all(text.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    timeout(LIMIT, stream.read_to_end(&mut response)).await.expect("in time").expect("read");
    let head_end = response.windows(4).position(|w| w == b"\r\n\r\n").expect("headers") + 4;
    let head = String::from_utf8_lossy(&response[..head_end]).to_lowercase();
    assert!(head.contains("content-encoding: gzip") && head.contains("text/javascript"), "{head}");
    // A gzip stream (magic bytes), as big as the vendored file.
    assert_eq!(&response[head_end..head_end + 2], &[0x1f, 0x8b]);
    assert!(response.len() - head_end > 700_000);
}

#[tokio::test]
async fn the_agents_updates_stream_and_its_approval_is_answered_once() {
    let handle = agent();
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view()).await.expect("attach");
    let token = inspector.url().split_once("?token=").map(|(_, t)| t.to_owned()).expect("the index's URL has a token");
    assert_eq!(inspector.agent_url(id), format!("http://{}/agents/0?token={token}", inspector.local_addr()));

    let mut updates = open_updates(&inspector, id).await;
    let mut seen = String::new();
    read_until(&mut updates, &mut seen, "\"t\":\"snapshot\"").await;
    assert!(seen.contains("text/event-stream"), "{seen}");
    assert!(seen.contains("\"state\":\"Closed\"") && seen.contains("\"machine\":\"Machine\""), "{seen}");
    assert!(seen.contains("stateDiagram-v2"), "the snapshot carries the diagram: {seen}");

    handle.send(Event::Knock("ann".into())).await.expect("knock");
    read_until(&mut updates, &mut seen, "\"summary\":\"let ann in?\"").await;
    assert!(seen.contains(r#""t":"hop","hop":{"n":1,"from":"Closed","event":"Knock","to":"Asking","action":"Greet""#));
    read_until(&mut updates, &mut seen, r#""t":"text","reset":true,"delta":"hello ""#).await;

    let (_, list) = request(&inspector, "GET", "/api/agents", "").await;
    assert!(list.contains("\"name\":\"front door\"") && list.contains("\"approval\":true"), "{list}");

    // Another approval's number, or no header: nothing sent.
    let click = "x-agent-fsm-inspector: 1\r\nContent-Length: 0\r\n";
    let (status, _) = request(&inspector, "POST", "/api/agents/0/approvals/2/approve", click).await;
    assert!(status.contains("409"), "{status}");
    let (status, _) = request(&inspector, "POST", "/api/agents/0/approvals/1/approve", "Content-Length: 0\r\n").await;
    assert!(status.contains("403"), "{status}");
    let (status, _) = request(&inspector, "POST", "/api/agents/0/approvals/1/maybe", click).await;
    assert!(status.contains("404"), "{status}");
    assert!(matches!(handle.state().await.expect("state"), State::Asking { .. }));

    let (status, _) = request(&inspector, "POST", "/api/agents/0/approvals/1/approve", click).await;
    assert!(status.contains("204"), "{status}");
    let (status, _) = request(&inspector, "POST", "/api/agents/0/approvals/1/deny", click).await;
    assert!(status.contains("409"), "answered once: {status}");
    handle.wait_idle().await.expect("idle");
    assert_eq!(handle.state().await.expect("state"), State::Open);
    read_until(&mut updates, &mut seen, r#""t":"approval","approval":null"#).await;
    read_until(&mut updates, &mut seen, r#""from":"Asking","event":"Allow","to":"Open""#).await;

    handle.shutdown().await.expect("shutdown");
    read_until(&mut updates, &mut seen, "\"t\":\"end\"").await;
    let (status, _) = request(&inspector, "POST", "/api/agents/0/approvals/1/approve", click).await;
    assert!(status.contains("409"), "{status}");
    let (status, _) = request(&inspector, "GET", "/api/agents/7/events", "").await;
    assert!(status.contains("404"), "{status}");
}

#[tokio::test]
async fn deny_sends_the_deny_event_and_a_late_page_sees_the_past() {
    let handle = agent();
    handle.send(Event::Knock("bob".into())).await.expect("knock");
    handle.wait_idle().await.expect("idle");
    // Attached after the first hop and with the approval already pending.
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view()).await.expect("attach");
    let mut updates = open_updates(&inspector, id).await;
    let mut seen = String::new();
    read_until(&mut updates, &mut seen, "\"t\":\"snapshot\"").await;
    let snapshot = &messages(&seen)[0];
    assert_eq!(snapshot["hops"][0]["from"], "Closed", "the history's hop: {snapshot}");
    assert_eq!(snapshot["hops"][0]["event"], "Knock");
    assert_eq!(snapshot["hops"][0]["to"], "Asking");
    assert_eq!(snapshot["approval"], serde_json::json!({ "id": 1, "summary": "let bob in?" }));
    assert_eq!(snapshot["state"], "Asking");
    let click = "x-agent-fsm-inspector: 1\r\nContent-Length: 0\r\n";
    let (status, _) = request(&inspector, "POST", "/api/agents/0/approvals/1/deny", click).await;
    assert!(status.contains("204"), "{status}");
    handle.wait_idle().await.expect("idle");
    assert_eq!(handle.state().await.expect("state"), State::Closed);
    read_until(&mut updates, &mut seen, r#""from":"Asking","event":"Refuse","to":"Closed""#).await;
}

#[tokio::test]
async fn requests_from_elsewhere_are_refused() {
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let addr = inspector.local_addr();
    let cookie = inspector.cookie();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(b"GET / HTTP/1.1\r\nHost: evil.example:80\r\nConnection: close\r\n\r\n").await.expect("write");
    let mut response = String::new();
    timeout(LIMIT, stream.read_to_string(&mut response)).await.expect("in time").expect("read");
    assert!(response.starts_with("HTTP/1.1 421"), "{response}");
    let port = addr.port();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let text = format!("GET / HTTP/1.1\r\nHost: localhost:{port}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n");
    stream.write_all(text.as_bytes()).await.expect("write");
    let mut response = String::new();
    timeout(LIMIT, stream.read_to_string(&mut response)).await.expect("in time").expect("read");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
}

/// Without the inspector's token nothing but the static assets is
/// answered: not the pages, not the agents' updates, not a click; nor with
/// a wrong token, or the token in another inspector's cookie. The URL's
/// token opens the page and sets the cookie, which then opens the rest.
#[tokio::test]
async fn nothing_but_the_assets_is_answered_without_the_token() {
    let handle = agent();
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view()).await.expect("attached");
    let other = Inspector::bind("127.0.0.1:0").await.expect("bind another");
    let (_, token) = inspector.url().split_once("?token=").map(|(u, t)| (u.to_owned(), t.to_owned())).expect("a token");
    assert_eq!(token.len(), 32, "128 bits, in hex");
    assert_ne!(other.url().split_once("?token=").map(|(_, t)| t.to_owned()), Some(token.clone()));
    let click = "X-Agent-Fsm-Inspector: 1\r\nContent-Length: 0\r\n";
    let wrong = format!("Cookie: {}\r\n", inspector.cookie().replace(&token, &"0".repeat(32)));
    // Two neighbouring digits swapped: as many bytes differ as agree, in
    // pairs whose differences cancel out if combined carelessly.
    let mut swapped = token.clone().into_bytes();
    let at = swapped.windows(2).position(|w| w[0] != w[1]).expect("a token of one repeated digit");
    swapped.swap(at, at + 1);
    let swapped = String::from_utf8(swapped).expect("hex");
    let near = format!("Cookie: {}\r\n", inspector.cookie().replace(&token, &swapped));
    let theirs = format!("Cookie: {}={token}\r\n", other.cookie().split_once('=').map(|(n, _)| n).unwrap_or_default());
    for headers in [String::new(), wrong, near, theirs, format!("Cookie: {}\r\n", other.cookie())] {
        for (method, path, extra) in [
            ("GET", "/", ""),
            ("GET", "/agents/0", ""),
            ("GET", "/api/agents", ""),
            ("GET", "/api/agents/0/events", ""),
            ("GET", "/?token=", ""),
            ("GET", "/?token=00000000000000000000000000000000", ""),
            ("POST", "/api/agents/0/approvals/1/approve", click),
        ] {
            let (status, _) = raw(&inspector, method, path, &format!("{headers}{extra}")).await;
            assert!(status.contains("401"), "{method} {path} with {headers:?}: {status}");
        }
    }
    let (head, _) = exchange(&inspector, "GET", "/assets/agent.js", "").await;
    assert!(head.starts_with("HTTP/1.1 200"), "the assets are public: {head}");
    assert!(!head.to_ascii_lowercase().contains("set-cookie"), "an asset gives no token away: {head}");
    // The URL's token opens the page and sets the cookie; the cookie opens
    // the rest (a click finds no approval pending: it got past the guard).
    let path = format!("/agents/{id}?token={token}");
    let (head, _) = exchange(&inspector, "GET", &path, "").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let set = head.lines().find_map(|l| l.strip_prefix("set-cookie: ")).expect("the cookie is set");
    assert_eq!(set, format!("{}; Path=/; HttpOnly; SameSite=Strict", inspector.cookie()));
    let (status, list) = request(&inspector, "GET", "/api/agents", "").await;
    assert!(status.contains("200") && list.contains("front door"), "{status} {list}");
    let (status, _) = request(&inspector, "POST", "/api/agents/0/approvals/1/approve", click).await;
    assert!(status.contains("409"), "{status}");
}

/// A page of another origin can only click through a preflight, since the
/// buttons' header is not one a browser sends across origins unasked; the
/// server grants none, so the browser never sends the click.
#[tokio::test]
async fn another_origin_is_granted_no_preflight() {
    let handle = agent();
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    inspector.attach(&handle, view()).await.expect("attach");
    let addr = inspector.local_addr();
    let cookie = inspector.cookie();
    for origin in ["http://evil.example", "http://localhost:1", "null"] {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let text = format!(
            "OPTIONS /api/agents/0/approvals/1/approve HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nOrigin: {origin}\r\n\
             Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: x-agent-fsm-inspector\r\n\
             Connection: close\r\n\r\n"
        );
        stream.write_all(text.as_bytes()).await.expect("write");
        let mut response = String::new();
        timeout(LIMIT, stream.read_to_string(&mut response)).await.expect("in time").expect("read");
        let head = response.split("\r\n\r\n").next().unwrap_or_default().to_ascii_lowercase();
        assert!(!head.starts_with("http/1.1 2"), "{origin}: {head}");
        assert!(!head.contains("access-control-allow"), "{origin}: {head}");
    }
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn only_loopback_addresses_and_stopped_agents_too() {
    match Inspector::bind("0.0.0.0:0").await {
        Err(InspectorError::NotLoopback(addr)) => assert!(addr.ip().is_unspecified()),
        other => panic!("expected NotLoopback, got {other:?}"),
    }
    // A stopped agent shows the history it stopped with, finished.
    let handle = agent();
    handle.send(Event::Knock("cy".into())).await.expect("knock");
    handle.shutdown().await.expect("shutdown");
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view()).await.expect("attach a stopped agent");
    let mut updates = open_updates(&inspector, id).await;
    let mut seen = String::new();
    read_until(&mut updates, &mut seen, "\"finished\":true").await;
    assert_eq!(messages(&seen)[0]["hops"][0]["to"], "Asking", "{seen}");
    // Stopping ends the server.
    let addr = inspector.local_addr();
    inspector.shutdown().await;
    assert!(TcpStream::connect(addr).await.is_err(), "nothing listens after shutdown");
}
