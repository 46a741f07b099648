//! Many agent pages open at once, in a real browser (headless Chromium
//! over the DevTools protocol): a browser opens six connections at most
//! to one host, and each page's update stream holds one. A page in a tab
//! that is not shown closes its stream, so that pages left open in other
//! tabs do not take every connection (a seventh page would not load, and
//! no approve button would reach the inspector); shown again, it opens a
//! new one and follows the agent from a fresh snapshot.
//!
//! The other tabs' streams are opened by the page itself here, and its
//! tab is hidden by telling it so (`visibilitychange`), as a browser does
//! when another tab is brought to the front.
//!
//! Without a browser (`$CHROME`, else /usr/bin/chromium) the test says so
//! in one line and passes.

#[path = "support/cdp.rs"]
#[allow(dead_code, reason = "screenshots, clicks and the request list serve the other browser tests")]
mod cdp;

use std::path::PathBuf;
use std::time::Duration;

use agent_fsm::inspector::{AgentView, Inspector};
use agent_fsm::runtime::{ExecutorConfig, MachineHandle, from_fn, spawn};
use tokio::time::{Instant, sleep, timeout};

/// A door, pushed open and shut.
#[agent_fsm::state_machine(fallback = Nothing)]
mod door {
    /// Open or shut.
    #[states]
    #[derive(Debug, Clone)]
    pub(crate) enum State {
        /// Shut.
        #[initial]
        Closed,
        /// Open.
        Open,
    }

    /// What the door is told.
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        /// A push: open if shut, shut if open.
        Push,
    }

    /// Nothing to do outside.
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        /// Nothing.
        Nothing,
    }

    transitions! {
        Closed + Push => Open / Nothing,
        Open + Push => Closed / Nothing,
    }
}

/// Whether a request from the page to the inspector is answered within a
/// few seconds ("answered") or waits for a connection ("waiting").
const ASK: &str = "(async () => { \
    const asked = fetch('/api/agents').then((r) => 'answered'); \
    return await Promise.race([asked, new Promise((r) => setTimeout(() => r('waiting'), 3000))]); })()";

/// Tells the page it is hidden (`true`) or shown.
fn hide(hidden: bool) -> String {
    format!(
        "Object.defineProperty(document, 'hidden', {{ value: {hidden}, configurable: true }}); \
         document.dispatchEvent(new Event('visibilitychange')); true"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_page_gives_its_connection_back() {
    let Some(chrome) = cdp::find() else {
        println!("skipped: no Chromium (set CHROME or install /usr/bin/chromium)");
        return;
    };
    timeout(Duration::from_secs(60), run(chrome)).await.expect("the browser test timed out");
}

async fn run(chrome: PathBuf) {
    let handle: MachineHandle<door::Machine, ()> =
        spawn(door::Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new());
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("inspector");
    let id = inspector.attach(&handle, AgentView::new("door")).await.expect("attached");
    let mut browser = cdp::Browser::launch(&chrome).await.expect("browser");
    browser.open(&inspector.agent_url(id)).await.expect("open the page");
    let deadline = Instant::now() + Duration::from_secs(30);
    let state = "typeof agent === 'object' && agent.state !== undefined ? agent.state : null";
    while browser.eval(state).await.expect("evaluate") != "Closed" {
        assert!(Instant::now() < deadline, "the page never opened");
        sleep(Duration::from_millis(50)).await;
    }

    // Five more streams, as five other pages in other tabs hold: every
    // connection the browser opens to the inspector is taken.
    let others = format!(
        "window.others = Array.from({{ length: 5 }}, () => new EventSource('/api/agents/{id}/events')); \
         new Promise((r) => setTimeout(() => r(true), 500))"
    );
    browser.eval(&others).await.expect("open the other streams");
    assert_eq!(browser.eval(ASK).await.expect("ask"), "waiting", "the browser's six connections are taken");

    // Hidden, the page gives its stream's connection back.
    browser.eval(&hide(true)).await.expect("hide the page");
    assert_eq!(browser.eval(ASK).await.expect("ask"), "answered", "a hidden page still holds its connection");
    let status = browser.eval("document.getElementById('status').textContent").await.expect("status");
    assert_eq!(status, "paused while hidden");

    // Shown again, it follows the agent again.
    browser.eval("window.others.forEach((s) => s.close()); true").await.expect("close the other streams");
    browser.eval(&hide(false)).await.expect("show the page");
    handle.send(door::Event::Push).await.expect("push");
    while browser.eval(state).await.expect("evaluate") != "Open" {
        assert!(Instant::now() < deadline, "the page shown again did not follow the agent");
        sleep(Duration::from_millis(50)).await;
    }
    let status = browser.eval("document.getElementById('status').textContent").await.expect("status");
    assert_eq!(status, "running");
    handle.shutdown().await.expect("shutdown");
    inspector.shutdown().await;
}
