//! bob's typestate runner, stepped through the typestate view: a scripted
//! model asks to write two notes, a human approves each write (on stdin when
//! run in a terminal, automatically otherwise), the tools write the files in
//! a temporary directory, and the model answers. Stepped one step at a
//! time, the machine is snapshotted to JSON and resumed from it before
//! every step, as a process that suspends between steps would; then the
//! same run goes through in one call.
//!
//! ```text
//! cargo run --example typestate_runner
//! ```
//!
//! An invalid step is a compile error, not a run-time surprise:
//!
//! ```text
//! error[E0599]: no method named `approve` found for struct `Ready` in the current scope
//!   --> examples/typestate_runner.rs
//!    |
//!    |     ready.approve("approval-0".to_string());
//!    |           ^^^^^^^ method not found in `Ready`
//! ```

use agent_fsm::snapshot;
use agent_fsm_examples::bob::{
    Approval, Approver, AssistantMessage, Model, Runner, RunnerContext, ToolCall, ToolResult, Tools, answer,
    call_tools, run_to_completion, typed,
};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

/// Asks for two notes, then answers once their results are in.
struct ScriptedModel;

impl Model for ScriptedModel {
    fn reply(&mut self, ctx: &RunnerContext) -> AssistantMessage {
        if ctx.transcript.is_empty() {
            let note = |id: &str, text: &str| ToolCall {
                id: id.into(),
                name: "write_note".into(),
                arguments: serde_json::json!({ "text": text }),
            };
            call_tools(vec![note("1", "buy milk"), note("2", "call the plumber")])
        } else {
            answer(format!("wrote {} notes: {}", ctx.transcript.len(), summary(&ctx.transcript)))
        }
    }
}

fn summary(results: &[ToolResult]) -> String {
    results.iter().map(|r| r.content.as_str()).collect::<Vec<_>>().join(", ")
}

/// Writes notes as files in a directory.
struct NoteTools {
    dir: PathBuf,
}

impl Tools for NoteTools {
    fn run(&mut self, calls: &[ToolCall]) -> Vec<ToolResult> {
        calls
            .iter()
            .map(|call| {
                let path = self.dir.join(format!("note-{}.txt", call.id));
                // The model writes the arguments: a missing `text` is an error
                // result it can read, not a panic.
                let Some(text) = call.arguments["text"].as_str() else {
                    return ToolResult {
                        call_id: call.id.clone(),
                        content: "error: `text` (a string) is required".into(),
                        is_error: true,
                    };
                };
                match std::fs::write(&path, text) {
                    Ok(()) => {
                        ToolResult { call_id: call.id.clone(), content: path.display().to_string(), is_error: false }
                    }
                    Err(e) => ToolResult { call_id: call.id.clone(), content: format!("error: {e}"), is_error: true },
                }
            })
            .collect()
    }

    fn needs_approval(&self, call: &ToolCall) -> bool {
        call.name == "write_note"
    }
}

/// Asks on stdin in a terminal; approves everything otherwise.
struct Human;

impl Approver for Human {
    fn decide(&mut self, approval: &Approval) -> bool {
        if !std::io::stdin().is_terminal() {
            println!(
                "  approve {} ({} {})? yes (not a terminal)",
                approval.request_id, approval.call.name, approval.call.arguments
            );
            return true;
        }
        print!("  approve {} ({} {})? [Y/n] ", approval.request_id, approval.call.name, approval.call.arguments);
        // A prompt that cannot be shown, or an answer that cannot be read,
        // is a refusal, and says why.
        if let Err(e) = std::io::stdout().flush() {
            eprintln!("cannot show the prompt ({e}): refused");
            return false;
        }
        let mut line = String::new();
        if let Err(e) = std::io::stdin().lock().read_line(&mut line) {
            eprintln!("cannot read the answer ({e}): refused");
            return false;
        }
        !line.trim().eq_ignore_ascii_case("n")
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = tempfile::tempdir()?;
    let mut tools = NoteTools { dir: workspace.path().to_owned() };

    // Step by step, suspending (snapshot) and resuming between steps.
    println!("step by step:");
    let ready = typed::Ready::new(RunnerContext::new("write two notes", 5));
    let ready = suspend_and_resume::<typed::Ready>(ready.into_machine())?;
    let awaiting = match ready.infer(ScriptedModel.reply(&RunnerContext::new("write two notes", 5))) {
        typed::ReadyAfterInfer::AwaitingToolCall(awaiting, action) => {
            println!("  Ready -> AwaitingToolCall: {action:?}");
            awaiting
        }
        typed::ReadyAfterInfer::Finished(done, _) => {
            println!("  finished early: {:?}", done.reason());
            return Ok(());
        }
    };
    let awaiting = suspend_and_resume::<typed::AwaitingToolCall>(awaiting.into_machine())?;
    let (approving, action) = match awaiting.require_approval() {
        typed::AwaitingToolCallAfterRequireApproval::AwaitingApproval(approving, action) => (approving, action),
        typed::AwaitingToolCallAfterRequireApproval::Finished(..) => return Err("out of request ids".into()),
    };
    println!("  AwaitingToolCall -> AwaitingApproval: {action:?}");
    let mut approving = suspend_and_resume::<typed::AwaitingApproval>(approving.into_machine())?;
    let awaiting = loop {
        let Some(next) = approving.approvals().iter().find(|a| !a.approved).cloned() else {
            return Err("no approval pending".into());
        };
        if !Human.decide(&next) {
            match approving.deny(next.request_id) {
                typed::AwaitingApprovalAfterDeny::Finished(done, _) => {
                    println!("  denied: {:?}", done.reason());
                    return Ok(());
                }
                typed::AwaitingApprovalAfterDeny::AwaitingApproval(a, _) => {
                    approving = suspend_and_resume::<typed::AwaitingApproval>(a.into_machine())?;
                }
            }
            continue;
        }
        match approving.approve(next.request_id) {
            typed::AwaitingApprovalAfterApprove::AwaitingApproval(a, action) => {
                println!("  AwaitingApproval -> AwaitingApproval: {action:?}");
                approving = suspend_and_resume::<typed::AwaitingApproval>(a.into_machine())?;
            }
            typed::AwaitingApprovalAfterApprove::AwaitingToolCall(a, action) => {
                println!("  AwaitingApproval -> AwaitingToolCall: {action:?}");
                break a;
            }
        }
    };
    let awaiting = suspend_and_resume::<typed::AwaitingToolCall>(awaiting.into_machine())?;
    let results = tools.run(awaiting.pending_calls());
    let (ready, action) = awaiting.provide_tool_results(results);
    println!("  AwaitingToolCall -> Ready: {action:?}");
    let ready = suspend_and_resume::<typed::Ready>(ready.into_machine())?;
    let reply = ScriptedModel.reply(ready.context());
    match ready.infer(reply) {
        typed::ReadyAfterInfer::Finished(done, action) => {
            println!("  Ready -> Finished: {action:?}\n  {}", done.response())
        }
        typed::ReadyAfterInfer::AwaitingToolCall(..) => return Err("the script asked for more tools".into()),
    }

    // The same run in one call.
    println!("run to completion:");
    let done = run_to_completion(
        typed::Ready::new(RunnerContext::new("write two notes", 5)),
        &mut ScriptedModel,
        &mut tools,
        &mut Human,
    );
    println!("  {:?}: {}", done.reason(), done.response());
    for entry in std::fs::read_dir(workspace.path())? {
        let path = entry?.path();
        println!("  {} = {:?}", path.display(), std::fs::read_to_string(&path)?);
    }
    Ok(())
}

/// Serializes the machine, resumes it from the JSON, and views it typed.
fn suspend_and_resume<T: TryFrom<Runner, Error = Runner>>(machine: Runner) -> Result<T, Box<dyn std::error::Error>> {
    let json = snapshot::to_json(&machine)?;
    println!("  snapshot: {} bytes, state {}", json.len(), machine.state().name());
    let resumed: Runner = snapshot::from_json(&json)?;
    T::try_from(resumed).map_err(|m| format!("resumed in unexpected state {}", m.state().name()).into())
}
