//! What the inspector's pages are sent of what a model can make as large
//! as it likes, over real HTTP on 127.0.0.1: an approval's summary (a
//! call's arguments, megabytes of a file to write) is sent cut to its
//! first [`SUMMARY_SHOWN`] bytes, saying how many more there are, with the
//! whole text at a link of its own; the approval answered is still the
//! whole call, so that two calls alike up to the cut are two approvals.
//! The tools in flight are sent the first [`TOOLS_SHOWN`] of them, and
//! how many more.

use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, Inspector, SUMMARY_SHOWN, Shown, TOOLS_SHOWN};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle, spawn};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

#[agent_fsm::state_machine(fallback = Nothing)]
mod gate {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum State {
        #[initial]
        Idle,
        Asking {
            command: String,
        },
        Running {
            command: String,
        },
    }
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        /// Asks approval for a command, in place of the one asked if any.
        Ask(String),
        Allow,
        Refuse,
        /// Starts this many tool calls, named by number.
        Launch(usize),
        /// The tool call of this number finished.
        Finish(usize),
    }
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
        Launch(usize),
        Finish(usize),
    }
    transitions! {
        Idle + Ask(command) => Asking { command } / Nothing,
        Asking { .. } + Ask(command) => Asking { command } / Nothing,
        Asking { command } + Allow => Running { command } / Nothing,
        Asking { .. } + Refuse => Idle / Nothing,
        Running { .. } + Refuse => Idle / Nothing,
        Idle + Launch(n) => Idle / Launch(n),
        Idle + Finish(n) => Idle / Finish(n),
    }
}
use gate::{Event, Machine, State};

const LIMIT: Duration = Duration::from_secs(30);

/// A tool call started (its number) or finished.
#[derive(Debug, Clone)]
enum Call {
    Started(usize),
    Finished(usize),
}

struct Caller;

impl Effects<Machine> for Caller {
    type Output = Call;

    fn perform(&mut self, action: gate::Action, cx: &mut EffectContext<'_, Machine, Call>) {
        match action {
            gate::Action::Launch(n) => (0..n).for_each(|k| cx.output(Call::Started(k))),
            gate::Action::Finish(k) => cx.output(Call::Finished(k)),
            gate::Action::Nothing => {}
        }
    }
}

fn view() -> AgentView<Machine, Call> {
    AgentView::new("gate")
        .approvals(|state: &State| match state {
            State::Asking { command } => {
                Some(Approval { summary: format!("run {command}"), approve: Event::Allow, deny: Event::Refuse })
            }
            _ => None,
        })
        .outputs(|call: &Call| {
            Some(match call {
                // A label as long as the page shows one.
                Call::Started(k) => {
                    Shown::ToolStarted { id: k.to_string(), label: format!("call {k} {}", "a".repeat(4000)) }
                }
                Call::Finished(k) => Shown::ToolFinished { id: k.to_string() },
            })
        })
}

fn agent() -> MachineHandle<Machine, Call> {
    // The inspector's subscription keeps a thousand calls started at once.
    spawn(Machine::new(), Caller, ExecutorConfig::new().notification_capacity(4096))
}

/// An open page's update stream: what it sent so far, and how much of
/// that was read as messages.
struct Page {
    stream: TcpStream,
    seen: String,
    read: usize,
}

impl Page {
    async fn open(inspector: &Inspector, id: usize) -> Self {
        let addr = inspector.local_addr();
        let mut stream = timeout(LIMIT, TcpStream::connect(addr)).await.expect("connect in time").expect("connect");
        let events =
            format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\n\r\n", inspector.cookie());
        stream.write_all(events.as_bytes()).await.expect("write");
        Self { stream, seen: String::new(), read: 0 }
    }

    /// The next message for which `wanted` holds, skipping the others,
    /// within [`LIMIT`] (keep-alives come meanwhile).
    async fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> (Value, usize) {
        timeout(LIMIT, self.next_such(wanted)).await.expect("the message in time")
    }

    async fn next_such(&mut self, wanted: impl Fn(&Value) -> bool) -> (Value, usize) {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            while let Some(end) = self.seen[self.read..].find("\n\n") {
                let event = &self.seen[self.read..self.read + end];
                self.read += end + 2;
                let Some(data) = event.lines().find_map(|line| line.strip_prefix("data: ")) else {
                    continue;
                };
                let message: Value = serde_json::from_str(data).unwrap_or_else(|_| panic!("not JSON: {data:.200}"));
                if wanted(&message) {
                    return (message, data.len());
                }
            }
            let n = self.stream.read(&mut buffer).await.expect("read");
            assert!(n > 0, "the stream ended");
            self.seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    }
}

/// `method path`'s status line and body.
async fn request(inspector: &Inspector, method: &str, path: &str) -> (String, String) {
    let addr = inspector.local_addr();
    let mut stream = timeout(LIMIT, TcpStream::connect(addr)).await.expect("connect in time").expect("connect");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\nx-agent-fsm-inspector: 1\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n",
        inspector.cookie()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    timeout(LIMIT, stream.read_to_end(&mut response)).await.expect("answer in time").expect("read");
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (head.lines().next().unwrap_or_default().to_owned(), body.to_owned())
}

#[tokio::test]
async fn a_long_summary_is_sent_cut_and_the_whole_call_is_what_is_answered() {
    let handle = agent();
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view()).await.expect("attach");
    let mut page = Page::open(&inspector, id).await;
    page.until(|m| m["t"] == "snapshot").await;

    // Two calls alike in their first megabytes, but not in their end.
    let body = "x".repeat(3 << 20);
    let first = format!("write_file notes.txt {body} # safe");
    let second = format!("write_file notes.txt {body}\nrm -rf ~");
    handle.send(Event::Ask(first.clone())).await.expect("ask");
    let (update, size) = page.until(|m| m["t"] == "approval").await;
    let shown = update["approval"]["summary"].as_str().expect("a summary");
    assert!(size < SUMMARY_SHOWN + 1024, "the update is {size} bytes");
    assert!(shown.len() <= SUMMARY_SHOWN && format!("run {first}").starts_with(shown), "{:.100}", shown);
    let cut = update["approval"]["cut"].as_u64().expect("how many bytes were cut");
    assert_eq!(cut as usize + shown.len(), "run ".len() + first.len(), "the page is told how much more there is");
    let one = update["approval"]["id"].as_u64().expect("an id");

    handle.send(Event::Ask(second.clone())).await.expect("ask again");
    let (update, _) = page.until(|m| m["t"] == "approval").await;
    assert_eq!(update["approval"]["summary"].as_str(), Some(shown), "the same start shown");
    let two = update["approval"]["id"].as_u64().expect("an id");
    assert_ne!(one, two, "a call that differs past the cut is another approval");
    // A page that opens now is sent the cut summary too.
    let (snapshot, size) = Page::open(&inspector, id).await.until(|m| m["t"] == "snapshot").await;
    assert!(size < 64 * 1024, "the snapshot is {size} bytes");
    assert_eq!(snapshot["approval"]["id"].as_u64(), Some(two));

    // The whole text is at the link, for the approval pending only; a
    // click on the one replaced does not approve the other.
    let (status, whole) = request(&inspector, "GET", &format!("/api/agents/{id}/approvals/{two}/summary")).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(whole, format!("run {second}"), "the whole call");
    let (status, _) = request(&inspector, "GET", &format!("/api/agents/{id}/approvals/{one}/summary")).await;
    assert_eq!(status, "HTTP/1.1 409 Conflict");
    let (status, _) = request(&inspector, "POST", &format!("/api/agents/{id}/approvals/{one}/approve")).await;
    assert_eq!(status, "HTTP/1.1 409 Conflict");
    let state = handle.inspect(|m| m.state().clone()).await.expect("state");
    assert!(matches!(state, State::Asking { .. }), "nothing was approved");
    let (status, _) = request(&inspector, "POST", &format!("/api/agents/{id}/approvals/{two}/approve")).await;
    assert_eq!(status, "HTTP/1.1 204 No Content");
    handle.wait_idle().await.expect("idle");
    let state = handle.inspect(|m| m.state().clone()).await.expect("state");
    assert_eq!(state, State::Running { command: second }, "the call approved is the whole one");
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn tools_past_those_shown_are_counted_not_sent() {
    let handle = agent();
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let id = inspector.attach(&handle, view()).await.expect("attach");
    let mut page = Page::open(&inspector, id).await;
    page.until(|m| m["t"] == "snapshot").await;

    let calls = 10 * TOOLS_SHOWN;
    handle.send(Event::Launch(calls)).await.expect("launch");
    let more = (calls - TOOLS_SHOWN) as u64;
    let (update, _) = page.until(|m| m["t"] == "tool" && m["more"].as_u64() == Some(more)).await;
    assert!(update["tool"].is_null(), "a call past those shown is not sent: {:.200}", update.to_string());

    let (snapshot, size) = Page::open(&inspector, id).await.until(|m| m["t"] == "snapshot").await;
    let tools = snapshot["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), TOOLS_SHOWN, "the snapshot is {size} bytes");
    assert_eq!(snapshot["tools_more"].as_u64(), Some(more), "the page is told how many more");
    assert_eq!(tools[0]["id"], 1, "the first started are shown");

    // One shown finishes: the first not shown takes its place.
    handle.send(Event::Finish(0)).await.expect("finish");
    let (update, _) = page.until(|m| m["t"] == "tool_done").await;
    assert_eq!(update["id"], 1);
    assert_eq!(update["next"]["id"], TOOLS_SHOWN as u64 + 1);
    assert_eq!(update["more"].as_u64(), Some(more - 1));
    // One not shown finishes: only the count changes.
    handle.send(Event::Finish(calls - 1)).await.expect("finish");
    let (update, _) = page.until(|m| m["t"] == "tool_done").await;
    assert_eq!((update["id"].as_u64(), update["next"].is_null()), (Some(0), true));
    assert_eq!(update["more"].as_u64(), Some(more - 2));
    inspector.shutdown().await;
    handle.shutdown().await.expect("shutdown");
}
