//! Which page a real browser (headless Chromium over the DevTools
//! protocol) is shown: the page of an agent that is not attached (an id
//! no agent has, or not a number) is a 404 that says so and asks for no
//! updates; and two inspectors on one host, opened in one browser, each
//! keep answering it, though a browser keeps cookies per host, not per
//! port; a page that the next inspector on its port refuses says it is
//! disconnected for good, not that it is retrying (the browser has
//! stopped); and the index, once its inspector has stopped or been
//! replaced, says that the list it shows is no longer kept up.
//!
//! Without a browser (`$CHROME`, else /usr/bin/chromium) the test says so
//! in one line and passes.

#[path = "support/cdp.rs"]
#[allow(dead_code, reason = "screenshots and clicks serve the other browser tests")]
mod cdp;

use std::path::PathBuf;
use std::time::Duration;

use agent_fsm::inspector::{AgentView, Inspector};
use agent_fsm::runtime::{ExecutorConfig, MachineHandle, from_fn, spawn};
use serde_json::Value;
use tokio::time::{Instant, sleep, timeout};

/// A lamp.
#[agent_fsm::state_machine(fallback = Nothing)]
mod lamp {
    /// Whether it is lit.
    #[states]
    #[derive(Debug, Clone)]
    pub(crate) enum State {
        /// Dark.
        #[initial]
        Dark,
        /// Lit.
        Lit,
    }

    /// What it is told.
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        /// Light it.
        Light,
        /// Put it out.
        Douse,
    }

    /// Nothing to do outside.
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        /// Nothing.
        Nothing,
    }

    transitions! {
        Dark + Light => Lit / Nothing,
        Lit + Douse => Dark / Nothing,
    }
}

type Handle = MachineHandle<lamp::Machine, ()>;

/// Evaluates `expression` in the page every 50 ms until it is `want`;
/// fails with what it last was after 30 s.
async fn until(browser: &mut cdp::Browser, expression: &str, want: Value) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let value = browser.eval(expression).await.unwrap_or(Value::Null);
        if value == want {
            return;
        }
        assert!(Instant::now() < deadline, "{expression} stayed {value}, not {want}");
        sleep(Duration::from_millis(50)).await;
    }
}

/// The agent page's state badge, once its updates came.
const STATE: &str = "document.getElementById('state')?.textContent";

/// The status of the answers to requests for `url`, in order.
fn statuses(browser: &cdp::Browser, url: &str) -> Vec<Value> {
    browser
        .events
        .iter()
        .filter(|e| e["method"] == "Network.responseReceived" && e["params"]["response"]["url"] == url)
        .map(|e| e["params"]["response"]["status"].clone())
        .collect()
}

fn skip() -> Option<PathBuf> {
    let chrome = cdp::find();
    if chrome.is_none() {
        println!("skipped: no Chromium (set CHROME or install /usr/bin/chromium)");
    }
    chrome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_of_an_agent_not_attached_says_so_and_asks_nothing() {
    let Some(chrome) = skip() else { return };
    timeout(Duration::from_secs(120), async {
        let handle: Handle = spawn(lamp::Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new());
        let inspector = Inspector::bind("127.0.0.1:0").await.expect("inspector");
        let id = inspector.attach(&handle, AgentView::new("lamp")).await.expect("attached");
        let mut browser = cdp::Browser::launch(&chrome).await.expect("browser");
        let token = inspector.url().split_once("?token=").map(|(_, t)| t.to_owned()).expect("a token");
        for missing in ["7", "abc", "-1", "99999999999999999999999"] {
            let url = format!("http://{}/agents/{missing}?token={token}", inspector.local_addr());
            browser.open(&url).await.expect("open the page");
            let shown = format!(
                "location.pathname === '/agents/{missing}' && document.readyState === 'complete' \
                 && document.getElementById('unknown') !== null"
            );
            until(&mut browser, &shown, Value::Bool(true)).await;
            assert_eq!(statuses(&browser, &url), [Value::from(404)], "/agents/{missing}");
        }
        // Its page asked for no updates, nor anything but its style.
        let asked: Vec<String> = browser.requests().into_iter().filter(|u| u.contains("/api/")).collect();
        assert!(asked.is_empty(), "{asked:?}");
        // The agent's own page still opens, and follows it.
        browser.open(&inspector.agent_url(id)).await.expect("open the page");
        until(&mut browser, STATE, "Dark".into()).await;
        handle.send(lamp::Event::Light).await.expect("lit");
        until(&mut browser, STATE, "Lit".into()).await;
        handle.send(lamp::Event::Douse).await.expect("doused");
        until(&mut browser, STATE, "Dark".into()).await;
        handle.shutdown().await.expect("shutdown");
        inspector.shutdown().await;
    })
    .await
    .expect("the browser test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_inspectors_on_one_host_each_keep_their_token_in_one_browser() {
    let Some(chrome) = skip() else { return };
    timeout(Duration::from_secs(120), async {
        let (first, second): (Handle, Handle) = (
            spawn(lamp::Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new()),
            spawn(lamp::Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new()),
        );
        second.send(lamp::Event::Light).await.expect("lit");
        let one = Inspector::bind("127.0.0.1:0").await.expect("inspector");
        let two = Inspector::bind("127.0.0.1:0").await.expect("inspector");
        let id_one = one.attach(&first, AgentView::new("first")).await.expect("attached");
        let id_two = two.attach(&second, AgentView::new("second")).await.expect("attached");
        let mut browser = cdp::Browser::launch(&chrome).await.expect("browser");
        // Each opened from its URL, one after the other: the second's
        // cookie must not replace the first's.
        browser.open(&one.agent_url(id_one)).await.expect("open the first");
        until(&mut browser, STATE, "Dark".into()).await;
        browser.open(&two.agent_url(id_two)).await.expect("open the second");
        until(&mut browser, STATE, "Lit".into()).await;
        // Back on each without the token in the URL, as a reload of a
        // page whose address was shortened, or the index's links, ask.
        for (inspector, id, state) in [(&one, id_one, "Dark"), (&two, id_two, "Lit")] {
            let url = format!("http://{}/agents/{id}", inspector.local_addr());
            browser.open(&url).await.expect("open again");
            until(&mut browser, STATE, state.into()).await;
            assert_eq!(statuses(&browser, &url).last(), Some(&Value::from(200)), "{url}");
            let events = format!("http://{}/api/agents/{id}/events", inspector.local_addr());
            assert_eq!(statuses(&browser, &events).last(), Some(&Value::from(200)), "{events}");
        }
        first.shutdown().await.expect("shutdown");
        second.shutdown().await.expect("shutdown");
        one.shutdown().await;
        two.shutdown().await;
    })
    .await
    .expect("the browser test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_refused_by_the_next_inspector_on_its_port_stops_saying_it_retries() {
    let Some(chrome) = skip() else { return };
    timeout(Duration::from_secs(120), async {
        let handle: Handle = spawn(lamp::Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new());
        let inspector = Inspector::bind("127.0.0.1:0").await.expect("inspector");
        let addr = inspector.local_addr();
        let id = inspector.attach(&handle, AgentView::new("lamp")).await.expect("attached");
        let mut browser = cdp::Browser::launch(&chrome).await.expect("browser");
        browser.open(&inspector.agent_url(id)).await.expect("open the page");
        until(&mut browser, STATE, "Dark".into()).await;
        // Stopped: the page tries again, and says so.
        inspector.shutdown().await;
        let status = "document.getElementById('status').textContent";
        until(&mut browser, status, "disconnected, retrying".into()).await;
        // Another inspector on the same port, with a token of its own,
        // refuses the page's next try: the browser stops there, and so
        // must what the page says.
        let next = Inspector::bind(addr).await.expect("the same port again");
        let _ = next.attach(&handle, AgentView::new("lamp")).await.expect("attached");
        until(&mut browser, status, "disconnected: open the inspector's URL again".into()).await;
        handle.shutdown().await.expect("shutdown");
        next.shutdown().await;
    })
    .await
    .expect("the browser test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_says_when_its_list_is_no_longer_kept_up() {
    let Some(chrome) = skip() else { return };
    timeout(Duration::from_secs(120), async {
        let handle: Handle = spawn(lamp::Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new());
        let inspector = Inspector::bind("127.0.0.1:0").await.expect("inspector");
        let addr = inspector.local_addr();
        let _ = inspector.attach(&handle, AgentView::new("lamp")).await.expect("attached");
        let mut browser = cdp::Browser::launch(&chrome).await.expect("browser");
        browser.open(&inspector.url()).await.expect("open the index");
        let listed = "document.querySelector('#agents a')?.textContent ?? null";
        until(&mut browser, listed, "lamp".into()).await;
        let status = "document.getElementById('status').textContent";
        until(&mut browser, status, "".into()).await;
        // Stopped: the list shown is the last one, and the page says so.
        inspector.shutdown().await;
        until(&mut browser, status, "disconnected, retrying".into()).await;
        // Another inspector on the port refuses the page.
        let next = Inspector::bind(addr).await.expect("the same port again");
        until(&mut browser, status, "refused: open the inspector's URL again".into()).await;
        assert_eq!(browser.eval(listed).await.expect("read"), "lamp", "the last list is kept");
        handle.shutdown().await.expect("shutdown");
        next.shutdown().await;
    })
    .await
    .expect("the browser test timed out");
}
