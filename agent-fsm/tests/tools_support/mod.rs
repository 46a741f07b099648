//! The fixture the workspace-tool tests share: a workspace beside a
//! directory outside it that holds a secret, the check that nothing
//! outside changed, and the bound on a call.

use agent_fsm::tools::Workspace;
use std::path::PathBuf;
use std::time::Duration;

/// Bounds every call and process a test waits on: one that blocks never
/// returns at all.
pub(crate) const HANG: Duration = Duration::from_secs(30);

/// A workspace `ws/` (holding `inside.txt` and `sub/`) beside a directory
/// `outside/` holding `secret`.
pub(crate) struct Fixture {
    _tmp: tempfile::TempDir,
    pub(crate) ws: Workspace,
    pub(crate) inside: PathBuf,
    pub(crate) outside: PathBuf,
}

/// A fresh [`Fixture`] in a temporary directory.
pub(crate) fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().expect("temp dir");
    let inside = tmp.path().join("ws");
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&inside).expect("ws");
    std::fs::create_dir(&outside).expect("outside");
    std::fs::write(outside.join("secret"), "top secret\n").expect("secret");
    std::fs::write(inside.join("inside.txt"), "inside\n").expect("inside");
    std::fs::create_dir(inside.join("sub")).expect("sub");
    let ws = Workspace::open(&inside).expect("open");
    Fixture { _tmp: tmp, ws, inside, outside }
}

impl Fixture {
    /// Nothing outside the workspace changed: the secret is as it was and
    /// no other name appeared beside it.
    #[allow(dead_code, reason = "the listing tests only read inside the workspace")]
    pub(crate) fn assert_outside_untouched(&self) {
        assert_eq!(std::fs::read_to_string(self.outside.join("secret")).expect("secret"), "top secret\n");
        let names: Vec<_> =
            std::fs::read_dir(&self.outside).expect("outside").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(names, ["secret"], "nothing was created outside");
    }
}
