//! A tool's label and a note as the page receives them, over real HTTP on
//! 127.0.0.1: both often hold what a model wrote (a file name, an error a
//! server sent back), and are sent as written, as an approval's summary
//! is: a right-to-left override must not make the tools in flight read
//! `rm -rf ~` as something else, nor an escape sequence hide in a note.

use std::time::Duration;

use agent_fsm::inspector::{AgentView, Inspector, Shown};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle, spawn};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

#[agent_fsm::state_machine(fallback = Nothing)]
mod talker {
    #[states]
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum State {
        #[initial]
        Talking,
    }
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        Say(String),
    }
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
        Speak(String),
    }
    transitions! {
        Talking + Say(text) => Talking / Speak(text),
    }
}
use talker::{Event, Machine};

const LIMIT: Duration = Duration::from_secs(30);

struct Speaker;

impl Effects<Machine> for Speaker {
    type Output = String;

    fn perform(&mut self, action: talker::Action, cx: &mut EffectContext<'_, Machine, String>) {
        if let talker::Action::Speak(text) = action {
            cx.output(text);
        }
    }
}

/// The label and the note the page is sent for `text`.
async fn shown(text: &str) -> (String, String) {
    let handle: MachineHandle<Machine, String> = spawn(Machine::new(), Speaker, ExecutorConfig::new());
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    // Each output is a tool started and, the second time, a note.
    let view = AgentView::new("talker").outputs(|text: &String| {
        Some(match text.strip_prefix("note ") {
            Some(note) => Shown::Note(note.to_owned()),
            None => Shown::ToolStarted { id: "1".into(), label: text.clone() },
        })
    });
    let id = inspector.attach(&handle, view).await.expect("attach");
    handle.send(Event::Say(text.to_owned())).await.expect("say");
    handle.send(Event::Say(format!("note {text}"))).await.expect("say");
    handle.wait_idle().await.expect("idle");

    let addr = inspector.local_addr();
    let mut stream = timeout(LIMIT, TcpStream::connect(addr)).await.expect("connect in time").expect("connect");
    let request =
        format!("GET /api/agents/{id}/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\n\r\n", inspector.cookie());
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut seen = String::new();
    let mut buffer = [0u8; 8192];
    let snapshot = loop {
        let n = timeout(LIMIT, stream.read(&mut buffer)).await.expect("an update in time").expect("read");
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
        let found = seen
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|message| message["t"] == "snapshot");
        if let Some(snapshot) = found {
            break snapshot;
        }
    };
    handle.shutdown().await.expect("shutdown");
    inspector.shutdown().await;
    let label = snapshot["tools"][0]["label"].as_str().expect("a label").to_owned();
    let note = snapshot["notes"][0]["text"].as_str().expect("a note").to_owned();
    (label, note)
}

#[tokio::test]
async fn a_label_and_a_note_are_sent_with_their_hidden_characters_spelled_out() {
    // Shown as is, the override turns what follows it around: the call
    // would read as a write to a text file.
    let (label, note) = shown("write_file \u{202E}txt.hs.evil\u{202C} \u{1B}[8mhidden").await;
    let written = "write_file <U+202E>txt.hs.evil<U+202C> <U+001B>[8mhidden";
    assert_eq!(label, written);
    assert_eq!(note, written);
    let plain = "read_file «notes» — 書く.txt";
    assert_eq!(shown(plain).await, (plain.to_owned(), plain.to_owned()), "text in any script as it is");
}
