//! The demo agent: the Loom machine driven by the executor, with a scripted
//! model and real tools, in a fresh temporary workspace. No setup, no
//! network.
//!
//! ```text
//! cargo run --example coding_agent
//! ```
//!
//! The model is asked to fix a typo in `greeting.sh`. It lists and reads the
//! files (two tool calls at once), edits the script (a mutating tool, so the
//! post-tool hook runs), runs it to check, and reports. Every transition is
//! printed as it happens; consecutive streamed deltas are shown on one line.
//! At the end: turns, transitions, tool calls and time in each state.
//!
//! The model is behind `agent_fsm_examples::coding_agent::Llm`; a real
//! provider is another implementation of that trait, with no change to the
//! machine or the executor.

use agent_fsm::runtime::{Notification, RetryPolicy};
use agent_fsm_examples::coding_agent::{
    GREETING_WITH_TYPO, LoomEffects, Output, ScriptedLlm, Workspace, prepare_workspace, run_session,
};
use std::io::Write;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

/// Prints notifications, folding runs of streamed deltas into one line.
struct Printer {
    start: Instant,
    streamed: String,
    deltas: usize,
}

impl Printer {
    fn flush(&mut self) {
        if self.deltas > 0 {
            println!("           CallingLlm --LlmEvent x{}--> CallingLlm   \"{}\"", self.deltas, self.streamed.trim());
            self.streamed.clear();
            self.deltas = 0;
        }
    }

    fn show(&mut self, n: &Notification<Output>) {
        let at = self.start.elapsed().as_secs_f64();
        match n {
            Notification::Output(Output::Text(text)) => self.streamed.push_str(text),
            Notification::Transition(step) if step.from == step.to && step.action == Some("DisplayMessage") => {
                self.deltas += 1;
            }
            Notification::Transition(step) => {
                self.flush();
                let event = step.event.unwrap_or("(eventless)");
                let action = step.action.map_or(String::new(), |a| format!(" / {a}"));
                println!("[{at:7.3}s] {} --{event}--> {}{action}", step.from, step.to);
            }
            Notification::Output(Output::ToolStarted(call)) => println!("           tool: {call}"),
            Notification::Output(Output::Hook(what)) => println!("           {what}"),
            Notification::Output(Output::Error(e)) => println!("           error: {e}"),
            Notification::Unhandled(u) => println!("           refused: {} + {} ({})", u.state, u.event, u.reason),
            _ => {}
        }
        let _ = std::io::stdout().flush();
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    prepare_workspace(dir.path())?;
    println!("workspace: {}", dir.path().display());
    println!("greeting.sh before: {:?}\n", std::fs::read_to_string(dir.path().join("greeting.sh"))?);

    let effects = LoomEffects {
        llm: Arc::new(ScriptedLlm::default()),
        workspace: Arc::new(Workspace::new(dir.path())),
        retry: RetryPolicy::new(),
    };
    let printer = Arc::new(Mutex::new(Printer { start: Instant::now(), streamed: String::new(), deltas: 0 }));
    let sink = Arc::clone(&printer);
    let summary = run_session(effects, &["Please fix the typo in greeting.sh and check that it works."], move |n| {
        if let Ok(mut p) = sink.lock() {
            p.show(n);
        }
    })
    .await?;
    if let Ok(mut p) = printer.lock() {
        p.flush();
    }

    let after = std::fs::read_to_string(dir.path().join("greeting.sh"))?;
    println!("\ngreeting.sh after: {after:?}");
    println!(
        "\n{} turn, {} transitions, {} tool calls, ended in {}",
        summary.turns, summary.transitions, summary.tool_calls, summary.final_state
    );
    println!("time in each state:");
    for (state, entries, total) in &summary.time_in_state {
        println!("  {state:<24} {entries:>3}x {:>8.3}s", total.as_secs_f64());
    }
    // The session's point: the file on disk is fixed. Anything else is a
    // failure, and the exit status says so.
    if after != GREETING_WITH_TYPO.replace("wrold", "world") {
        return Err("the session ended without fixing greeting.sh".into());
    }
    Ok(())
}
