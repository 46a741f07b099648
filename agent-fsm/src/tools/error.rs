//! Why a tool call failed, in words meant for the model that made it.

use std::io;
use std::time::Duration;

/// Why a workspace tool failed. The text says what happened and, where the
/// caller can do something about it, what to do; it is written to be sent
/// back to the model as the tool's result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The path is absolute, climbs above the workspace with `..`, or goes
    /// through a symlink whose target is outside it.
    #[error(
        "`{path}` is not a path inside the workspace: paths are relative to it and may not lead out of it, by `..` or through a symlink"
    )]
    OutsideWorkspace {
        /// The path as given.
        path: String,
    },
    /// Nothing exists at the path.
    #[error("`{path}` does not exist")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// Something other than a regular file is at the path: a directory, a
    /// FIFO, a socket or a device, which the file tools neither read nor
    /// write.
    #[error("`{path}` is not a regular file")]
    NotAFile {
        /// The path as given.
        path: String,
    },
    /// The file is larger than the workspace reads.
    #[error(
        "`{path}` is {size} bytes, over the {max}-byte limit for reading a file; read a part of it with the shell (`head`, `sed -n`)"
    )]
    TooLarge {
        /// The path as given.
        path: String,
        /// Its size in bytes, as far as it was read.
        size: u64,
        /// The workspace's limit.
        max: u64,
    },
    /// The file holds bytes that are not UTF-8 text.
    #[error("`{path}` is not UTF-8 text")]
    NotUtf8 {
        /// The path as given.
        path: String,
    },
    /// `edit_file`'s text to replace is not in the file.
    #[error("the text to replace is not in `{path}`; read the file and copy the text exactly")]
    EditNotFound {
        /// The path as given.
        path: String,
    },
    /// `edit_file`'s text to replace is empty: it matches everywhere.
    #[error("the text to replace is empty; give the exact text to replace (or write the whole file with write_file)")]
    EditEmpty {
        /// The path as given.
        path: String,
    },
    /// `edit_file`'s text to replace occurs more than once, so which one to
    /// replace is not known.
    #[error(
        "the text to replace occurs {count} times in `{path}`; include more of the text around it so it occurs once"
    )]
    EditAmbiguous {
        /// The path as given.
        path: String,
        /// How many times it occurs, at least: occurrences that overlap
        /// one already counted are not all counted.
        count: usize,
    },
    /// The command ran past its timeout and was killed with its process
    /// group.
    #[error("the command timed out after {timeout:?} and was killed; output so far:\n{output}")]
    TimedOut {
        /// The timeout it ran past.
        timeout: Duration,
        /// What it printed before (capped).
        output: String,
    },
    /// The command exited with a failure status.
    #[error("{}: {output}", how_it_ended(*code))]
    CommandFailed {
        /// Its exit code; `None` when a signal ended it.
        code: Option<i32>,
        /// What it printed (capped).
        output: String,
    },
    /// The shell could not be started.
    #[error("the shell could not start: {source}")]
    Spawn {
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The workspace's path no longer names the directory the workspace
    /// opened (the directory was moved, or a symlink on the way to it was
    /// pointed elsewhere): the shell and [`host_path`](super::Workspace::host_path),
    /// which go by the path, refuse rather than work in another directory
    /// than the file tools, which hold the directory itself.
    #[error(
        "the workspace's path `{}` no longer leads to the workspace (it was moved, or a symlink on the way now points elsewhere); nothing was run",
        root.display()
    )]
    Moved {
        /// The workspace's path, as [`root`](super::Workspace::root) gives it.
        root: std::path::PathBuf,
    },
    /// Any other I/O error on the path (permission denied, not a directory,
    /// ...).
    #[error("`{path}`: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

/// `exit 3`, or that a signal ended the command.
fn how_it_ended(code: Option<i32>) -> String {
    code.map_or_else(|| "killed by a signal".to_owned(), |code| format!("exit {code}"))
}
