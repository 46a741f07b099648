//! The workspace tools ([`crate::tools`]) as typed tools: `read_file`,
//! `write_file`, `edit_file`, `list_files` and `run_command`, each a
//! [`Tool`] over one confined [`Workspace`], and [`workspace_tools`], the
//! set of all five for a coding agent.

use schemars::JsonSchema;
use serde::Deserialize;

use super::set::ToolSet;
use super::typed::Tool;
#[cfg(unix)]
use crate::tools::ShellOptions;
use crate::tools::{ToolError, Workspace};

/// The five workspace tools over `workspace` (`run_command` on Unix only),
/// the shell with the default [`ShellOptions`].
///
/// Each tool takes exactly the arguments its schema lists (which says so,
/// `"additionalProperties": false`, as strict tool modes require): a call
/// with another key (a misspelled `path`, a `timeout` the shell tool does
/// not take) is an error result naming it, and nothing runs, rather than
/// the key being ignored and the model left believing it counted.
///
/// # Examples
/// ```
/// use agent_fsm::llm::ToolCall;
/// use agent_fsm::tool::workspace_tools;
/// use agent_fsm::tools::Workspace;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = std::env::temp_dir().join(format!("agent-fsm-tool-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let tools = workspace_tools(Workspace::open(&dir)?);
///
/// let write = ToolCall { id: "1".into(), name: "write_file".into(), arguments: json!({"path": "a.txt", "content": "hi"}) };
/// assert_eq!(tools.call(&write).await.content, "wrote 2 bytes to `a.txt`");
/// let escape = ToolCall { id: "2".into(), name: "read_file".into(), arguments: json!({"path": "../../etc/passwd"}) };
/// assert!(tools.call(&escape).await.is_error);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[must_use]
pub fn workspace_tools(workspace: Workspace) -> ToolSet {
    #[cfg(unix)]
    let set = workspace_tools_with(workspace, ShellOptions::default());
    #[cfg(not(unix))]
    let set = file_tools(workspace);
    set
}

/// [`workspace_tools`] with the shell's timeout and output cap set.
#[cfg(unix)]
#[must_use]
pub fn workspace_tools_with(workspace: Workspace, shell: ShellOptions) -> ToolSet {
    file_tools(workspace.clone()).with(RunCommand { workspace, options: shell })
}

fn file_tools(workspace: Workspace) -> ToolSet {
    ToolSet::new()
        .with(ReadFile(workspace.clone()))
        .with(WriteFile(workspace.clone()))
        .with(EditFile(workspace.clone()))
        .with(ListFiles(workspace))
}

/// `read_file`: the text of a file of the workspace.
#[derive(Debug, Clone)]
pub struct ReadFile(pub Workspace);

/// The arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The file's path, relative to the workspace.
    pub path: String,
}

impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    type Args = ReadFileArgs;
    type Output = String;
    type Error = ToolError;

    fn description(&self) -> String {
        "Reads a text file of the workspace and returns its contents.".to_owned()
    }

    async fn call(&self, args: ReadFileArgs) -> Result<String, ToolError> {
        self.0.read_file(&args.path).await
    }
}

/// `write_file`: creates or replaces a file of the workspace.
#[derive(Debug, Clone)]
pub struct WriteFile(pub Workspace);

/// The arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// The file's path, relative to the workspace; missing directories are
    /// created.
    pub path: String,
    /// The file's whole new contents.
    pub content: String,
}

impl Tool for WriteFile {
    const NAME: &'static str = "write_file";
    type Args = WriteFileArgs;
    type Output = String;
    type Error = ToolError;

    fn description(&self) -> String {
        "Creates or replaces a text file of the workspace with the given contents.".to_owned()
    }

    async fn call(&self, args: WriteFileArgs) -> Result<String, ToolError> {
        self.0.write_file(&args.path, &args.content).await?;
        Ok(format!("wrote {} bytes to `{}`", args.content.len(), args.path))
    }
}

/// `edit_file`: replaces one occurrence of a text in a file.
#[derive(Debug, Clone)]
pub struct EditFile(pub Workspace);

/// The arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// The file's path, relative to the workspace.
    pub path: String,
    /// The text to replace, copied exactly from the file; it must occur
    /// once.
    pub old_text: String,
    /// The text to put in its place.
    pub new_text: String,
}

impl Tool for EditFile {
    const NAME: &'static str = "edit_file";
    type Args = EditFileArgs;
    type Output = String;
    type Error = ToolError;

    fn description(&self) -> String {
        "Replaces the one occurrence of `old_text` in a file of the workspace with `new_text`.".to_owned()
    }

    async fn call(&self, args: EditFileArgs) -> Result<String, ToolError> {
        self.0.edit_file(&args.path, &args.old_text, &args.new_text).await?;
        Ok(format!("edited `{}`", args.path))
    }
}

/// `list_files`: the names in a directory of the workspace, at most the
/// workspace's limit of them ([`Workspace::listing`]).
#[derive(Debug, Clone)]
pub struct ListFiles(pub Workspace);

/// The arguments of `list_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFilesArgs {
    /// The directory's path, relative to the workspace; the workspace
    /// itself if absent.
    pub path: Option<String>,
}

impl Tool for ListFiles {
    const NAME: &'static str = "list_files";
    type Args = ListFilesArgs;
    type Output = String;
    type Error = ToolError;

    fn description(&self) -> String {
        "Lists the names in a directory of the workspace, one per line, sorted; a large directory is cut \
         to its first names, with a last line saying how many more it holds. A name holding a line break \
         or another control character, or starting with `\"` or `(`, is shown as a JSON string."
            .to_owned()
    }

    async fn call(&self, args: ListFilesArgs) -> Result<String, ToolError> {
        Ok(self.0.listing(args.path.as_deref().unwrap_or("")).await?.to_text())
    }
}

/// `run_command`: a shell command in the workspace directory, as
/// [`crate::tools::run_command`] runs it (its own process group, killed on
/// timeout; output capped). A command that fails or times out is an error
/// result with its output.
#[cfg(unix)]
#[derive(Debug, Clone)]
pub struct RunCommand {
    /// Where it runs.
    pub workspace: Workspace,
    /// Its timeout and output cap.
    pub options: ShellOptions,
}

/// The arguments of `run_command`.
#[cfg(unix)]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCommandArgs {
    /// The command, run with `sh -c` in the workspace directory.
    pub command: String,
}

#[cfg(unix)]
impl Tool for RunCommand {
    const NAME: &'static str = "run_command";
    type Args = RunCommandArgs;
    type Output = String;
    type Error = ToolError;

    fn description(&self) -> String {
        format!(
            "Runs a shell command (sh -c) in the workspace directory and returns its output (stdout and stderr). \
             It is killed after {:?}; output past {} bytes is cut in the middle.",
            self.options.timeout, self.options.output_cap
        )
    }

    async fn call(&self, args: RunCommandArgs) -> Result<String, ToolError> {
        self.workspace.run_command(&args.command, &self.options).await?.into_result()
    }
}
