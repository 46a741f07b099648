//! The autoformatter: [`Rustfmt`] run over the `.rs` files new commits
//! changed.

use super::tools::Workspace;
use crate::coding_agent::output_of;
use crate::sketch::FormatReport;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `rustfmt`, run on the `.rs` files among those new commits changed.
#[derive(Debug, Clone)]
pub struct Rustfmt {
    /// The program.
    pub program: PathBuf,
    /// The edition passed with `--edition`.
    pub edition: String,
    /// How long one run may take.
    pub timeout: Duration,
}

impl Default for Rustfmt {
    fn default() -> Self {
        Rustfmt { program: PathBuf::from("rustfmt"), edition: "2024".to_owned(), timeout: Duration::from_secs(30) }
    }
}

impl Rustfmt {
    /// Formats the `.rs` files among `files` (workspace-relative) in one
    /// run and reports which ones changed and what failed. Files that no
    /// longer exist (deleted by the commit) are skipped.
    pub async fn format(&self, workspace: &Workspace, files: &[String]) -> FormatReport {
        let mut report = FormatReport::default();
        let mut targets = Vec::new();
        for file in files.iter().filter(|f| Path::new(f).extension().is_some_and(|e| e == "rs")) {
            let path = match workspace.resolve(file) {
                Ok(path) => path,
                Err(e) => {
                    report.failures.push(e);
                    continue;
                }
            };
            match tokio::fs::read(&path).await {
                Ok(before) => targets.push((file, path, before)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => report.failures.push(format!("{file}: {e}")),
            }
        }
        if targets.is_empty() {
            return report;
        }
        let mut command = tokio::process::Command::new(&self.program);
        command.arg("--edition").arg(&self.edition).arg("--").args(targets.iter().map(|(_, path, _)| path));
        let program = self.program.display();
        match tokio::time::timeout(self.timeout, output_of(&mut command, workspace.root())).await {
            Err(_) => report.failures.push(format!("{program} timed out after {:?}", self.timeout)),
            Ok(Err(e)) => report.failures.push(format!("{program} could not run: {e}")),
            Ok(Ok(output)) if !output.status.success() => report.failures.push(format!(
                "{program} exited with {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )),
            Ok(Ok(_)) => {}
        }
        // Even a failed run may have rewritten some files: compare them all.
        for (file, path, before) in targets {
            if tokio::fs::read(&path).await.is_ok_and(|after| after != before) {
                report.reformatted.push(file.clone());
            }
        }
        report
    }
}
