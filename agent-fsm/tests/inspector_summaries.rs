//! What the inspector's page is sent of a pending approval, over real HTTP
//! on 127.0.0.1: a summary holding what a model wrote is sent as written,
//! every character that hides itself or changes how the text around it is
//! shown (a right-to-left override, zero-width characters, variation
//! selectors, Unicode tags)
//! spelled out as `<U+XXXX>`, so that the user approves what the call
//! says, not what it was made to look like.

use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, Inspector};
use agent_fsm::runtime::{ExecutorConfig, MachineHandle, from_fn, spawn};
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
    }
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        Ask(String),
        Allow,
        Refuse,
    }
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
    }
    transitions! {
        Idle + Ask(command) => Asking { command } / Nothing,
        Asking + Allow => Idle / Nothing,
        Asking + Refuse => Idle / Nothing,
    }
}

const LIMIT: Duration = Duration::from_secs(10);

/// The summary shown for `command`, as the page receives it.
async fn summary_sent(command: &str) -> String {
    let handle: MachineHandle<gate::Machine, ()> =
        spawn(gate::Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new());
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("inspector");
    let view = AgentView::new("gate").approvals(|state: &gate::State| match state {
        gate::State::Asking { command } => Some(Approval {
            summary: format!("run_command {command}"),
            approve: gate::Event::Allow,
            deny: gate::Event::Refuse,
        }),
        gate::State::Idle => None,
    });
    let id = inspector.attach(&handle, view).await.expect("attached");
    handle.send(gate::Event::Ask(command.to_owned())).await.expect("asked");
    handle.wait_idle().await.expect("idle");

    let addr = inspector.local_addr();
    let cookie = inspector.cookie();
    let mut stream = timeout(LIMIT, TcpStream::connect(addr)).await.expect("connect in time").expect("connect");
    let request = format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut seen = String::new();
    let mut buffer = [0u8; 8192];
    let summary = loop {
        let n = timeout(LIMIT, stream.read(&mut buffer)).await.expect("an update in time").expect("read");
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
        let found = seen
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
            .find_map(|message| message["approval"]["summary"].as_str().map(str::to_owned));
        if let Some(summary) = found {
            break summary;
        }
    };
    handle.shutdown().await.expect("shutdown");
    inspector.shutdown().await;
    summary
}

#[tokio::test]
async fn a_summary_is_sent_with_its_hidden_characters_spelled_out() {
    // Shown as is, the override turns what follows it around on the page:
    // the command would read as if it ended with a file name, `sl.txt`.
    let spoofed = summary_sent("rm -rf ~ #\u{202E}txt.ls").await;
    assert_eq!(spoofed, "run_command rm -rf ~ #<U+202E>txt.ls");
    let hidden = summary_sent("ls\u{200B}\u{2066}\u{E0041}\u{1B}[2K\u{FEFF}").await;
    assert_eq!(hidden, "run_command ls<U+200B><U+2066><U+E0041><U+001B>[2K<U+FEFF>");
    // Variation selectors draw nothing after a letter: a file name with
    // them is another file than the one it reads as, and any number of
    // them can carry a message no one sees.
    let selected = summary_sent("cat notes\u{FE01}.txt\u{E0100}\u{E01EF} \u{1BCA0}\u{1D173}").await;
    assert_eq!(selected, "run_command cat notes<U+FE01>.txt<U+E0100><U+E01EF> <U+1BCA0><U+1D173>");
    // Text in any script, line breaks and tabs are shown as they are.
    let plain = "écrire «bonjour» — 書く\n\tnext line 🙂";
    assert_eq!(summary_sent(plain).await, format!("run_command {plain}"));
}
