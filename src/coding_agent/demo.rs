//! The demo session behind `cargo run --example coding_agent`: picks the
//! model (scripted, or a real one from flags and the environment, see
//! [`super::model`]), lays out the greeting-script workspace in a fresh
//! temporary directory, runs the session and writes what happens to `out`:
//! every transition, the tool calls, and the model's text as it streams.

use std::io::Write;
use std::sync::{Arc, Mutex};

use agent_fsm::runtime::Notification;
use agent_fsm::{Kind, StateMachine};

use tokio::time::Instant;

use super::durable::{SessionEnd, run_durable_session};
use super::inspect::InspectedSession;
use super::model::{ModelArgs, choose};
use super::{
    GREETING_WITH_TYPO, LoomEffects, Output, ScriptedLlm, Summary, Workspace, prepare_workspace, run_session_until,
};
use agent_fsm::store::Start;
use std::time::Duration;

/// The task both the scripted and a real model are given.
pub const TASK: &str = "Please fix the typo in greeting.sh and check that it works.";

/// `text` with its control characters but newlines and tabs shown as
/// escapes (`\u{1b}`): what the model or its server sends is printed to
/// a terminal, which must not take it for commands (clear the screen,
/// rewrite lines, set the clipboard).
fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let control = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(control) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars().map(|c| if control(c) { c.escape_unicode().to_string() } else { c.to_string() }).collect()
}

/// Writes notifications, the model's streamed text as it arrives.
struct Printer<W> {
    out: W,
    start: Instant,
    deltas: usize,
}

impl<W: Write> Printer<W> {
    fn end_text(&mut self) {
        if self.deltas > 0 {
            let _ = writeln!(self.out, "\"\n           CallingLlm --LlmEvent x{}--> CallingLlm", self.deltas);
            self.deltas = 0;
        }
    }

    /// Any Loom variant's notifications: the plain demo's and the
    /// inspected one's.
    fn show<M: StateMachine>(&mut self, n: &Notification<M, Output>) {
        let at = self.start.elapsed().as_secs_f64();
        match n {
            Notification::Output(Output::Text(text)) => {
                if self.deltas == 0 {
                    let _ = write!(self.out, "           model: \"");
                }
                self.deltas += 1;
                let _ = write!(self.out, "{}", printable(text));
            }
            // The text deltas' own hops: counted above.
            Notification::Transition(step)
                if step.from == step.to && step.action.map(Kind::name) == Some("DisplayMessage") => {}
            Notification::Transition(step) => {
                self.end_text();
                let (from, event, to, action) = step.names();
                let action = action.map_or(String::new(), |a| format!(" / {a}"));
                let _ = writeln!(self.out, "[{at:7.3}s] {from} --{}--> {to}{action}", event.unwrap_or("(eventless)"));
            }
            Notification::Output(Output::ToolStarted(call)) => {
                self.end_text();
                let _ = writeln!(self.out, "           tool: {}", printable(call));
            }
            Notification::Output(Output::ToolFinished(call)) => {
                let _ = writeln!(self.out, "           done: {}", printable(call));
            }
            Notification::Output(Output::Hook(what)) => {
                let _ = writeln!(self.out, "           {}", printable(what));
            }
            Notification::Output(Output::Error(e)) => {
                self.end_text();
                let _ = writeln!(self.out, "           error: {}", printable(e));
            }
            // Said, not skipped: what was missed may be tool calls (a
            // reply with more calls than the log holds), and the list above
            // must not pass for all of them.
            Notification::Lagged(missed) => {
                self.end_text();
                let _ = writeln!(self.out, "           ({missed} notifications missed: this output fell behind)");
            }
            Notification::Unhandled(u) => {
                let _ = writeln!(self.out, "           refused: {} + {} ({})", u.state, u.event.name(), u.reason);
            }
            _ => {}
        }
        let _ = self.out.flush();
    }
}

/// What a demo run ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoReport {
    /// The session's summary.
    pub summary: Summary,
    /// `greeting.sh` at the end.
    pub greeting: String,
    /// Whether the file was fixed.
    pub fixed: bool,
    /// Whether a durable session was stopped before its end (`--store`):
    /// running the same command again continues it.
    pub paused: bool,
    /// Whether a session that is not durable was stopped by Ctrl-C before
    /// its end: the agent was shut down, its running command killed.
    pub interrupted: bool,
}

/// Completes on Ctrl-C (SIGINT); never without a signal handler (no
/// terminal), so that the session then runs to its end.
async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// `greeting.sh` of the workspace at `root`, read as the agent's own
/// `read_file` reads it: resolved beneath the workspace, and only if it
/// is a regular file within the read limit. The model's commands may have
/// left anything under that name: a FIFO, which a plain read would wait
/// on for ever (Ctrl-C no longer ends the process once the demo listens
/// for it); a symlink to `/dev/zero`, read until memory runs out; or one
/// to a file outside the workspace, which the demo would print.
async fn read_greeting(root: &std::path::Path) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    let workspace = agent_fsm::tools::Workspace::open(root)?;
    Ok(workspace.read_file("greeting.sh").await?)
}

/// Runs the demo with `args` (flags, program name taken off) and the
/// environment read through `env`, writing to `out`. Ctrl-C stops the
/// agent, killing the command it is running: a durable session is then
/// [`paused`](DemoReport::paused), any other
/// [`interrupted`](DemoReport::interrupted).
///
/// # Errors
/// A bad flag or a missing setting ([`super::model::ModelError`]), an I/O
/// error laying out the workspace, the executor's error, or a
/// `greeting.sh` that the workspace's `read_file` refuses (not a regular
/// file, a symlink out of the workspace, too large, not UTF-8).
pub async fn run_demo<W: Write + Send + 'static>(
    args: impl IntoIterator<Item = String>,
    env: impl Fn(&str) -> Option<String>,
    out: W,
) -> Result<DemoReport, Box<dyn std::error::Error + Send + Sync>> {
    let args: ModelArgs = super::model::parse_args(args)?;
    let choice = choose(&args, env)?;
    if let Some(addr) = &args.inspect {
        if args.store.is_some() {
            return Err("--inspect and --store cannot be combined".into());
        }
        return run_inspected(addr, choice.as_ref(), out).await;
    }
    // A durable session keeps its workspace beside its store; any other
    // gets a fresh one, gone at the end.
    let temp = match &args.store {
        Some(_) => None,
        None => Some(tempfile::tempdir()?),
    };
    let root = match (&args.store, &temp) {
        (Some(store), _) => super::durable::ensure_workspace(store)?,
        (None, Some(dir)) => {
            prepare_workspace(dir.path())?;
            dir.path().to_path_buf()
        }
        (None, None) => return Err("no workspace".into()),
    };
    let printer = Arc::new(Mutex::new(Printer { out, start: Instant::now(), deltas: 0 }));
    // A durable session's workspace is the one its earlier runs worked in.
    let before = read_greeting(&root).await?;
    let effects = match &choice {
        Some(choice) => LoomEffects::new(Arc::clone(&choice.llm), choice.model.clone(), Workspace::new(&root))?,
        None => LoomEffects::new(Arc::new(ScriptedLlm::default()), "scripted", Workspace::new(&root))?,
    };
    if let Ok(mut p) = printer.lock() {
        let model = match &choice {
            Some(c) => format!("{} via {} at {}", c.model, c.provider, c.base_url.as_deref().unwrap_or("its own API")),
            None => "scripted (set OPENAI_API_KEY or ANTHROPIC_API_KEY, or pass --provider, for a real one)".to_owned(),
        };
        let _ = writeln!(p.out, "model: {model}");
        let _ = writeln!(p.out, "workspace: {}", root.display());
        let _ = writeln!(p.out, "greeting.sh before: {before:?}\n");
        p.start = Instant::now();
    }
    let sink = Arc::clone(&printer);
    if let Some(store) = &args.store {
        return run_durable(store, &root, effects, printer, sink).await;
    }
    // Ctrl-C stops the agent rather than the process, so that the command
    // it is running is killed and not left behind.
    let (summary, interrupted) = run_session_until(
        effects,
        &[TASK],
        move |n| {
            if let Ok(mut p) = sink.lock() {
                p.show(n);
            }
        },
        ctrl_c(),
    )
    .await?;
    let greeting = read_greeting(&root).await?;
    let fixed = greeting == GREETING_WITH_TYPO.replace("wrold", "world");
    if let Ok(mut p) = printer.lock() {
        p.end_text();
        if interrupted {
            let _ =
                writeln!(p.out, "\ninterrupted (Ctrl-C): the agent was stopped, and any command it was running killed");
        }
        let _ = writeln!(p.out, "\ngreeting.sh after: {greeting:?}");
        let _ = writeln!(
            p.out,
            "\n{} turn, {} transitions, {} tool calls, ended in {}",
            summary.turns, summary.transitions, summary.tool_calls, summary.final_state
        );
        let _ = writeln!(p.out, "time in each state:");
        for (state, entries, total) in &summary.time_in_state {
            let _ = writeln!(p.out, "  {state:<24} {entries:>3}x {:>8.3}s", total.as_secs_f64());
        }
        let _ = p.out.flush();
    }
    Ok(DemoReport { summary, greeting, fixed, paused: false, interrupted })
}

/// The demo as a durable session kept in `store` (see [`super::durable`]):
/// Ctrl-C pauses it, and the same command continues it.
async fn run_durable<W: Write + Send + 'static>(
    store: &std::path::Path,
    root: &std::path::Path,
    effects: LoomEffects,
    printer: Arc<Mutex<Printer<W>>>,
    sink: Arc<Mutex<Printer<W>>>,
) -> Result<DemoReport, Box<dyn std::error::Error + Send + Sync>> {
    let stop = ctrl_c();
    let end = run_durable_session(
        store,
        effects,
        TASK,
        move |n| {
            if let Ok(mut p) = sink.lock() {
                p.show(n);
            }
        },
        stop,
    )
    .await?;
    let greeting = read_greeting(root).await?;
    let fixed = greeting == GREETING_WITH_TYPO.replace("wrold", "world");
    if let Ok(mut p) = printer.lock() {
        p.end_text();
        let started = |start: &Start| match start {
            Start::New => "a new session".to_owned(),
            Start::Resumed { last } => format!("a session continued after its step {last}"),
            _ => "a session".to_owned(),
        };
        match &end {
            SessionEnd::Complete { start, conversation, .. } => {
                let _ = writeln!(p.out, "\n{}: complete, {} messages", started(start), conversation.len());
            }
            SessionEnd::Paused { start, .. } => {
                let _ = writeln!(
                    p.out,
                    "\n{}: paused; run the same command again to continue (store: {})",
                    started(start),
                    store.display()
                );
            }
        }
        let (SessionEnd::Complete { summary, .. } | SessionEnd::Paused { summary, .. }) = &end;
        let _ = writeln!(
            p.out,
            "this run: {} transitions, {} tool calls, ended in {}",
            summary.transitions, summary.tool_calls, summary.final_state
        );
        let _ = writeln!(p.out, "greeting.sh now: {greeting:?}");
        let _ = p.out.flush();
    }
    let paused = matches!(end, SessionEnd::Paused { .. });
    let (SessionEnd::Complete { summary, .. } | SessionEnd::Paused { summary, .. }) = end;
    Ok(DemoReport { summary, greeting, fixed, paused, interrupted: false })
}

/// The scripted model's pace under the inspector: a word every 120 ms,
/// and a second and a half before each tool and the hook, so that a
/// person can follow each state on the page. A real model paces itself.
const INSPECT_WORD: Duration = Duration::from_millis(120);
const INSPECT_PACE: Duration = Duration::from_millis(1500);

/// The demo under the inspector on `addr` (see [`super::inspect`]): prints
/// the page's URL and every hop, waits for the turn to end (the edit and
/// the command that checks it wait for the page's approval), stops the agent, and keeps serving the
/// finished session until Ctrl-C.
async fn run_inspected<W: Write + Send + 'static>(
    addr: &str,
    choice: Option<&super::model::Choice>,
    out: W,
) -> Result<DemoReport, Box<dyn std::error::Error + Send + Sync>> {
    let (llm, model, pace): (Arc<dyn agent_fsm::llm::Provider>, &str, Duration) = match choice {
        Some(c) => (Arc::clone(&c.llm), &c.model, Duration::ZERO),
        None => (Arc::new(ScriptedLlm { delay: INSPECT_WORD }), "scripted", INSPECT_PACE),
    };
    let session = InspectedSession::start(addr, llm, model, pace).await?;
    let root = session.workspace.path().to_path_buf();
    let mut printer = Printer { out, start: Instant::now(), deltas: 0 };
    let _ = writeln!(printer.out, "inspector: {}", session.url);
    let _ = writeln!(printer.out, "(all agents: {})", session.inspector.url());
    let _ = writeln!(printer.out, "workspace: {}", root.display());
    let _ = writeln!(printer.out, "the edit and the check wait for approval on the page\n");
    let _ = printer.out.flush();
    let mut notifications = session.handle.subscribe();
    session.begin(TASK).await?;
    // The turn ends back in `WaitingForUserInput` (the edit and the check
    // approved, or one denied, on the page).
    let mut tool_calls = 0;
    // Ctrl-C before the turn is over stops the agent (killing a running
    // command) and the program, instead of leaving the command behind.
    let turn = async {
        while let Some(n) = notifications.recv().await {
            printer.show(&n);
            tool_calls += usize::from(matches!(n, Notification::Output(Output::ToolStarted(_))));
            if matches!(&n, Notification::Transition(step) if step.to.name() == "WaitingForUserInput") {
                break;
            }
        }
    };
    let interrupted = tokio::select! {
        () = turn => false,
        () = ctrl_c() => true,
    };
    let final_state = session.handle.shutdown().await?.name();
    let history = session.handle.history().await?;
    while let Some(n) = notifications.recv().await {
        printer.show(&n);
    }
    let greeting = read_greeting(&root).await?;
    let fixed = greeting == GREETING_WITH_TYPO.replace("wrold", "world");
    let summary = Summary::of(&history, 1, tool_calls, final_state);
    printer.end_text();
    let _ = writeln!(printer.out, "\ngreeting.sh after: {greeting:?}");
    let _ = writeln!(printer.out, "{} transitions, ended in {final_state}", summary.transitions);
    if interrupted {
        let _ =
            writeln!(printer.out, "interrupted (Ctrl-C): the agent was stopped, and any command it was running killed");
    } else {
        let _ = writeln!(printer.out, "the finished session stays on {} until Ctrl-C", session.url);
        let _ = printer.out.flush();
        // Without a signal handler (no terminal) there is nothing to wait for.
        let _ = tokio::signal::ctrl_c().await;
    }
    let _ = printer.out.flush();
    session.inspector.shutdown().await;
    Ok(DemoReport { summary, greeting, fixed, paused: false, interrupted })
}
