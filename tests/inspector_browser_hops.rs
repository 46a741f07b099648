//! A page left open on a busy agent, in a real browser (headless Chromium
//! over the DevTools protocol): it keeps the newest
//! [`HOPS_KEPT`](agent_fsm::inspector::HOPS_KEPT) hops in its timeline,
//! its history and its model of the agent, however many more the agent
//! makes while it is open, and says how many came before those shown.
//!
//! Without a browser (`$CHROME`, else /usr/bin/chromium) the test says so
//! in one line and passes.

#[path = "support/cdp.rs"]
#[allow(dead_code, reason = "screenshots, clicks and the request list serve the other browser tests")]
mod cdp;

use std::path::PathBuf;
use std::time::Duration;

use agent_fsm::inspector::{AgentView, HOPS_KEPT, Inspector};
use agent_fsm::runtime::{ExecutorConfig, MachineHandle, from_fn, spawn};
use serde_json::Value;
use tokio::time::{Instant, sleep, timeout};

/// A switch that flips on every push.
#[agent_fsm::state_machine(fallback = Nothing)]
mod switch {
    /// Which way it is.
    #[states]
    #[derive(Debug, Clone)]
    pub(crate) enum State {
        /// Off.
        #[initial]
        Off,
        /// On.
        On,
    }

    /// What it is told.
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        /// Flip it.
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
        Off + Push => On / Nothing,
        On + Push => Off / Nothing,
    }
}

type Handle = MachineHandle<switch::Machine, ()>;

/// What the page holds: its timeline's and history's entries, the hops
/// its model keeps, the numbers of the first and last entries, and what
/// its hop count says.
const READ: &str = r#"(() => {
  const timeline = document.querySelectorAll('#timeline li');
  return {
    timeline: timeline.length,
    history: document.querySelectorAll('#history tr').length,
    model: typeof agent === 'object' ? agent.hops.length : -1,
    first: timeline.length ? Number(timeline[0].dataset.n) : 0,
    last: timeline.length ? Number(timeline[timeline.length - 1].dataset.n) : 0,
    count: document.getElementById('hop-count').textContent,
    shown: document.getElementById('history-shown').textContent,
  };
})()"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_page_keeps_the_newest_hops_and_says_how_many_it_dropped() {
    let Some(chrome) = cdp::find() else {
        println!("skipped: no Chromium (set CHROME or install /usr/bin/chromium)");
        return;
    };
    timeout(Duration::from_secs(240), run(chrome)).await.expect("the browser test timed out");
}

/// Pushes the switch `n` times.
async fn push(handle: &Handle, n: usize) {
    for _ in 0..n {
        handle.send(switch::Event::Push).await.expect("the switch runs");
    }
}

/// Reads the page until its last timeline entry is hop `n`.
async fn until_last(browser: &mut cdp::Browser, n: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let page = browser.eval(READ).await.expect("read the page");
        if page["last"] == n {
            return page;
        }
        assert!(Instant::now() < deadline, "the page never showed hop {n}: {page}");
        sleep(Duration::from_millis(50)).await;
    }
}

async fn run(chrome: PathBuf) {
    // A log that holds every push of a batch: the inspector, on another
    // thread, sees each hop, so that the numbers the page shows are the
    // pushes made.
    let config = ExecutorConfig::new().notification_capacity(4 * HOPS_KEPT);
    let handle: Handle = spawn(switch::Machine::new(), from_fn(|_, _| {}), config);
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("inspector");
    let id = inspector.attach(&handle, AgentView::new("switch")).await.expect("attached");
    let mut browser = cdp::Browser::launch(&chrome).await.expect("browser");
    browser.open(&inspector.agent_url(id)).await.expect("open the page");
    let deadline = Instant::now() + Duration::from_secs(30);
    while browser.eval("document.getElementById('state')?.textContent").await.expect("read") != "Off" {
        assert!(Instant::now() < deadline, "the page never showed the switch");
        sleep(Duration::from_millis(50)).await;
    }

    // Up to the limit, in steps the page follows (a page that falls
    // behind is sent a snapshot, itself bounded).
    let mut made = 0;
    while made < HOPS_KEPT {
        push(&handle, 1000).await;
        made += 1000;
        until_last(&mut browser, made).await;
    }
    let page = browser.eval(READ).await.expect("read the page");
    assert_eq!((page["timeline"].as_u64(), page["first"].as_u64()), (Some(HOPS_KEPT as u64), Some(1)), "{page}");

    // Past it, one hop at a time as the page receives them: each pushes
    // the oldest out.
    let more = 300;
    for _ in 0..more / 50 {
        push(&handle, 50).await;
        made += 50;
        until_last(&mut browser, made).await;
    }
    let page = browser.eval(READ).await.expect("read the page");
    let kept = HOPS_KEPT as u64;
    assert_eq!(page["timeline"].as_u64(), Some(kept), "the timeline keeps the newest: {page}");
    assert_eq!(page["history"].as_u64(), Some(kept), "the history keeps the newest: {page}");
    assert_eq!(page["model"].as_u64(), Some(kept), "the page's model keeps the newest: {page}");
    assert_eq!(page["first"].as_u64(), Some(more as u64 + 1), "the oldest went first: {page}");
    assert_eq!(page["last"].as_u64(), Some(made as u64), "{page}");
    let count = page["count"].as_str().unwrap_or_default();
    assert!(count.starts_with(&format!("{made} hops")), "{count}");
    assert!(count.contains(&format!("the first {more} not shown")), "the page says how many it dropped: {count}");
    assert_eq!(page["shown"], format!("{kept} of {kept} shown"), "{page}");

    // The history's filter counts the rows kept, as hops come and go
    // behind it.
    let filter = |words: &str| {
        format!(
            "(() => {{ const f = document.getElementById('filter'); f.value = '{words}'; \
             f.dispatchEvent(new Event('input')); return document.getElementById('history-shown').textContent; }})()"
        )
    };
    assert_eq!(browser.eval(&filter("nowhere")).await.expect("filter"), format!("0 of {kept} shown"));
    push(&handle, 50).await;
    made += 50;
    let page = until_last(&mut browser, made).await;
    assert_eq!(page["shown"], format!("0 of {kept} shown"), "{page}");
    assert_eq!(browser.eval(&filter("")).await.expect("filter"), format!("{kept} of {kept} shown"));
    handle.shutdown().await.expect("shutdown");
    inspector.shutdown().await;
}
