//! The Sketch agent end to end: the sixteen-state Sketch machine driven by
//! the executor, with a scripted model, real tools, a real `git` check and
//! a real `rustfmt` run, in a fresh temporary git repository. No setup, no
//! network.
//!
//! ```text
//! cargo run --example sketch_agent
//! ```
//!
//! The model is asked to add a function to `src/lib.rs` and commit it. It
//! writes the file badly formatted (the `git` check finds no new commit),
//! then commits it with `git` (the check finds the commit, and `rustfmt`
//! reformats the file it changed), then answers. Every transition is
//! printed as it happens, transient checks included, with what the effects
//! publish indented below it; at the end, the file before and after, the
//! repository's log and the time spent in each state, from the runtime's
//! history.

use agent_fsm::runtime::Notification;
use agent_fsm_examples::sketch::{Budget, Sketch};
use agent_fsm_examples::sketch_agent::{
    DEMO_PROMPT, Output, ScriptedLlm, SketchEffects, Workspace, prepare_workspace, run_session,
};
use std::io::Write;
use std::sync::Arc;
use tokio::time::Instant;

/// One line per notification worth showing.
fn show(start: Instant, n: &Notification<Sketch, Output>) {
    let at = start.elapsed().as_secs_f64();
    match n {
        Notification::Transition(step) => {
            let event = step.event.map_or("(eventless)", |e| e.name());
            let action = step.action.map_or(String::new(), |a| format!("  / {a}"));
            println!("[{at:7.3}s] {} --{event}--> {}{action}", step.from, step.to);
        }
        Notification::Output(output) => match output {
            Output::Ready => println!("{:12}ready for input", ""),
            Output::Sent(what) => println!("{:12}to the model: {what}", ""),
            Output::ToolStarted { id, name, arguments } => {
                let input: String = arguments.to_string().chars().take(70).collect();
                println!("{:12}tool {id}: {name} {input}", "");
            }
            Output::Formatting(files) => println!("{:12}rustfmt on: {}", "", files.join(", ")),
            Output::Answer(text) => println!("{:12}answer: {text}", ""),
            Output::Cancelled(ids) => println!("{:12}cancelled: {}", "", ids.join(", ")),
            Output::BudgetExceeded(text) | Output::Error(text) | Output::Notice(text) => {
                println!("{:12}{text}", "");
            }
            Output::Queued(waiting) => println!("{:12}message queued ({waiting} waiting)", ""),
        },
        Notification::Unhandled(u) => println!("{:12}refused: {} + {} ({})", "", u.state, u.event, u.reason),
        _ => {}
    }
    if let Err(e) = std::io::stdout().flush() {
        eprintln!("stdout: {e}");
    }
}

/// `git args` in `dir`, its output.
fn git(dir: &std::path::Path, args: &[&str]) -> Result<String, Box<dyn std::error::Error>> {
    let output = std::process::Command::new("git").args(args).current_dir(dir).output()?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    prepare_workspace(dir.path()).await?;
    println!("workspace: {} (a fresh git repository)", dir.path().display());
    println!("prompt: {DEMO_PROMPT}\n");

    let effects = SketchEffects::new(Arc::new(ScriptedLlm::default()), Workspace::new(dir.path()));
    let budget = Budget { max_tokens: Some(100_000), max_cost_cents: Some(500) };
    let start = Instant::now();
    let report = run_session(effects, budget, &[DEMO_PROMPT], move |n| show(start, n)).await?;

    let lib = dir.path().join("src/lib.rs");
    println!("\nsrc/lib.rs as committed:\n{}", git(dir.path(), &["show", "HEAD:src/lib.rs"])?);
    println!("src/lib.rs after rustfmt:\n{}", std::fs::read_to_string(lib)?);
    println!("git log:\n{}", git(dir.path(), &["log", "--oneline"])?);
    println!("git status:\n{}", git(dir.path(), &["status", "--short"])?);

    let ctx = &report.context;
    println!(
        "{} hops, {} events, {} messages in the conversation, {} tokens and {} cents spent, ended in {}",
        report.hops.len(),
        report.events.len(),
        ctx.conversation.len(),
        ctx.spent.tokens(),
        ctx.spent.cost_cents,
        report.final_state
    );
    println!("time in each state (from the runtime's history):");
    for (state, entries, total) in &report.time_in_state {
        println!("  {state:<28} {entries:>3}x {:>9.3} ms", total.as_secs_f64() * 1e3);
    }
    Ok(())
}
