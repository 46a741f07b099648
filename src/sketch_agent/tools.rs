//! The tools: a [`Workspace`] that runs `write_file`, `read_file` and
//! `bash`, and the subprocess helper shared with `git` and the formatter.

use crate::sketch::ToolCall;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// A directory the tools may touch, and nothing outside it.
///
/// Paths given to `write_file` and `read_file` must be relative and may not
/// use `..`; `bash` runs with the workspace as its working directory (a
/// shell command can still reach outside it: the confinement is of paths,
/// not a sandbox).
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    /// How long a `bash` command may take before it is killed.
    pub command_timeout: Duration,
}

impl Workspace {
    /// Tools confined to `root`, with a 10 s command timeout.
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Workspace { root: root.into(), command_timeout: Duration::from_secs(10) }
    }

    /// The directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` inside the workspace.
    ///
    /// # Errors
    /// An empty or absolute path, or one using `..`.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        crate::coding_agent::confined(&self.root, path)
    }

    /// Runs one tool call and returns what the tool says.
    ///
    /// # Errors
    /// What the model is told: an unknown tool, input that is not a JSON
    /// object with the tool's string arguments, a path outside the
    /// workspace, an I/O error, a command that failed or timed out.
    pub async fn run(&self, call: &ToolCall) -> Result<String, String> {
        let input: Value =
            serde_json::from_str(&call.input).map_err(|e| format!("`{}` input is not JSON: {e}", call.name))?;
        let arg = |name: &str| {
            input.get(name).and_then(Value::as_str).ok_or_else(|| format!("`{}` needs a string `{name}`", call.name))
        };
        let io = |e: std::io::Error| e.to_string();
        match call.name.as_str() {
            "write_file" => {
                let (path, content) = (self.resolve(arg("path")?)?, arg("content")?);
                if let Some(parent) = path.parent() {
                    tokio::fs::create_dir_all(parent).await.map_err(io)?;
                }
                tokio::fs::write(&path, content).await.map_err(io)?;
                Ok(format!("wrote {} bytes to {}", content.len(), arg("path")?))
            }
            "read_file" => tokio::fs::read_to_string(self.resolve(arg("path")?)?).await.map_err(io),
            "bash" => self.bash(arg("command")?).await,
            other => Err(format!("unknown tool `{other}`; the tools are write_file, read_file and bash")),
        }
    }

    /// Runs `command` with `sh -c` in the workspace; killed on timeout or
    /// when the task running it is cancelled.
    async fn bash(&self, command: &str) -> Result<String, String> {
        let mut child = tokio::process::Command::new("sh");
        child.arg("-c").arg(command);
        let output = tokio::time::timeout(self.command_timeout, output_of(&mut child, &self.root))
            .await
            .map_err(|_| format!("`{command}` timed out after {:?}", self.command_timeout))?
            .map_err(|e| e.to_string())?;
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        if output.status.success() {
            Ok(text)
        } else {
            Err(format!("exit {}: {text}", output.status.code().unwrap_or(-1)))
        }
    }
}

/// Runs `command` in `dir` with no stdin, killed if the future is dropped,
/// and without the `GIT_*` variables that would point `git` at another
/// repository than the workspace's.
pub(super) async fn output_of(
    command: &mut tokio::process::Command,
    dir: &Path,
) -> std::io::Result<std::process::Output> {
    command
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_TERMINAL_PROMPT", "0")
        .kill_on_drop(true)
        .output()
        .await
}
