//! The Shadow runtime agent, end to end: the Shadow machine driven by the
//! executor, a scripted model, real tools in a fresh temporary workspace,
//! a subagent, a permission dialog and a question. No setup, no network.
//!
//! ```text
//! cargo run --example runtime_agent
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

use std::collections::HashMap;
use std::io::Write;
use std::time::Instant;

use agent_fsm_examples::coding_agent::Workspace;
use agent_fsm_examples::shadow::{Permission, ShadowEvent, ShadowState};
use agent_fsm_examples::shadow_agent::{AgentRuntime, AgentUpdate, Output, ScriptedLlm, prepare_workspace};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

/// The version the user gives when asked.
const VERSION: &str = "1.2.0";

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
    let dir = tempfile::tempdir()?;
    prepare_workspace(dir.path())?;
    println!("workspace: {}", dir.path().display());
    println!("rules: read_file and Task allowed; every other tool asks\n");

    let runtime = AgentRuntime::new(ScriptedLlm::default(), Workspace::new(dir.path()));
    let mut updates = runtime.subscribe();
    let main = runtime.spawn("main", &[("read_file", Permission::Allow), ("Task", Permission::Allow)])?;
    let mut printer = Printer { start: Instant::now(), streamed: HashMap::new() };

    let prompt = "Draft the release notes for the next version";
    printer.line("main", &format!("user: {prompt:?}  {}", serde_json::to_string(&ShadowState::Idle)?));
    main.send(ShadowEvent::UserInput(prompt.to_owned())).await?;

    // Play the user: approve every permission request (remembering the
    // answer), answer the question, until the main agent rests.
    loop {
        let update = match updates.recv().await {
            Ok(update) => update,
            Err(RecvError::Lagged(missed)) => {
                println!("(missed {missed} updates)");
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        printer.show(&update)?;
        let session = &*update.session_id;
        match update.output {
            Output::PermissionRequested { request_id, call } => {
                printer.line(session, &format!("  user: allow {} ({request_id}), remember for the session", call.name));
                let agent = runtime.get(session).ok_or("the asking agent is gone")?;
                agent.send(ShadowEvent::PermissionReply { request_id, allowed: true, remember: true }).await?;
            }
            Output::Question { request_id, .. } => {
                printer.line(session, &format!("  user: answers {VERSION:?} ({request_id})"));
                let agent = runtime.get(session).ok_or("the asking agent is gone")?;
                let answers = vec![VERSION.to_owned()];
                agent.send(ShadowEvent::QuestionAnswered { request_id, answers }).await?;
            }
            Output::StateChanged {
                state: ShadowState::Idle | ShadowState::Done | ShadowState::Error { .. }, ..
            } if session == "main" => {
                break;
            }
            _ => {}
        }
    }
    let history = main.history().await?;

    // Stop every agent; print what that changed.
    let outcomes = runtime.shutdown_all().await;
    loop {
        match updates.try_recv() {
            Ok(update) => printer.show(&update)?,
            Err(TryRecvError::Lagged(missed)) => println!("(missed {missed} updates)"),
            Err(_) => break,
        }
    }
    printer.flush("main");

    println!("\nNOTES.md:\n{}", std::fs::read_to_string(dir.path().join("NOTES.md"))?);
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
