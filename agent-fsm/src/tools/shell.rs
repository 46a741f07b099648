//! The shell tool: `sh -c` as a process group that is killed whole, with a
//! timeout and capped output. See the module docs of [`crate::tools`] for
//! what it does and does not confine.

use super::ToolError;
use super::capture::Capture;
use rustix::process::{Pid, Signal, kill_process_group};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// How a command runs: how long it may take, how much output is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShellOptions {
    /// How long the command may run before its process group is killed.
    /// Default 60 s.
    pub timeout: Duration,
    /// How many bytes of output (stdout and stderr together) are kept: the
    /// first half and the last half. The text returned holds at most this
    /// many bytes besides the line saying the cut, however many of them
    /// are not UTF-8. Default 32 KiB, about 8,000 tokens.
    pub output_cap: usize,
}

impl Default for ShellOptions {
    fn default() -> Self {
        ShellOptions { timeout: Duration::from_secs(60), output_cap: 32 * 1024 }
    }
}

impl ShellOptions {
    /// These options with another timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// These options with another output cap, in bytes.
    #[must_use]
    pub fn with_output_cap(mut self, output_cap: usize) -> Self {
        self.output_cap = output_cap;
        self
    }
}

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandOutput {
    /// How the shell ended; after a timeout, the kill's status.
    pub status: ExitStatus,
    /// Stdout and stderr in the order written, capped: when bytes were cut, a
    /// line `[... N bytes cut ...]` stands between the head and the tail.
    /// Bytes that are not UTF-8 are shown as U+FFFD, within the cap: each
    /// takes three bytes of it, so fewer such bytes are shown.
    pub output: String,
    /// Bytes the command printed in all.
    pub total_bytes: u64,
    /// Bytes printed but not shown (`0` when the output fit).
    pub cut_bytes: u64,
    /// Whether the command ran past its timeout and was killed.
    pub timed_out: bool,
    /// The timeout it ran under.
    pub timeout: Duration,
}

impl CommandOutput {
    /// Whether the command finished in time with exit code 0.
    #[must_use]
    pub fn success(&self) -> bool {
        self.status.success() && !self.timed_out
    }

    /// The output of a command that succeeded.
    ///
    /// # Errors
    /// [`ToolError::TimedOut`] or [`ToolError::CommandFailed`], each with
    /// the output, for the model to read.
    pub fn into_result(self) -> Result<String, ToolError> {
        if self.timed_out {
            Err(ToolError::TimedOut { timeout: self.timeout, output: self.output })
        } else if self.status.success() {
            Ok(self.output)
        } else {
            Err(ToolError::CommandFailed { code: self.status.code(), output: self.output })
        }
    }
}

/// The command's process group, killed when this is dropped unless already
/// killed: the drop is what kills the group when the caller drops the
/// future mid-run.
#[derive(Debug)]
struct Group(Option<Pid>);

impl Group {
    /// `SIGKILL` to every process in the group, once.
    fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            // ESRCH (the group is already empty) is the expected outcome
            // when nothing was left running.
            if let Err(e) = kill_process_group(pgid, Signal::KILL)
                && e != rustix::io::Errno::SRCH
            {
                tracing::warn!(pgid = pgid.as_raw_nonzero().get(), error = %e, "could not kill a command's process group");
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reaps the processes of the command's group that became this process's
/// children once their parent exited: only a subreaper gets them (PID 1
/// of a container is one), and no one else would reap them, so each
/// command would leave its killed background processes as zombies for the
/// life of the agent. Elsewhere init reaps them, and the first wait finds
/// no child of this process in the group.
#[derive(Debug)]
struct Reap(Option<Pid>);

impl Reap {
    /// Reaps them now, the shell being reaped already (by tokio): only
    /// those orphans are left among this process's children in the group.
    /// They were sent `SIGKILL` and die soon, not at once: those not dead
    /// yet are waited for on the blocking pool.
    fn now(&mut self) {
        use rustix::process::{WaitId, WaitIdOptions, waitid};
        let Some(pgid) = self.0.take() else { return };
        loop {
            match waitid(WaitId::Pgid(Some(pgid)), WaitIdOptions::EXITED | WaitIdOptions::NOHANG) {
                Ok(Some(_)) | Err(rustix::io::Errno::INTR) => {}
                // Alive still, dying of the kill.
                Ok(None) => {
                    tokio::task::spawn_blocking(move || reap_all(pgid));
                    return;
                }
                // `ECHILD`: no child of this process is left in the group.
                Err(_) => return,
            }
        }
    }
}

impl Drop for Reap {
    /// The call was dropped mid-run: the group is killed, the shell not
    /// reaped yet. It is in the group too, and is reaped here or by tokio,
    /// whichever waits first (tokio lets go of a child reaped already).
    fn drop(&mut self) {
        if let Some(pgid) = self.0.take() {
            let reaping = std::thread::Builder::new().name("agent-fsm-reap".to_owned()).spawn(move || reap_all(pgid));
            if let Err(e) = reaping {
                tracing::warn!(error = %e, "could not start reaping a dropped command's processes");
            }
        }
    }
}

/// Waits for and reaps every child of this process in the group `pgid`,
/// until none is left.
fn reap_all(pgid: Pid) {
    use rustix::process::{WaitId, WaitIdOptions, waitid};
    while matches!(waitid(WaitId::Pgid(Some(pgid)), WaitIdOptions::EXITED), Ok(_) | Err(rustix::io::Errno::INTR)) {}
}

/// Reads what is in the pipe now, without waiting for more: at most 1 MiB
/// (the largest a pipe holds unless raised), so that a process outside the
/// group that keeps writing cannot hold the call here.
///
/// A plain non-blocking `read(2)` on the pipe (tokio opened it
/// non-blocking), not tokio's `try_read`: that one answers "would block"
/// without reading while the runtime has not yet seen the pipe become
/// readable, and what the shell wrote just before it exited could be lost.
fn drain(output: &tokio::net::unix::pipe::Receiver, buf: &mut [u8], capture: &mut Capture) {
    use std::os::fd::AsFd as _;
    for _ in 0..64 {
        match rustix::io::read(output.as_fd(), &mut *buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => capture.push(&buf[..n]),
        }
    }
}

/// The variables that tie `git` to one repository (`git rev-parse
/// --local-env-vars`): set for the agent (run from a git hook, say), they
/// would point `git` in the workspace at the agent's repository, its
/// objects (`GIT_OBJECT_DIRECTORY`) or its refs (`GIT_COMMON_DIR`) as much
/// as its `GIT_DIR`. Git itself clears these when it enters another
/// repository. [`run_command`] removes them; remove them too from any
/// other command run in a workspace.
pub const GIT_REPOSITORY_VARIABLES: [&str; 15] = [
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
];

/// Runs `command` with `sh -c` in `dir`, in a process group of its own.
///
/// Stdin is empty and the variables that tie `git` to one repository are
/// removed (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`,
/// `GIT_OBJECT_DIRECTORY`, `GIT_COMMON_DIR` and the rest of `git rev-parse
/// --local-env-vars`), so `git` sees the repository at `dir`, not the
/// caller's. Stdout and stderr share one pipe, as with `2>&1`, read as it
/// fills into one capped buffer ([`ShellOptions::output_cap`]). When the
/// shell exits, every process left in its group is killed and the output
/// already in the pipe is read (a process that left the group is not
/// killed and may keep the pipe open: it does not hold the call, and what
/// it writes later is not read); when the timeout passes, the group is killed and the
/// result says so ([`CommandOutput::timed_out`]); when the returned future
/// is dropped, the group is killed at once. Killed processes that became
/// this process's children (it is a subreaper, or PID 1 of a container)
/// are reaped, on a thread of their own if still dying.
///
/// A command that fails or times out is still `Ok`: its output says why,
/// and [`CommandOutput::into_result`] turns it into an error.
///
/// Nothing confines what the command itself does; see the module docs.
///
/// # Errors
/// [`ToolError::Spawn`] when `sh` cannot be started (no such directory,
/// no `sh`), [`ToolError::Io`] when waiting for it fails.
pub async fn run_command(dir: &Path, command: &str, options: &ShellOptions) -> Result<CommandOutput, ToolError> {
    run_in(dir, dir, command, options).await
}

/// [`run_command`] with the shell started in `cwd`, and `dir` the
/// directory named in errors: the workspace passes its held directory as
/// `/proc/self/fd/N`, which the child enters by the handle, whatever the
/// workspace's path leads to by then.
pub(super) async fn run_in(
    cwd: &Path,
    dir: &Path,
    command: &str,
    options: &ShellOptions,
) -> Result<CommandOutput, ToolError> {
    // One pipe for stdout and stderr, as `2>&1` would: the output reads in
    // the order it was written, which two pipes cannot promise.
    let (reader, writer) = std::io::pipe().map_err(|source| ToolError::Spawn { source })?;
    let stderr = writer.try_clone().map_err(|source| ToolError::Spawn { source })?;
    let mut output =
        tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into()).map_err(|source| ToolError::Spawn { source })?;
    // The command (and with it this process's copies of the write end)
    // is dropped at the end of the block: the pipe then closes when the
    // last process of the command's group lets go of it.
    let mut child = {
        let mut shell = tokio::process::Command::new("sh");
        for name in GIT_REPOSITORY_VARIABLES {
            shell.env_remove(name);
        }
        shell
            .arg("-c")
            .arg(command)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(stderr)
            .env("GIT_TERMINAL_PROMPT", "0")
            // The shell leads a new group, whose id is its pid: everything
            // it starts joins that group unless it leaves on purpose.
            .process_group(0)
            // The shell itself is killed and reaped by tokio if this future
            // is dropped; `Group` kills the rest.
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| ToolError::Spawn { source })?
    };
    let pgid = child.id().and_then(|id| i32::try_from(id).ok()).and_then(Pid::from_raw);
    // Dropped after the group's kill, whichever way the call ends.
    let mut reap = Reap(pgid);
    let mut group = Group(pgid);
    let mut capture = Capture::new(options.output_cap);
    let mut status = None;

    let run = async {
        let mut buf = vec![0; 16 * 1024];
        let mut open = true;
        // Until the shell has exited. What its group wrote until then is
        // in the pipe: the group is killed at once and what the pipe holds
        // is read then, rather than up to the pipe's end of file, which a
        // process that left the group (`setsid`) could hold off for good.
        while status.is_none() {
            tokio::select! {
                // A read error ends the output as EOF does.
                n = output.read(&mut buf), if open => match n.unwrap_or(0) {
                    0 => open = false,
                    n => capture.push(&buf[..n]),
                },
                exit = child.wait() => {
                    status = Some(exit.map_err(|source| ToolError::Io { path: dir.display().to_string(), source })?);
                    // The shell is already reaped here, so its pid could
                    // in principle name a new group by now, but only after
                    // the pid space wrapped in between two system calls.
                    group.kill();
                }
            }
        }
        if open {
            drain(&output, &mut buf, &mut capture);
        }
        Ok::<(), ToolError>(())
    };
    let timed_out = match tokio::time::timeout(options.timeout, run).await {
        Ok(result) => {
            result?;
            false
        }
        Err(_) => true,
    };
    if timed_out {
        // Killed before the shell is reaped: the group id cannot have been
        // reused yet.
        group.kill();
        // And the shell by its pid: a program it `exec`ed can have moved
        // into another group of the session (`setpgid`), out of reach of
        // the group's kill, and the wait below would then last as long as
        // that program does.
        if let Err(e) = child.start_kill() {
            tracing::warn!(error = %e, "could not kill a timed-out command's shell");
        }
    }
    let status = match status {
        Some(status) => status,
        None => child.wait().await.map_err(|source| ToolError::Io { path: dir.display().to_string(), source })?,
    };
    // The shell is reaped: what is left of the group is killed already.
    reap.now();
    tracing::debug!(command, %status, timed_out, bytes = capture.total(), "command finished");
    let (output, cut_bytes) = capture.render();
    Ok(CommandOutput { status, output, total_bytes: capture.total(), cut_bytes, timed_out, timeout: options.timeout })
}
