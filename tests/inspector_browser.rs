//! The inspector in a real browser: the demo agent (Loom with a
//! permission step, scripted model) runs with the inspector on an
//! ephemeral port, and a headless Chromium opens its page. Asserted: the
//! diagram's highlighted state follows the agent through at least five
//! states, the timeline gains one entry per hop, approve on the pending
//! approval makes the agent go on, and no request leaves 127.0.0.1 (the
//! browser resolves no other host at all). A screenshot is saved as
//! `target/inspector/inspector.png`.
//!
//! Without a browser (`$CHROME`, else /usr/bin/chromium) the test says so
//! in one line and passes.

#[path = "support/cdp.rs"]
mod cdp;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_fsm::Kind;
use agent_fsm_examples::coding_agent::ScriptedLlm;
use agent_fsm_examples::coding_agent::demo::TASK;
use agent_fsm_examples::coding_agent::inspect::InspectedSession;
use serde_json::Value;
use tokio::time::{Instant, sleep, timeout};

/// What the page shows, read in one evaluation: the state its diagram
/// highlights, the timeline's entries (`from>to`), whether an approval is
/// shown, and whether the session is marked finished (read while the
/// page may still be loading).
const READ: &str = r#"(() => {
  const current = document.querySelector('#diagram [data-state].current');
  return {
    current: current ? current.dataset.state : null,
    timeline: [...document.querySelectorAll('#timeline li')].map(li => li.dataset.from + '>' + li.dataset.to),
    approval: document.getElementById('approval')?.hidden === false,
    svg: !!document.querySelector('#diagram svg g.node'),
    finished: document.getElementById('status')?.textContent === 'finished',
  };
})()"#;

/// Where the screenshot goes: `target/inspector/`.
fn screenshot_path() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(&tmp).join("inspector").join("inspector.png")
}

/// `seen` appears in `path` in order (not necessarily next to each other).
fn in_order(seen: &[String], path: &[&str]) -> bool {
    let mut rest = path.iter();
    seen.iter().all(|s| rest.any(|p| p == s))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_follows_the_agent_and_answers_its_approval() {
    let Some(chrome) = cdp::find() else {
        println!("skipped: no Chromium (set CHROME or install /usr/bin/chromium)");
        return;
    };
    timeout(Duration::from_secs(180), run(chrome)).await.expect("the browser test timed out");
}

async fn run(chrome: PathBuf) {
    // Paced so that each state stays on the page for a few polls.
    let llm = Arc::new(ScriptedLlm { delay: Duration::from_millis(40) });
    let session =
        InspectedSession::start("127.0.0.1:0", llm, "scripted", Duration::from_millis(400)).await.expect("session");
    let origin = format!("http://{}/", session.inspector.local_addr());
    let mut browser = cdp::Browser::launch(&chrome).await.expect("browser");
    browser.open(&session.url).await.expect("open the page");

    // The page is up, the diagram drawn, the initial state highlighted.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let page = browser.eval(READ).await.expect("read the page");
        if page["current"] == "WaitingForUserInput" && page["svg"] == true {
            break;
        }
        assert!(Instant::now() < deadline, "the page never showed the diagram: {page}");
        sleep(Duration::from_millis(50)).await;
    }

    session.begin(TASK).await.expect("task");
    let mut seen: Vec<String> = vec!["WaitingForUserInput".into()];
    let mut timeline_lengths = vec![0];
    let mut approved_at = None;
    let mut clicked_at = None;
    let mut clicks = 0;
    let mut shot = false;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let page = browser.eval(READ).await.expect("read the page");
        if let Some(current) = page["current"].as_str()
            && seen.last().map(String::as_str) != Some(current)
        {
            seen.push(current.to_owned());
        }
        let length = page["timeline"].as_array().map_or(0, Vec::len);
        if timeline_lengths.last() != Some(&length) {
            timeline_lengths.push(length);
        }
        // The edit, then the command that checks it: one click each, once
        // the agent has moved on from the one clicked before.
        if page["approval"] == true && approved_at.is_none() && !shot {
            shot = true;
            assert_eq!(page["current"], "WaitingForPermission", "an approval shows while the agent waits for it");
            browser.screenshot(&screenshot_path()).await.expect("screenshot");
        }
        // A new approval's buttons take clicks after a moment: a click
        // before then sends nothing, and is tried again at the next poll.
        if page["approval"] == true
            && page["current"] == "WaitingForPermission"
            && clicked_at != Some(seen.len())
            && browser.eval(cdp::CLICK_IF_ENABLED).await.expect("click approve") == true
        {
            approved_at.get_or_insert(seen.len());
            clicked_at = Some(seen.len());
            clicks += 1;
        }
        if approved_at.is_some() && page["current"] == "WaitingForUserInput" {
            break;
        }
        assert!(Instant::now() < deadline, "the agent did not finish its turn; the page saw {seen:?}, last {page}");
        sleep(Duration::from_millis(30)).await;
    }
    let approved_at = approved_at.expect("an approval was shown");
    assert_eq!(clicks, 2, "the edit and the check each waited for a click");

    // The agent went on after the click: the edit ran and fixed the file.
    let history = session.handle.history().await.expect("history");
    let fixed = std::fs::read_to_string(session.workspace.path().join("greeting.sh")).expect("file");
    assert_eq!(fixed, "#!/bin/sh\necho \"Hello, world\"\n", "approve let the edit run");
    assert!(
        history.transitions().any(|t| t.event.map(Kind::name) == Some("PermissionGranted")),
        "the approve button sent PermissionGranted through the handle"
    );
    assert!(seen[approved_at..].iter().any(|s| s == "ExecutingTools"), "after approve: {seen:?}");

    // The highlight followed the agent: at least five changes, in the
    // order the agent took them.
    let mut path = vec![history.transitions().next().expect("hops").from.name()];
    path.extend(history.transitions().filter(|t| t.from != t.to).map(|t| t.to.name()));
    assert!(seen.len() >= 6, "the highlight moved through {seen:?}");
    assert!(in_order(&seen, &path), "highlighted {seen:?}, agent went {path:?}");
    let distinct: std::collections::BTreeSet<&String> = seen.iter().collect();
    assert!(distinct.len() >= 5, "five states highlighted at least: {seen:?}");

    // One timeline entry per hop, in order, grown as the agent went.
    session.handle.wait_idle().await.expect("idle");
    let hops: Vec<String> = session
        .handle
        .history()
        .await
        .expect("history")
        .transitions()
        .map(|t| format!("{}>{}", t.from.name(), t.to.name()))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    let timeline = loop {
        let page = browser.eval(READ).await.expect("read the page");
        let timeline: Vec<String> =
            serde_json::from_value(page["timeline"].clone()).expect("timeline entries are strings");
        if timeline.len() >= hops.len() || Instant::now() > deadline {
            break timeline;
        }
        sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(timeline, hops, "one timeline entry per hop");
    assert!(timeline_lengths.windows(2).all(|w| w[0] < w[1]), "the timeline only grows: {timeline_lengths:?}");
    assert!(timeline_lengths.len() > 5, "it grew while the agent ran: {timeline_lengths:?}");

    // The finished session stays on the page.
    session.handle.shutdown().await.expect("shutdown");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let page = browser.eval(READ).await.expect("read the page");
        if page["finished"] == true && page["current"] == "ShuttingDown" {
            break;
        }
        assert!(Instant::now() < deadline, "the page did not show the end: {page}");
        sleep(Duration::from_millis(50)).await;
    }

    // No request left 127.0.0.1, and the diagram's script was among them.
    let requests = browser.requests();
    let outside: Vec<&String> =
        requests.iter().filter(|url| !url.starts_with(&origin) && !url.starts_with("data:")).collect();
    assert!(outside.is_empty(), "requests that left {origin}: {outside:?}");
    assert!(requests.iter().any(|url| url.ends_with("/assets/mermaid.min.js")), "{requests:?}");
    let page: Value = browser.eval(READ).await.expect("read the page");
    assert_eq!(page["svg"], true, "the diagram rendered with no network");
}

#[test]
fn inspect_takes_an_optional_address() {
    use agent_fsm_examples::coding_agent::model::{INSPECT_ADDR, USAGE, parse_args};
    let parse = |args: &[&str]| parse_args(args.iter().map(|a| (*a).to_owned())).expect("parsed");
    assert_eq!(parse(&["--inspect"]).inspect.as_deref(), Some(INSPECT_ADDR));
    assert_eq!(INSPECT_ADDR, "127.0.0.1:0");
    assert_eq!(parse(&["--inspect", "127.0.0.1:7777"]).inspect.as_deref(), Some("127.0.0.1:7777"));
    assert_eq!(parse(&["--inspect=[::1]:0"]).inspect.as_deref(), Some("[::1]:0"));
    // A flag after it is not its address.
    let both = parse(&["--inspect", "--model", "m"]);
    assert_eq!((both.inspect.as_deref(), both.model.as_deref()), (Some(INSPECT_ADDR), Some("m")));
    assert_eq!(parse(&[]).inspect, None);
    assert!(USAGE.contains("--inspect [ADDR]"));
}
