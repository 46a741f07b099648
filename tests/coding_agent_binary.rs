//! The demo's own `main` (examples/coding_agent.rs) run as a child process
//! against a loopback server speaking OpenAI's streaming format.
//!
//! Stopped with a real SIGINT, as Ctrl-C in a terminal would, in the middle
//! of a command the model asked for and in the middle of the model's
//! reply: each time the child exits with 130 after saying so, the
//! command's processes (the shell and what it left in the background) are
//! gone, and so is the temporary workspace; under the inspector
//! (`--inspect`) as well.
//!
//! Given a bad flag or setting, it says what is wrong in words on stderr
//! and exits with 1.
//!
//! Its own `main`: the test binary is also the demo (run with `DEMO_CHILD`
//! set), so the child is the example's `main` itself, not a copy of it.

#[path = "../examples/coding_agent.rs"]
mod demo_binary;
#[path = "../agent-fsm/tests/support/replay.rs"]
mod replay;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio, Termination};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use replay::{ReplayServer, Reply};
use serde_json::{Value, json};

/// How long any one wait may take before the test fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(30);

/// How long a process sent SIGKILL may take to be gone (the command's own
/// `sleep 60` outlives it if it was never sent one).
const KILLED: Duration = Duration::from_secs(5);

fn chunk(delta: &Value, finish_reason: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    });
    format!("data: {body}\n\n")
}

/// A reply with `text` and one `run_command` call of `command`.
fn run_command_reply(text: &str, command: &str) -> Reply {
    let arguments = json!({ "command": command }).to_string();
    let mut sse = chunk(&json!({"role": "assistant", "content": text}), None);
    sse += &chunk(
        &json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "run_command", "arguments": arguments}}]}),
        None,
    );
    sse += &chunk(&json!({}), Some("tool_calls"));
    sse += "data: [DONE]\n\n";
    Reply::events(&sse)
}

/// The demo as a child, talking to `server`, its stdout collected.
struct Demo {
    child: Child,
    out: Arc<Mutex<Vec<u8>>>,
    /// The thread copying its stdout into `out`, until the pipe's end.
    reader: std::thread::JoinHandle<()>,
}

impl Demo {
    fn start(server: &ReplayServer) -> Demo {
        Demo::with_args(&["--provider", "openai", "--base-url", &format!("{}/v1", server.url()), "--model", "m"])
    }

    fn with_args(args: &[&str]) -> Demo {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut child = Command::new(exe)
            .args(args)
            .env("DEMO_CHILD", "1")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("AGENT_MODEL")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the demo starts");
        let out = Arc::new(Mutex::new(Vec::new()));
        let mut stdout = child.stdout.take().expect("stdout");
        let sink = Arc::clone(&out);
        let reader = std::thread::spawn(move || {
            let mut buf = [0; 4096];
            while let Ok(n @ 1..) = stdout.read(&mut buf) {
                sink.lock().expect("output").extend_from_slice(&buf[..n]);
            }
        });
        Demo { child, out, reader }
    }

    fn printed(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().expect("output")).into_owned()
    }

    /// Waits until `ready` holds, failing after [`LIMIT`].
    fn wait_until(&mut self, what: &str, ready: impl Fn(&Demo) -> bool) {
        let start = Instant::now();
        while !ready(self) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the demo exited ({status}) before {what}:\n{}", self.printed());
            }
            assert!(start.elapsed() < LIMIT, "{what} never happened:\n{}", self.printed());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Ctrl-C: SIGINT to the demo, then its exit status (killed, and the
    /// test failed, if it does not exit in time).
    fn interrupt(mut self) -> (ExitStatus, String) {
        let sent = Command::new("kill").args(["-INT", &self.child.id().to_string()]).status().expect("kill runs");
        assert!(sent.success(), "SIGINT was not sent");
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("the demo's status") {
                // Its stdout closes with it: the reader has everything once
                // it reaches the pipe's end (however late it is scheduled).
                let read = Instant::now();
                while !self.reader.is_finished() {
                    assert!(read.elapsed() < LIMIT, "the demo's stdout stayed open after it exited");
                    std::thread::sleep(Duration::from_millis(10));
                }
                return (status, self.printed());
            }
            if start.elapsed() > LIMIT {
                let _ = self.child.kill();
                panic!("the demo did not exit after Ctrl-C:\n{}", self.printed());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Demo {
    /// A demo still running when its test fails is killed: left behind (the
    /// inspector's waits for Ctrl-C for good), it would hold the output the
    /// test run writes to, and so the run, open.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Whether process `pid` is still running (a zombie waiting for its
/// parent's reaper is not).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's name, which is in parentheses.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The workspace the demo printed that it works in.
fn workspace(printed: &str) -> &Path {
    let line = printed.lines().find_map(|l| l.strip_prefix("workspace: ")).expect("the demo names its workspace");
    Path::new(line)
}

fn ctrl_c_during_a_command_kills_it_and_its_background_children(runtime: &tokio::runtime::Runtime) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let pids = dir.path().join("pids");
    // The shell's pid (its process group's id), then a background child's.
    let command = format!("echo $$ > {0}.tmp; sleep 60 & echo $! >> {0}.tmp; mv {0}.tmp {0}; sleep 60", pids.display());
    let server = runtime.block_on(ReplayServer::start(vec![run_command_reply("Running it. ", &command)]));
    let mut demo = Demo::start(&server);
    demo.wait_until("the command started", |_| pids.exists());
    let started: Vec<u32> =
        std::fs::read_to_string(&pids).expect("the pids").lines().map(|l| l.trim().parse().expect("a pid")).collect();
    assert_eq!(started.len(), 2, "{started:?}");
    assert!(started.iter().all(|&pid| running(pid)), "the command runs");

    let (status, printed) = demo.interrupt();
    // Killed by the demo with SIGKILL, which the kernel carries out soon
    // but not at once: each gets a few seconds to be gone.
    let killed = Instant::now();
    let alive = loop {
        let alive: Vec<u32> = started.iter().copied().filter(|&pid| running(pid)).collect();
        if alive.is_empty() || killed.elapsed() > KILLED {
            break alive;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Whatever the outcome, leave nothing behind.
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", started[0])]).status();
    assert!(alive.is_empty(), "the command's processes {alive:?} outlived the demo:\n{printed}");
    assert_eq!(status.code(), Some(130), "the demo's exit after Ctrl-C ({status}):\n{printed}");
    assert!(printed.contains("interrupted (Ctrl-C)"), "{printed}");
    assert!(!workspace(&printed).exists(), "the temporary workspace is left behind:\n{printed}");
    // The model was asked once: the interrupted command went nowhere.
    assert_eq!(server.requests().len(), 1);
}

fn ctrl_c_during_the_models_reply_stops_the_demo(runtime: &tokio::runtime::Runtime) {
    let mut sse = chunk(&json!({"role": "assistant", "content": ""}), None);
    sse += &chunk(&json!({"content": "Thinking "}), None);
    sse += &chunk(&json!({"content": "about it"}), None);
    // Two words, then the server goes quiet with the connection open.
    let server = runtime.block_on(ReplayServer::start(vec![Reply::events(&sse).stalled_after(3)]));
    let mut demo = Demo::start(&server);
    demo.wait_until("the reply began", |d| d.printed().contains("model: \"Thinking about it"));

    let (status, printed) = demo.interrupt();
    assert_eq!(status.code(), Some(130), "the demo's exit after Ctrl-C ({status}):\n{printed}");
    // The half reply's line is closed before the demo says what happened.
    assert!(printed.contains("model: \"Thinking about it\"\n"), "{printed}");
    assert!(printed.contains("interrupted (Ctrl-C)"), "{printed}");
    assert!(!workspace(&printed).exists(), "the temporary workspace is left behind:\n{printed}");
}

fn a_bad_flag_or_setting_is_said_in_words(_: &tokio::runtime::Runtime) {
    let cases: [(&[&str], &str); 5] = [
        (&["--verbose"], "error: unknown argument `--verbose` (expected --provider openai|anthropic"),
        (&["--model="], "error: `--model` needs a value"),
        (&["--provider", "gemini"], "error: unknown provider `gemini` (expected `openai` or `anthropic`)"),
        (&["--provider", "anthropic"], "error: the anthropic provider needs ANTHROPIC_API_KEY to be set"),
        // A server's address without its scheme: refused before any call.
        (
            &["--provider", "openai", "--base-url", "localhost:11434/v1", "--model", "m"],
            "error: could not set up the model client: invalid client configuration: the base URL \
             `localhost:11434/v1` is not http or https",
        ),
    ];
    for (args, said) in cases {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut child = Command::new(exe)
            .args(args)
            .env("DEMO_CHILD", "1")
            .env_remove("ANTHROPIC_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the demo starts");
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("the demo's status") {
                break status;
            }
            if start.elapsed() > LIMIT {
                let _ = child.kill();
                panic!("the demo did not exit for {args:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut stderr = String::new();
        child.stderr.take().expect("stderr").read_to_string(&mut stderr).expect("stderr");
        assert_eq!(status.code(), Some(1), "{args:?}: {status}\n{stderr}");
        assert!(stderr.starts_with(said), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}

fn ctrl_c_under_the_inspector_stops_the_session(_: &tokio::runtime::Runtime) {
    // The scripted model, paced to be followed on the page.
    let mut demo = Demo::with_args(&["--inspect"]);
    demo.wait_until("the reply began", |d| d.printed().contains("model: \""));

    let (status, printed) = demo.interrupt();
    assert_eq!(status.code(), Some(130), "the demo's exit after Ctrl-C ({status}):\n{printed}");
    assert!(printed.contains("interrupted (Ctrl-C)"), "{printed}");
    assert!(!workspace(&printed).exists(), "the temporary workspace is left behind:\n{printed}");
}

/// One test: it starts its server on the runtime.
type Test = fn(&tokio::runtime::Runtime);

fn main() -> ExitCode {
    if std::env::var_os("DEMO_CHILD").is_some() {
        return demo_binary::main().report();
    }
    let tests: [(&str, Test); 4] = [
        ("ctrl_c_under_the_inspector_stops_the_session", ctrl_c_under_the_inspector_stops_the_session),
        ("a_bad_flag_or_setting_is_said_in_words", a_bad_flag_or_setting_is_said_in_words),
        (
            "ctrl_c_during_a_command_kills_it_and_its_background_children",
            ctrl_c_during_a_command_kills_it_and_its_background_children,
        ),
        ("ctrl_c_during_the_models_reply_stops_the_demo", ctrl_c_during_the_models_reply_stops_the_demo),
    ];
    // `cargo test -- --list`: the tests this binary runs.
    if std::env::args().any(|a| a == "--list") {
        for (name, _) in tests {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    for (name, test) in tests {
        test(&runtime);
        println!("test {name} ... ok");
    }
    ExitCode::SUCCESS
}
