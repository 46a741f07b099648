//! The demo agent: the Loom machine driven by the executor, with real tools
//! in a fresh temporary workspace, and a scripted model (no setup, no
//! network) or a real one.
//!
//! ```text
//! cargo run --example coding_agent                                  # scripted, offline
//! OPENAI_API_KEY=sk-... cargo run --example coding_agent            # OpenAI
//! ANTHROPIC_API_KEY=sk-ant-... cargo run --example coding_agent     # Anthropic
//! cargo run --example coding_agent -- --provider openai --base-url http://localhost:11434/v1 --model qwen2.5-coder
//! cargo run --example coding_agent -- --store session.db           # durable: Ctrl-C, then run it again
//! ```
//!
//! Flags: `--provider openai|anthropic`, `--base-url URL`, `--model M`,
//! `--store PATH` (a durable session in a SQLite file, its workspace beside
//! it: stopped with Ctrl-C or killed, the same command continues it);
//! the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL`,
//! `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `AGENT_MODEL`. Any server
//! that speaks OpenAI's Chat Completions or Anthropic's Messages streaming
//! format works.
//!
//! The model is asked to fix a typo in `greeting.sh`. The scripted one lists
//! and reads the files (two tool calls at once), edits the script (a
//! mutating tool, so the post-tool hook runs), runs it to check (a shell
//! command, which can change files too: the hook runs again), and
//! reports. Every transition is printed as it happens, the model's text as
//! it streams (control characters other than newlines and tabs shown as
//! escapes, `\u{1b}`, so that a server cannot drive the terminal). At
//! the end: turns, transitions, tool calls and time in each state; the
//! exit status says whether the file was fixed (130 after a
//! Ctrl-C, which stops the agent and kills the command it is running).

use agent_fsm_examples::coding_agent::demo::run_demo;
use agent_fsm_examples::coding_agent::model::{USAGE, wants_help};
use std::process::ExitCode;

/// The exit status of a run stopped by Ctrl-C, as a shell reports one
/// killed by SIGINT.
const INTERRUPTED: u8 = 130;

// `pub(crate)`: tests/coding_agent_binary.rs runs this very `main` as
// its child process.
#[tokio::main]
pub(crate) async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if wants_help(&args) {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    // Errors are printed in their own words (`Display`), not as the
    // `Debug` form a `main` returning `Err` would print.
    let report = match run_demo(args, env_var, std::io::stdout()).await {
        Ok(report) => report,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    if report.interrupted {
        return ExitCode::from(INTERRUPTED);
    }
    // The session's point: the file on disk is fixed. Anything else is a
    // failure, and the exit status says so.
    if !report.fixed && !report.paused {
        eprintln!("error: the session ended without fixing greeting.sh");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The variable `name`, if it is set: one that is set but not valid
/// Unicode is left out, and reported rather than taken for unset.
fn env_var(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(value) => Some(value),
        Err(std::env::VarError::NotPresent) => None,
        Err(e @ std::env::VarError::NotUnicode(_)) => {
            eprintln!("{name} is left out: {e}");
            None
        }
    }
}
