//! The tools: a [`Workspace`] that runs `write_file`, `read_file` and
//! `bash`, with the path rule and the shell runner of every agent
//! ([`crate::coding_agent`]).

use crate::coding_agent::run_shell;
use crate::sketch::ToolCall;
use serde_json::Value;
use std::path::{Path, PathBuf};
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
            "bash" => run_shell(&self.root, arg("command")?, self.command_timeout).await,
            other => Err(format!("unknown tool `{other}`; the tools are write_file, read_file and bash")),
        }
    }
}
