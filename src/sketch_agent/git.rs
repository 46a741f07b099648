//! The `git` check: reading `HEAD`, listing the commits made since, and
//! preparing a workspace repository.

use crate::coding_agent::output_of;
use crate::sketch::Commit;
use std::path::Path;
use std::time::Duration;

/// How long one `git` command may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `git args` in `dir`.
async fn git_output(dir: &Path, args: &[&str]) -> Result<std::process::Output, String> {
    let mut command = tokio::process::Command::new("git");
    command.args(args);
    match tokio::time::timeout(GIT_TIMEOUT, output_of(&mut command, dir)).await {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(e)) => Err(format!("`git {}` could not run: {e}", args.join(" "))),
        Err(_) => Err(format!("`git {}` timed out", args.join(" "))),
    }
}

/// `git args`'s stdout, or why it failed.
async fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let output = git_output(dir, args).await?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!("`git {}`: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
    }
}

/// The commit `HEAD` names, `None` in a repository without commits.
///
/// # Errors
/// `git` failed (not installed, not a repository).
pub async fn head(dir: &Path) -> Result<Option<String>, String> {
    let output = git_output(dir, &["rev-parse", "--verify", "-q", "HEAD^{commit}"]).await?;
    match output.status.code() {
        Some(0) => Ok(Some(String::from_utf8_lossy(&output.stdout).trim().to_owned())),
        // `--verify -q` exits 1, silently, when HEAD names no commit yet.
        Some(1) => Ok(None),
        _ => Err(format!("`git rev-parse HEAD`: {}", String::from_utf8_lossy(&output.stderr).trim())),
    }
}

/// The commits made since `before` (oldest first), each with the files it
/// changed, relative to `dir`.
///
/// # Errors
/// `git` failed.
pub async fn commits_since(dir: &Path, before: Option<&str>) -> Result<Vec<Commit>, String> {
    let Some(after) = head(dir).await? else {
        return Ok(Vec::new());
    };
    if before == Some(after.as_str()) {
        return Ok(Vec::new());
    }
    let range = before.map_or_else(|| after.clone(), |before| format!("{before}..{after}"));
    let mut commits = Vec::new();
    for sha in git(dir, &["rev-list", "--reverse", &range]).await?.lines().filter(|l| !l.is_empty()) {
        let files =
            git(dir, &["diff-tree", "--root", "--no-commit-id", "--name-only", "-r", "-z", "--relative", sha]).await?;
        commits.push(Commit {
            sha: sha.chars().take(10).collect(),
            changed_files: files.split('\0').filter(|f| !f.is_empty()).map(str::to_owned).collect(),
        });
    }
    Ok(commits)
}

/// Makes `root` a git repository with a first commit (a README), its
/// author set in the repository itself so it works on a fresh machine.
///
/// # Errors
/// An I/O error, or `git` failing.
pub async fn prepare_workspace(root: &Path) -> std::io::Result<()> {
    tokio::fs::write(root.join("README.md"), "A tiny crate the Sketch agent works on.\n").await?;
    for args in [
        &["-c", "init.defaultBranch=main", "init", "-q"][..],
        &["config", "user.name", "Sketch Demo"],
        &["config", "user.email", "sketch@example.invalid"],
        &["config", "commit.gpgsign", "false"],
        &["add", "README.md"],
        &["commit", "-q", "-m", "Initial commit"],
    ] {
        git(root, args).await.map_err(std::io::Error::other)?;
    }
    Ok(())
}
