//! What the page says of what it was not sent, in a real browser
//! (headless Chromium over the DevTools protocol): an approval whose
//! summary is longer than the inspector sends says how many bytes were
//! left out and links to the whole text, which the link serves; the tools
//! in flight past those sent are counted on the page.
//!
//! Without a browser (`$CHROME`, else /usr/bin/chromium) the test says so
//! in one line and passes.

#[path = "support/cdp.rs"]
#[allow(dead_code, reason = "screenshots, clicks and the request list serve the other browser tests")]
mod cdp;

use std::path::PathBuf;
use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, Inspector, SUMMARY_SHOWN, Shown, TOOLS_SHOWN};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle, spawn};
use serde_json::Value;
use tokio::time::{Instant, sleep, timeout};

/// A gate that starts tool calls, then asks approval for a command.
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
        /// Start this many tool calls, then ask approval for this command.
        Ask(usize, String),
        /// Approved.
        Allow,
        /// Denied.
        Refuse,
    }

    /// What the gate does outside.
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        /// Nothing.
        Nothing,
        /// Starts this many tool calls.
        Launch(usize),
    }

    transitions! {
        Idle + Ask(calls, command) => Asking { command } / Launch(calls),
        Asking { .. } + Allow => Idle / Nothing,
        Asking { .. } + Refuse => Idle / Nothing,
    }
}

/// Starts the tool calls, numbered from 0: they never finish.
struct Launcher;

impl Effects<gate::Machine> for Launcher {
    type Output = usize;

    fn perform(&mut self, action: gate::Action, cx: &mut EffectContext<'_, gate::Machine, usize>) {
        if let gate::Action::Launch(calls) = action {
            (0..calls).for_each(|k| cx.output(k));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_says_what_it_was_not_sent() {
    let Some(chrome) = cdp::find() else {
        println!("skipped: no Chromium (set CHROME or install /usr/bin/chromium)");
        return;
    };
    timeout(Duration::from_secs(60), run(chrome)).await.expect("the browser test timed out");
}

async fn run(chrome: PathBuf) {
    let handle: MachineHandle<gate::Machine, usize> =
        spawn(gate::Machine::new(), Launcher, ExecutorConfig::new().notification_capacity(1024));
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("inspector");
    let view = AgentView::new("gate")
        .outputs(|k: &usize| Some(Shown::ToolStarted { id: k.to_string(), label: format!("call {k}") }))
        .approvals(|state: &gate::State| match state {
            gate::State::Asking { command } => Some(Approval {
                summary: format!("write_file {command}"),
                approve: gate::Event::Allow,
                deny: gate::Event::Refuse,
            }),
            gate::State::Idle => None,
        });
    let id = inspector.attach(&handle, view).await.expect("attached");
    let mut browser = cdp::Browser::launch(&chrome).await.expect("browser");
    browser.open(&inspector.agent_url(id)).await.expect("open the page");
    // The page opens first: it is sent the changes, then its snapshot.
    let deadline = Instant::now() + Duration::from_secs(30);
    while browser.eval("typeof agent === 'object' && agent.state !== undefined").await.expect("evaluate")
        != Value::Bool(true)
    {
        assert!(Instant::now() < deadline, "the page never opened");
        sleep(Duration::from_millis(50)).await;
    }
    let command = format!("notes.txt {}", "x".repeat(4 * SUMMARY_SHOWN));
    let calls = TOOLS_SHOWN + 50;
    handle.send(gate::Event::Ask(calls, command.clone())).await.expect("asked");

    let shown = "(() => { const cut = document.getElementById('approval-cut'); \
                 const more = document.getElementById('tools-more'); \
                 if (!cut || cut.hidden || !more) return null; \
                 return { cut: document.getElementById('approval-more').innerText, \
                          link: document.getElementById('approval-all').href, \
                          summary: document.getElementById('approval-summary').innerText.length, \
                          tools: document.querySelectorAll('#tools li.tool').length, more: more.innerText }; })()";
    let page = loop {
        let page = browser.eval(shown).await.expect("evaluate");
        if page.is_object() {
            break page;
        }
        assert!(Instant::now() < deadline, "the cut was never shown");
        sleep(Duration::from_millis(50)).await;
    };
    let whole = format!("write_file {command}");
    let left = whole.len() - page["summary"].as_u64().expect("a summary") as usize;
    assert_eq!(page["cut"], format!("… and {left} bytes more, not shown here:"), "{page}");
    assert_eq!(page["tools"], TOOLS_SHOWN, "{page}");
    assert_eq!(page["more"], "and 50 more in flight, not shown", "{page}");

    // The link serves the whole call, to the page (which holds the cookie).
    let link = page["link"].as_str().expect("a link");
    let fetched = browser.eval(&format!("fetch({link:?}).then((r) => r.text())")).await.expect("fetch the link");
    assert_eq!(fetched.as_str(), Some(whole.as_str()), "the whole call");
    handle.shutdown().await.expect("shutdown");
    inspector.shutdown().await;
}
