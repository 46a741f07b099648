//! The Shadow runtime agent, end to end: the Shadow machine driven by the
//! executor, a scripted model, real tools in a fresh temporary workspace,
//! a subagent, a permission dialog and a question. No setup, no network.
//!
//! ```text
//! cargo run --example runtime_agent
//! cargo run --example runtime_agent -- --store /tmp/shadow.sqlite
//! ```
//!
//! The user asks for release notes. The model writes `NOTES.md` (the tool
//! asks for permission: this program plays the user and approves,
//! remembering the answer), reads `CHANGELOG.md` (allowed by rule), hands
//! the summary to a subagent (a child machine under the session id
//! `main/toolu_3`, on the same executor), asks the user for the version,
//! writes the notes again (no question this time: the answer was
//! remembered), counts their lines with `run_command` (asks; approved) and
//! reports.
//!
//! Every state change of every agent is printed as one line as it happens,
//! with the snake_case JSON a UI receives (`serde_json::to_string(&state)`),
//! tagged with the agent's session id; the model's streamed text is shown
//! once per reply.
//!
//! With `--store PATH` the session is durable: every agent's steps are
//! written to the SQLite file `PATH` (created if missing), and the
//! workspace is kept beside it in `PATH.workspace` (laid out only if
//! missing). Ctrl-C pauses the session; the same command continues it, the
//! subagent with its parent. A permission or a question asked before the
//! pause is still pending after it, with nothing printed to announce it
//! again: this program finds it in the agents' states and answers it.
//! Without `--store`, Ctrl-C stops the session and the workspace is gone.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use agent_fsm::store::SqliteStore;
use agent_fsm_examples::coding_agent::Workspace;
use agent_fsm_examples::coding_agent::durable::workspace_of;
use agent_fsm_examples::shadow::{Permission, ShadowEvent, ShadowState};
use agent_fsm_examples::shadow_agent::{AgentRuntime, AgentUpdate, Output, ScriptedLlm, prepare_workspace};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

/// The version the user gives when asked.
const VERSION: &str = "1.2.0";

/// What the user asks for.
const PROMPT: &str = "Draft the release notes for the next version";

/// What `--help` prints.
const USAGE: &str = "\
Usage: runtime_agent [--store PATH]

  --store PATH  a durable session: every agent's steps are written to the
                SQLite file PATH (created if missing), the workspace kept
                beside it in PATH.workspace. Ctrl-C pauses the session; the
                same command continues it.
  -h, --help    print this and exit";

/// The command line: `--store PATH`, or nothing.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Option<PathBuf>>, String> {
    let mut store = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--store" => store = Some(PathBuf::from(args.next().ok_or("--store needs a path")?)),
            other => return Err(format!("unknown argument `{other}`\n\n{USAGE}")),
        }
    }
    Ok(Some(store))
}

/// The workspace: beside the store (laid out if missing), or a fresh
/// temporary one (kept alive by the returned guard).
fn workspace(store: Option<&Path>) -> std::io::Result<(PathBuf, Option<tempfile::TempDir>)> {
    match store {
        Some(store) => {
            let dir = workspace_of(store);
            if !dir.exists() {
                std::fs::create_dir_all(&dir)?;
                prepare_workspace(&dir)?;
            }
            Ok((dir, None))
        }
        None => {
            let temp = tempfile::tempdir()?;
            prepare_workspace(temp.path())?;
            Ok((temp.path().to_path_buf(), Some(temp)))
        }
    }
}

/// Plays the user: answers every permission request (allowed, remembered)
/// and question pending in an agent's state that this process has not
/// answered yet. Reading the states rather than the outputs also finds
/// the requests asked before a restart, which nothing announces again.
async fn answer_pending(
    runtime: &AgentRuntime,
    answered: &mut HashSet<(String, String)>,
    printer: &mut Printer,
) -> Result<(), Box<dyn std::error::Error>> {
    for session in runtime.sessions() {
        let Some(agent) = runtime.get(&session) else { continue };
        // Err: the agent stopped meanwhile; nothing to answer.
        let Ok(state) = agent.state().await else { continue };
        let (request_id, reply) = match state {
            ShadowState::WaitingForPermission { request_id, tool_name, .. } => {
                let line = format!("  user: allow {tool_name} ({request_id}), remember for the session");
                let reply =
                    ShadowEvent::PermissionReply { request_id: request_id.clone(), allowed: true, remember: true };
                (request_id, (line, reply))
            }
            ShadowState::WaitingForUserInput { request_id } => {
                let line = format!("  user: answers {VERSION:?} ({request_id})");
                let answers = vec![VERSION.to_owned()];
                let reply = ShadowEvent::QuestionAnswered { request_id: request_id.clone(), answers };
                (request_id, (line, reply))
            }
            _ => continue,
        };
        if answered.insert((session.clone(), request_id)) {
            let (line, reply) = reply;
            printer.line(&session, &line);
            agent.send(reply).await?;
        }
    }
    Ok(())
}

/// Prints updates, one line each, folding streamed text per agent.
struct Printer {
    start: Instant,
    streamed: HashMap<String, String>,
}

impl Printer {
    fn line(&self, session: &str, text: &str) {
        let at = self.start.elapsed().as_secs_f64();
        println!("[{at:6.3}s] {session:<13} {text}");
        if let Err(e) = std::io::stdout().flush() {
            eprintln!("stdout: {e}");
        }
    }

    fn flush(&mut self, session: &str) {
        if let Some(text) = self.streamed.remove(session)
            && !text.trim().is_empty()
        {
            self.line(session, &format!("  model: {:?}", text.trim()));
        }
    }

    fn show(&mut self, update: &AgentUpdate) -> Result<(), serde_json::Error> {
        let session = &*update.session_id;
        if let Output::Text(text) = &update.output {
            self.streamed.entry(session.to_owned()).or_default().push_str(text);
            return Ok(());
        }
        if let Output::Response(_) = &update.output {
            // The answer is the streamed text, already shown with the
            // state change that came first.
            self.streamed.remove(session);
            return Ok(());
        }
        self.flush(session);
        let text = match &update.output {
            Output::StateChanged { from, action, state } => {
                format!("{from} -> {} / {action}  {}", state.name(), serde_json::to_string(state)?)
            }
            Output::Text(_) | Output::Response(_) => return Ok(()),
            Output::ToolStarted(call) => format!("  tool {} {} ({})", call.name, call.arguments, call.id),
            Output::PermissionRequested { request_id, call } => {
                format!("  permission asked ({request_id}): {} {} ({})", call.name, call.arguments, call.id)
            }
            Output::Question { request_id, questions } => format!("  question ({request_id}): {questions}"),
            Output::SubAgentSpawned { session_id, prompt } => format!("  subagent {session_id} spawned: {prompt:?}"),
            Output::PermissionDenied(tool) => format!("  permission denied: {tool}"),
            Output::Interrupted => "  interrupted".to_owned(),
            Output::NothingToInterrupt => "  nothing to interrupt".to_owned(),
            Output::Error(message) => format!("  error: {message}"),
            Output::Rejected(why) => format!("  refused: {why}"),
            Output::InputDeferred(text) => format!("  input kept for after the turn: {text:?}"),
            Output::Stopped => "  stopped".to_owned(),
        };
        self.line(session, &text);
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(store) = parse_args(std::env::args().skip(1))? else {
        println!("{USAGE}");
        return Ok(());
    };
    let (root, _temp) = workspace(store.as_deref())?;
    println!("workspace: {}", root.display());
    println!("rules: read_file and Task allowed; every other tool asks\n");

    let mut runtime = AgentRuntime::new(ScriptedLlm::default(), Workspace::new(&root));
    if let Some(path) = &store {
        println!("store: {}", path.display());
        runtime = runtime.with_store(Arc::new(SqliteStore::open(path)?));
    }
    let mut updates = runtime.subscribe();
    // From the store if it holds the session: it continues where it was.
    let main = runtime.spawn("main", &[("read_file", Permission::Allow), ("Task", Permission::Allow)])?;
    let mut printer = Printer { start: Instant::now(), streamed: HashMap::new() };

    let (state, started) = main.inspect(|m| (m.state().clone(), !m.context().conversation.is_empty())).await?;
    if started {
        printer.line("main", &format!("continuing the session in {}", serde_json::to_string(&state)?));
    } else {
        printer.line("main", &format!("user: {PROMPT:?}  {}", serde_json::to_string(&ShadowState::Idle)?));
        main.send(ShadowEvent::UserInput(PROMPT.to_owned())).await?;
    }

    // Play the user (approve every permission request, remembering the
    // answer; answer the question) until the main agent rests, or Ctrl-C.
    let mut answered = HashSet::new();
    let mut rested = started && matches!(state, ShadowState::Idle | ShadowState::Done | ShadowState::Error { .. });
    let mut paused = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    if !rested {
        answer_pending(&runtime, &mut answered, &mut printer).await?;
    }
    while !rested {
        let update = tokio::select! {
            update = updates.recv() => update,
            signal = &mut ctrl_c => {
                signal?;
                paused = true;
                break;
            }
        };
        let update = match update {
            Ok(update) => update,
            Err(RecvError::Lagged(missed)) => {
                println!("(missed {missed} updates)");
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        printer.show(&update)?;
        match &update.output {
            Output::StateChanged {
                state: ShadowState::Idle | ShadowState::Done | ShadowState::Error { .. }, ..
            } if &*update.session_id == "main" => rested = true,
            // A request's state change comes before the output that shows
            // it: answer after that one, so the lines read in order.
            Output::Text(_) | Output::StateChanged { .. } => {}
            _ => answer_pending(&runtime, &mut answered, &mut printer).await?,
        }
    }
    let history = main.history().await?;

    // Stop every agent (with a store, a pause: nothing of it is written);
    // print what that changed.
    let outcomes = runtime.shutdown_all().await;
    loop {
        match updates.try_recv() {
            Ok(update) => printer.show(&update)?,
            Err(TryRecvError::Lagged(missed)) => println!("(missed {missed} updates)"),
            Err(_) => break,
        }
    }
    printer.flush("main");

    if paused {
        match &store {
            Some(path) => println!(
                "\npaused; run the same command again to continue (store: {}, workspace: {})",
                path.display(),
                root.display()
            ),
            None => println!("\nstopped (without --store, a stopped session cannot continue)"),
        }
        return Ok(());
    }
    match std::fs::read_to_string(root.join("NOTES.md")) {
        Ok(notes) => println!("\nNOTES.md:\n{notes}"),
        Err(error) => println!("\nNOTES.md: {error}"),
    }
    let changes = history.transitions().filter(|t| t.from != t.to).count();
    println!("main: {} hops, {changes} changes of state; time in each state:", history.transitions().len());
    for time in history.time_in_state() {
        println!("  {:<22} {:>3}x {:>8.3}s", time.state, time.entries, time.total.as_secs_f64());
    }
    for (session, outcome) in outcomes {
        println!("{session} stopped in {}", outcome?);
    }
    Ok(())
}
