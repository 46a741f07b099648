//! Markup where the page shows text, in a real browser (headless
//! Chromium over the DevTools protocol): an agent's name, a tool's label,
//! a note, streamed text and an approval's summary holding HTML and
//! script are shown as the characters they are, on the agent's page and
//! on the index, and run nothing.
//!
//! Without a browser (`$CHROME`, else /usr/bin/chromium) the test says so
//! in one line and passes.

#[path = "support/cdp.rs"]
#[allow(dead_code, reason = "screenshots and clicks serve the other browser tests")]
mod cdp;

use std::path::PathBuf;
use std::time::Duration;

use agent_fsm::inspector::{AgentView, Approval, Inspector, Shown};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, MachineHandle, spawn};
use serde_json::Value;
use tokio::time::{Instant, sleep, timeout};

/// A gate that asks approval for what a model wrote.
#[agent_fsm::state_machine(fallback = Nothing)]
mod gate {
    /// Whether something waits for approval.
    #[states]
    #[derive(Debug, Clone)]
    pub(crate) enum State {
        /// Nothing asked.
        #[initial]
        Idle,
        /// `what` waits for approval.
        Asking {
            /// What was asked.
            what: String,
        },
    }

    /// What the gate is told.
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        /// Ask approval for this.
        Ask(String),
        /// Approved.
        Allow,
    }

    /// What the gate does outside.
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        /// Nothing.
        Nothing,
        /// Reports what was asked, as text, a tool and a note.
        Report(String),
    }

    transitions! {
        Idle + Ask(what) => Asking { what: what.clone() } / Report(what.clone()),
        Asking { .. } + Allow => Idle / Nothing,
    }
}

/// Each of the page's text outputs, to be shown as is.
struct Reporter;

impl Effects<gate::Machine> for Reporter {
    type Output = Shown;

    fn perform(&mut self, action: gate::Action, cx: &mut EffectContext<'_, gate::Machine, Shown>) {
        if let gate::Action::Report(what) = action {
            cx.output(Shown::TextDelta(what.clone()));
            cx.output(Shown::ToolStarted { id: what.clone(), label: what.clone() });
            cx.output(Shown::Note(what));
        }
    }
}

/// Markup that would run script, were it taken as HTML anywhere.
const HOSTILE: &str = "<img src=x onerror=\"window.pwned=1\"><script>window.pwned=2</script>\
                       <svg onload=\"window.pwned=3\"></svg><b>bold</b>";

/// On the agent's page: whether anything ran, what elements the markup
/// would have made, and each text shown.
const READ: &str = r#"(() => ({
  pwned: window.pwned === undefined ? null : window.pwned,
  injected: document.querySelectorAll('img, b, script:not([src]), [onload], [onerror]').length,
  name: document.getElementById('name').textContent,
  stream: document.getElementById('stream').textContent,
  tool: document.querySelector('#tools .label')?.textContent ?? null,
  note: document.querySelector('#notes li span:last-child')?.textContent ?? null,
  summary: document.getElementById('approval').hidden ? null : document.getElementById('approval-summary').textContent,
}))()"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markup_in_what_the_page_shows_is_shown_as_text() {
    let Some(chrome) = cdp::find() else {
        println!("skipped: no Chromium (set CHROME or install /usr/bin/chromium)");
        return;
    };
    timeout(Duration::from_secs(90), run(chrome)).await.expect("the browser test timed out");
}

async fn run(chrome: PathBuf) {
    let handle: MachineHandle<gate::Machine, Shown> = spawn(gate::Machine::new(), Reporter, ExecutorConfig::new());
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("inspector");
    let view =
        AgentView::new(HOSTILE).outputs(|shown: &Shown| Some(shown.clone())).approvals(
            |state: &gate::State| match state {
                gate::State::Asking { what } => {
                    Some(Approval { summary: what.clone(), approve: gate::Event::Allow, deny: gate::Event::Allow })
                }
                gate::State::Idle => None,
            },
        );
    let id = inspector.attach(&handle, view).await.expect("attached");
    let mut browser = cdp::Browser::launch(&chrome).await.expect("browser");
    browser.open(&inspector.agent_url(id)).await.expect("open the page");
    let deadline = Instant::now() + Duration::from_secs(30);
    while browser.eval("document.getElementById('state')?.textContent").await.expect("read") != "Idle" {
        assert!(Instant::now() < deadline, "the page never showed the agent");
        sleep(Duration::from_millis(50)).await;
    }
    handle.send(gate::Event::Ask(HOSTILE.to_owned())).await.expect("asked");
    let deadline = Instant::now() + Duration::from_secs(30);
    let page = loop {
        let page = browser.eval(READ).await.expect("read the page");
        if page["summary"].is_string() && page["note"].is_string() && page["tool"].is_string() {
            break page;
        }
        assert!(Instant::now() < deadline, "the page never showed it all: {page}");
        sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(page["pwned"], Value::Null, "nothing ran: {page}");
    assert_eq!(page["injected"], 0, "no element was made of the markup: {page}");
    for shown in ["name", "stream", "tool", "summary"] {
        assert_eq!(page[shown], HOSTILE, "{shown} is shown as written: {page}");
    }
    assert_eq!(page["note"], format!(" {HOSTILE}"), "{page}");
    let title = browser.eval("document.title").await.expect("title");
    assert_eq!(title, format!("{HOSTILE} · Asking"));

    // The index lists it by the same name, as text.
    browser.open(&inspector.url()).await.expect("open the index");
    let deadline = Instant::now() + Duration::from_secs(30);
    let index = "(() => ({ name: document.querySelector('#agents a')?.textContent ?? null, \
                 pwned: window.pwned === undefined ? null : window.pwned, \
                 injected: document.querySelectorAll('img, b, svg, script:not([src])').length }))()";
    let page = loop {
        let page = browser.eval(index).await.expect("read the index");
        if page["name"].is_string() {
            break page;
        }
        assert!(Instant::now() < deadline, "the index never listed the agent: {page}");
        sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(page, serde_json::json!({ "name": HOSTILE, "pwned": null, "injected": 0 }));
    handle.shutdown().await.expect("shutdown");
    inspector.shutdown().await;
}
