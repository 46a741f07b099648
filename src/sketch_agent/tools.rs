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
/// Paths given to `write_file` and `read_file` are resolved beneath the
/// workspace by [`agent_fsm::tools::Workspace`]: no absolute path, `..`
/// above it or symlink leads out. `bash` runs with the workspace as its
/// working directory and is killed with its process group on timeout, but
/// a shell command can still reach outside it: a shell is not a sandbox.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The file tools, shared with the coding agent's.
    files: crate::coding_agent::Workspace,
    /// How long a `bash` command may take before it is killed.
    pub command_timeout: Duration,
}

impl Workspace {
    /// Tools confined to `root`, with a 10 s command timeout. A relative
    /// `root` is made absolute now (see
    /// [`crate::coding_agent::Workspace::new`]), so that `bash`, the `git`
    /// check and the formatter keep running in it after the process
    /// changes its current directory.
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Workspace { files: crate::coding_agent::Workspace::new(root), command_timeout: Duration::from_secs(10) }
    }

    /// The directory, made absolute.
    #[must_use]
    pub fn root(&self) -> &Path {
        self.files.root()
    }

    /// The path on the host of `path`, for handing to another program,
    /// once checked to resolve inside the workspace (see
    /// [`agent_fsm::tools::Workspace::host_path`]).
    ///
    /// # Errors
    /// A path that leads outside the workspace.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        self.files.tools().and_then(|ws| ws.host_path(path)).map_err(|e| e.to_string())
    }

    /// Runs one tool call and returns what the tool says.
    ///
    /// # Errors
    /// What the model is told: an unknown tool, arguments that are not a
    /// JSON object with the tool's string arguments, a path outside the
    /// workspace, an I/O error, a command that failed or timed out.
    pub async fn run(&self, call: &ToolCall) -> Result<String, String> {
        if !call.arguments.is_object() {
            return Err(format!("`{}` arguments are not a JSON object: {}", call.name, call.arguments));
        }
        let arg = |name: &str| {
            call.arguments
                .get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("`{}` needs a string `{name}`", call.name))
        };
        let fail = |e: agent_fsm::tools::ToolError| e.to_string();
        match call.name.as_str() {
            "write_file" => {
                let (path, content) = (arg("path")?, arg("content")?);
                self.files.tools().map_err(fail)?.write_file(path, content).await.map_err(fail)?;
                Ok(format!("wrote {} bytes to {path}", content.len()))
            }
            "read_file" => self.files.tools().map_err(fail)?.read_file(arg("path")?).await.map_err(fail),
            "bash" => run_shell(self.root(), arg("command")?, self.command_timeout).await,
            other => Err(format!("unknown tool `{other}`; the tools are write_file, read_file and bash")),
        }
    }
}
