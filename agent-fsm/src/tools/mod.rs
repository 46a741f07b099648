//! Workspace tools for an agent: file tools that cannot leave one
//! directory, and a shell whose command is killed whole.
//!
//! ```
//! use agent_fsm::tools::{ShellOptions, ToolError, Workspace};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("agent-fsm-tools-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let workspace = Workspace::open(&dir)?;
//!
//! workspace.write_file("src/greeting.txt", "Hello, wrold\n").await?;
//! workspace.edit_file("src/greeting.txt", "wrold", "world").await?;
//! assert_eq!(workspace.read_file("src/greeting.txt").await?, "Hello, world\n");
//! assert_eq!(workspace.list_files("src").await?, ["greeting.txt"]);
//!
//! // Nothing outside the directory, whichever way the path is written.
//! let escape = workspace.read_file("../../etc/passwd").await;
//! assert!(matches!(escape, Err(ToolError::OutsideWorkspace { .. })));
//!
//! let options = ShellOptions::default().with_timeout(Duration::from_secs(5)).with_output_cap(1024);
//! let run = workspace.run_command("cat src/greeting.txt; seq 1 100000", &options).await?;
//! assert!(run.status.success() && !run.timed_out);
//! assert!(run.output.starts_with("Hello, world\n1\n2\n"));
//! assert!(run.output.ends_with("99999\n100000\n"));
//! assert!(run.cut_bytes > 0 && run.output.contains("bytes cut"));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```
//!
//! These are the tools a coding agent hands its model, written once so that
//! every agent gets the confinement right:
//!
//! - [`Workspace`], with [`read_file`](Workspace::read_file),
//!   [`write_file`](Workspace::write_file),
//!   [`edit_file`](Workspace::edit_file) and
//!   [`list_files`](Workspace::list_files), every path resolved beneath the
//!   workspace directory.
//! - [`run_command`] (and [`Workspace::run_command`]), `sh -c` in the
//!   workspace directory, as a process group killed whole on timeout, on
//!   cancel and when the shell exits, with its output capped.
//!
//! Each tool takes plain arguments (`&str`, [`ShellOptions`]) and returns a
//! plain result or a [`ToolError`] whose text is meant for the model, so a
//! typed tool layer can wrap each one as a tool.
//!
//! # What is confined, and what is not
//!
//! **The file tools are confined.** A path is resolved one component at a
//! time beneath a handle to the workspace directory (on Linux, `openat2`
//! with `RESOLVE_BENEATH`), never by its text. An absolute path, a `..` that
//! climbs above the workspace, and a symlink whose target lies outside it
//! (a cloned repository can hold one, or a shell command can make one) are
//! refused with [`ToolError::OutsideWorkspace`]. A symlink that stays inside
//! is followed; a symlink with an absolute target is refused even when it
//! names a file inside, since the walk never goes through `/`. This holds
//! while the workspace changes under the call (a directory swapped for a
//! symlink out of it by a command still running), since each component is
//! resolved and opened in one step, and a FIFO swapped in for a file after
//! its check is refused without waiting for its other end.
//!
//! A hard link is not a way out but it is not fenced off either: it is the
//! file itself under another name, so a hard link inside the workspace to
//! a file outside it is a regular file of the workspace, read like any
//! other. Writing it does not change the file outside: a write replaces
//! the name inside with a new file (see
//! [`write_file`](Workspace::write_file)), which ends the link. Only someone
//! who could already read or write that file can make such a link (the
//! shell tool, for one); a cloned repository cannot hold one.
//!
//! **The shell is not a sandbox.** Its working directory is the workspace,
//! but the command runs as the user running the agent and can read, write
//! or delete anything that user can, talk to the network, and leave the
//! workspace with `cd ..`. What the shell tool does promise:
//! - it starts in the directory the file tools hold: when the workspace's
//!   path no longer leads there (the directory moved, or the symlink it was
//!   opened by now points elsewhere) it runs nothing and answers
//!   [`ToolError::Moved`], as [`host_path`](Workspace::host_path) does; and
//!   on Linux the shell enters that directory by the handle the file tools
//!   hold, not by the path, so a symlink repointed between that check and
//!   the start does not move it (elsewhere, or without `/proc`, it starts
//!   at the path, and such a swap is not caught);
//! - the command runs in its own process group, and every process still in
//!   that group is killed with `SIGKILL` when the shell exits, when the
//!   timeout passes, or when the future is dropped (the agent cancelled the
//!   call), so a background child (`sleep 1000 &`) does not outlive the call.
//!   Those that became the agent's children when their parent exited (an
//!   agent that is a subreaper, as PID 1 of a container is) are reaped
//!   too, rather than left as zombies for the life of the agent.
//!   A process that leaves the group on purpose (`setsid`) is not tracked:
//!   it outlives the call, but does not hold it either, even while it
//!   keeps the output pipe open (the output ends with what the pipe holds
//!   when the shell exits; what that process writes later is not read).
//!   The shell itself is killed by its pid too, whichever group it (or a
//!   program it `exec`ed) moved to, so the timeout always ends the call;
//! - at most [`ShellOptions::output_cap`] bytes of output are kept (the
//!   first half and the last half of stdout and stderr together); the rest
//!   is read and dropped as it arrives, and the result says how many bytes
//!   were cut. The cap bounds the text returned, output that is not UTF-8
//!   (shown as U+FFFD) included;
//! - stdin is empty, and the variables that tie `git` to one repository
//!   (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY`,
//!   `GIT_COMMON_DIR`, ...: `git rev-parse --local-env-vars`) are removed,
//!   so `git` works on the workspace's repository rather than the agent's.
//!
//! Confining a shell takes an OS sandbox (a container, a VM, Landlock,
//! `bubblewrap`): run the whole agent inside one when the model must not
//! reach the rest of the machine.

mod capture;
mod error;
mod listing;
mod replace;
#[cfg(unix)]
mod shell;
mod workspace;

pub use error::ToolError;
pub use listing::Listing;
#[cfg(unix)]
pub use shell::{CommandOutput, GIT_REPOSITORY_VARIABLES, ShellOptions, run_command};
pub use workspace::{DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_LISTED, Workspace};
