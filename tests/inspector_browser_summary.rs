//! An approval's summary in a real browser (headless Chromium over the
//! DevTools protocol): the page shows it as written, its line breaks and
//! runs of spaces kept. A shell command `echo hi` with `rm -rf ~` on the
//! next line must not read as one `echo hi rm -rf ~`, which is how an
//! HTML paragraph lays out a line break.
//!
//! Without a browser (`$CHROME`, else /usr/bin/chromium) the test says so
//! in one line and passes.

#[path = "support/cdp.rs"]
#[allow(dead_code, reason = "screenshots, clicks and the request list serve the other browser tests")]
mod cdp;

use std::path::PathBuf;
use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, Inspector};
use agent_fsm::runtime::{ExecutorConfig, MachineHandle, from_fn, spawn};
use tokio::time::{Instant, sleep, timeout};

/// A gate that asks approval for a command.
#[agent_fsm::state_machine(fallback = Nothing)]
mod gate {
    /// Whether a command waits for approval.
    #[states]
    #[derive(Debug, Clone)]
    pub(crate) enum State {
        /// Nothing asked.
        #[initial]
        Idle,
        /// `command` waits for approval.
        Asking {
            /// What would run.
            command: String,
        },
    }

    /// What the gate is told.
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        /// Run this command, once approved.
        Ask(String),
        /// Approved.
        Allow,
        /// Denied.
        Refuse,
    }

    /// Nothing to do outside.
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        /// Nothing.
        Nothing,
    }

    transitions! {
        Idle + Ask(command) => Asking { command } / Nothing,
        Asking { .. } + Allow => Idle / Nothing,
        Asking { .. } + Refuse => Idle / Nothing,
    }
}

/// What a model asked to run: a harmless line, then another command.
const COMMAND: &str = "echo hi\nrm -rf ~   # two  spaces";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_is_laid_out_with_its_line_breaks() {
    let Some(chrome) = cdp::find() else {
        println!("skipped: no Chromium (set CHROME or install /usr/bin/chromium)");
        return;
    };
    timeout(Duration::from_secs(60), run(chrome)).await.expect("the browser test timed out");
}

async fn run(chrome: PathBuf) {
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
    handle.send(gate::Event::Ask(COMMAND.to_owned())).await.expect("asked");
    let mut browser = cdp::Browser::launch(&chrome).await.expect("browser");
    browser.open(&inspector.agent_url(id)).await.expect("open the page");

    // What the page lays out, as a reader sees it (`innerText` follows the
    // layout: a line break the paragraph collapses reads as a space).
    let shown = "(() => { const box = document.getElementById('approval'); \
                 return box && !box.hidden ? document.getElementById('approval-summary').innerText : null; })()";
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let text = browser.eval(shown).await.expect("evaluate");
        if let Some(text) = text.as_str() {
            break text.to_owned();
        }
        assert!(Instant::now() < deadline, "the approval was never shown");
        sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(text, format!("run_command {COMMAND}"), "the summary is shown as written");
    handle.shutdown().await.expect("shutdown");
    inspector.shutdown().await;
}
