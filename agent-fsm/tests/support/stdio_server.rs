//! What the MCP test binaries share: each is also the MCP server it tests
//! (run again with a variable set in its environment), so it runs without
//! libtest's harness, which writes to stdout, the server's protocol
//! channel. Here: running the tests, each under a timeout; the command
//! that starts the binary as the server; a bound on each wait; and the
//! server's writing of one message.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use std::io::Write;
use std::time::Duration;

use serde_json::Value;

/// One test: its future, run under a timeout by [`run_tests`].
pub(crate) type Test = fn() -> futures::future::BoxFuture<'static, ()>;

/// Runs `tests` in order on a runtime of two threads, each under `limit`,
/// as libtest would: those whose names contain an argument given on the
/// command line (all if none is), each reported on stderr.
pub(crate) fn run_tests(tests: &[(&str, Test)], limit: Duration) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        eprint!("test {name} ... ");
        runtime.block_on(async { tokio::time::timeout(limit, test()).await.expect("the test ends") });
        eprintln!("ok");
    }
}

/// This binary as the server: run with `variable` set to `value`.
pub(crate) fn server_command(variable: &str, value: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(std::env::current_exe().expect("the test binary"));
    command.env(variable, value);
    command
}

/// `future`, or a panic if it has not ended within 20 s (a hang).
pub(crate) async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), future).await.expect("the call ends rather than hanging")
}

/// The server writes one message, as a line; exits if the client is gone.
pub(crate) fn send(message: &Value) {
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{message}").and_then(|()| out.flush()).is_err() {
        std::process::exit(0);
    }
}
