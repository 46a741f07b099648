//! The inspector's approve button in a real browser (headless Chromium
//! over the DevTools protocol), against an agent whose next approval is
//! asked the moment the last one is granted: a click that lands right
//! after a new approval replaced the one the user read (the second click
//! of a double click, say) sends nothing, so no approval is answered
//! before the page has shown it for a moment; once that moment has
//! passed, the same button answers it.
//!
//! Without a browser (`$CHROME`, else /usr/bin/chromium) the test says so
//! in one line and passes.

#[path = "support/cdp.rs"]
#[allow(dead_code, reason = "screenshots and the request list serve the other browser test")]
mod cdp;

use std::path::PathBuf;
use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, Inspector};
use agent_fsm::runtime::{ExecutorConfig, MachineHandle, from_fn, spawn};
use tokio::time::{Instant, sleep, timeout};

/// A gate that asks approval `n`, then, granted, approval `n + 1` at once.
#[agent_fsm::state_machine(fallback = Nothing)]
mod gate {
    /// Which approval is asked.
    #[states]
    #[derive(Debug, Clone)]
    pub(crate) enum State {
        /// Not started.
        #[initial]
        Idle,
        /// Approval `n` is pending.
        Asking {
            /// Its number.
            n: u32,
        },
    }

    /// What the gate is told.
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        /// Ask the first approval.
        Start,
        /// Approval `n` granted.
        Grant {
            /// The approval answered.
            n: u32,
        },
        /// Approval `n` denied.
        Deny {
            /// The approval answered.
            n: u32,
        },
    }

    /// Nothing to do outside.
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        /// Nothing.
        Nothing,
    }

    transitions! {
        Idle + Start => Asking { n: 1 } / Nothing,
        Asking { n } + Grant { n: granted } [*granted == *n] => Asking { n: n + 1 } / Nothing,
        Asking { n } + Deny { n: denied } [*denied == *n] => Idle / Nothing,
    }
}

type Handle = MachineHandle<gate::Machine, ()>;

fn view() -> AgentView<gate::Machine, ()> {
    AgentView::new("gate").approvals(|state: &gate::State| match state {
        gate::State::Asking { n } => Some(Approval {
            summary: format!("approval {n}"),
            approve: gate::Event::Grant { n: *n },
            deny: gate::Event::Deny { n: *n },
        }),
        gate::State::Idle => None,
    })
}

/// The approval the agent waits for.
async fn asking(handle: &Handle) -> u32 {
    match handle.state().await.expect("the agent runs") {
        gate::State::Asking { n } => n,
        gate::State::Idle => 0,
    }
}

/// Waits until the agent asks approval `n`.
async fn until_asking(handle: &Handle, n: u32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while asking(handle).await != n {
        assert!(Instant::now() < deadline, "the agent never asked approval {n}");
        sleep(Duration::from_millis(10)).await;
    }
}

/// Clicks approve on the approval shown, waits (in the page) for the next
/// one to replace it, and clicks approve again at once; returns the ids of
/// the approvals whose answers the page sent.
const DOUBLE_CLICK: &str = r#"(async () => {
  const sent = [];
  const fetch = window.fetch;
  window.fetch = (url, options) => {
    if (String(url).includes('/approvals/')) sent.push(String(url).split('/approvals/')[1]);
    return fetch(url, options);
  };
  const box = document.getElementById('approval');
  const first = box.dataset.id;
  box.querySelector('.approve').click();
  const start = performance.now();
  while (box.hidden || box.dataset.id === first) {
    if (performance.now() - start > 20000) return { timeout: true, sent };
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  box.querySelector('.approve').click();
  return { sent, shown: box.dataset.id };
})()"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_on_an_approval_just_shown_answers_nothing() {
    let Some(chrome) = cdp::find() else {
        println!("skipped: no Chromium (set CHROME or install /usr/bin/chromium)");
        return;
    };
    timeout(Duration::from_secs(120), run(chrome)).await.expect("the browser test timed out");
}

/// Evaluates `expression` in the page every 50 ms until it is `true`;
/// fails with `failure` after 30 s.
async fn until_true(browser: &mut cdp::Browser, expression: &str, failure: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while browser.eval(expression).await.expect("evaluate") != true {
        assert!(Instant::now() < deadline, "{failure}");
        sleep(Duration::from_millis(50)).await;
    }
}

async fn run(chrome: PathBuf) {
    let handle: Handle = spawn(gate::Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new());
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("inspector");
    let id = inspector.attach(&handle, view()).await.expect("attached");
    handle.send(gate::Event::Start).await.expect("started");
    let mut browser = cdp::Browser::launch(&chrome).await.expect("browser");
    browser.open(&inspector.agent_url(id)).await.expect("open the page");

    // Approval 1, read for a moment: its button takes the click.
    until_true(&mut browser, cdp::CLICK_IF_ENABLED, "approval 1 never took a click").await;
    until_asking(&handle, 2).await;
    // Approval 2 waits for a click of its own; then the double click: its
    // second click lands on approval 3 as soon as it is shown.
    until_true(&mut browser, cdp::CLICK_IF_ENABLED, "approval 2 never took a click").await;
    until_asking(&handle, 3).await;
    // Approval 3 shown and ready, so that the double click starts on it.
    let ready = "(() => { const b = document.querySelector('#approval:not([hidden]) .approve'); return !!b && !b.disabled; })()";
    until_true(&mut browser, ready, "approval 3 never took clicks").await;
    let clicks = browser.eval(DOUBLE_CLICK).await.expect("double click");
    assert_ne!(clicks["timeout"], true, "approval 4 was never shown: {clicks}");
    let sent: Vec<String> = serde_json::from_value(clicks["sent"].clone()).expect("ids");
    assert_eq!(sent.len(), 1, "the second click answered an approval shown a moment before: {clicks}");
    until_asking(&handle, 4).await;

    // Approval 4, once shown for a moment, takes a click.
    until_true(&mut browser, cdp::CLICK_IF_ENABLED, "approval 4 never took a click").await;
    until_asking(&handle, 5).await;
    assert_eq!(asking(&handle).await, 5, "one approval answered per deliberate click");
    handle.shutdown().await.expect("shutdown");
    inspector.shutdown().await;
}
