//! Replacing a file of the workspace in one step: the new contents
//! written to a new file beside it, flushed, then renamed over it, so that
//! a write that fails or is killed part way leaves the file as it was.

use std::io::{self, Write as _};
use std::path::{Component, Path, PathBuf};

use cap_std::fs::{Dir, File, OpenOptions};

use super::workspace::open_regular;

/// How the new files start, followed by the process id and a count: a
/// hidden name, which a process killed before its rename leaves behind.
pub(super) const PREFIX: &str = ".agent-fsm-write-";

/// Whether `path`, read as text, leads out of the directory it is
/// relative to: absolute, or with more `..` than names before them.
pub(super) fn climbs_out(path: &Path) -> bool {
    let mut depth = 0usize;
    for component in path.components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => depth -= 1,
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return true,
        }
    }
    false
}

/// The error cap-std gives for a path that leads out, which the
/// workspace reports as [`ToolError::OutsideWorkspace`](super::ToolError::OutsideWorkspace).
pub(super) fn escape() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "a path that leads out of the workspace")
}

/// Tells apart the new files of concurrent writes in one process.
static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Replaces the regular file at `p` (or creates it) with `contents`: a new
/// file beside it, written and flushed, renamed over it. False if what is
/// at `p` turns out not to be a regular file.
pub(super) fn replace(dir: &Dir, p: &Path, contents: &[u8]) -> io::Result<bool> {
    // The rename replaces what is at the name: a symlink is resolved first
    // (beneath the root), so that its target is what gets replaced. One
    // whose target is missing is written through, in place, as opening it
    // would: there is nothing to lose.
    let target = match dir.symlink_metadata(p) {
        Ok(meta) if meta.is_symlink() => match dir.canonicalize(p) {
            Ok(target) => target,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return write_in_place(dir, p, contents),
            Err(e) => return Err(e),
        },
        _ => p.to_path_buf(),
    };
    // The file as it is: opened for writing, so that one this process may
    // not write is refused with the system's own error, as writing it in
    // place was; and checked on the handle to be a regular file.
    let existing = match open_regular(dir, &target, OpenOptions::new().write(true)) {
        Ok(Some((file, _))) => Some(file),
        Ok(None) => return Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let permissions = existing.as_ref().map(File::metadata).transpose()?.map(|meta| meta.permissions());
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if existing.is_some() {
        use cap_std::fs::OpenOptionsExt as _;
        // Open to this user alone until it has the file's own owner and
        // permissions: a file others may not read is never readable by
        // them under the new name.
        options.mode(0o600);
    }
    let (temp, mut file) = new_file(dir, &target, &options)?;
    let written = (|| {
        #[cfg(unix)]
        if let Some(existing) = &existing {
            // The file keeps its owner where this process may give it one
            // (running as root, say); elsewhere the new file is this
            // process's, as any file it creates.
            let stat = rustix::fs::fstat(existing)?;
            let (uid, gid) = (rustix::fs::Uid::from_raw(stat.st_uid), rustix::fs::Gid::from_raw(stat.st_gid));
            let _ = rustix::fs::fchown(&file, Some(uid), Some(gid));
        }
        // After the owner: a change of owner clears the set-id bits.
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.write_all(contents)?;
        // On the disk before the rename makes it the file: after a crash of
        // the machine, the name holds the old contents or the new.
        file.sync_all()?;
        drop(file);
        dir.rename(&temp, dir, &target)
    })();
    if written.is_err() {
        // Best effort: the error that matters is the write's.
        let _ = dir.remove_file(&temp);
    }
    written.map(|()| true)
}

/// Whether `name` is a new file a write left behind, its process killed
/// before the rename: the prefix, then the process id and a count.
pub(super) fn left_behind(name: &str) -> bool {
    name.strip_prefix(PREFIX).and_then(|rest| rest.split_once('-')).is_some_and(|(pid, n)| {
        !pid.is_empty() && !n.is_empty() && pid.bytes().chain(n.bytes()).all(|b| b.is_ascii_digit())
    })
}

/// A new file beside `target`, under a name no file has: one a process
/// killed mid-write left behind may hold the name this one would take
/// (a process id is used again after a restart, in a container often the
/// same one), so a name taken is passed over for the next. The count
/// moves on at every try, and a directory holds finitely many names, so
/// the search ends.
fn new_file(dir: &Dir, target: &Path, options: &OpenOptions) -> io::Result<(PathBuf, File)> {
    loop {
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = target.with_file_name(format!("{PREFIX}{}-{n}", std::process::id()));
        match dir.open_with(&temp, options) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
}

/// Writes `contents` through the file at `p`, truncating it first: for a
/// symlink whose target does not exist yet, which it creates.
fn write_in_place(dir: &Dir, p: &Path, contents: &[u8]) -> io::Result<bool> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    let Some((mut file, _)) = open_regular(dir, p, &mut options)? else {
        return Ok(false);
    };
    file.write_all(contents).map(|()| true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cap_std::ambient_authority;

    /// Names a killed process of the same id left behind are passed over:
    /// the write takes the next free one, and leaves theirs alone.
    #[test]
    fn names_left_behind_are_passed_over() {
        let root = tempfile::tempdir().expect("a temp dir");
        let dir = Dir::open_ambient_dir(root.path(), ambient_authority()).expect("the dir");
        let next = WRITES.load(std::sync::atomic::Ordering::Relaxed);
        let stale: Vec<String> = (next..next + 8).map(|n| format!("{PREFIX}{}-{n}", std::process::id())).collect();
        for name in &stale {
            std::fs::write(root.path().join(name), "stale").expect("a stale file");
        }
        std::fs::write(root.path().join("f.txt"), "old").expect("the file");
        assert!(replace(&dir, Path::new("f.txt"), b"new").expect("replaced"));
        assert_eq!(std::fs::read_to_string(root.path().join("f.txt")).expect("read"), "new");
        for name in &stale {
            assert_eq!(std::fs::read_to_string(root.path().join(name)).expect("kept"), "stale");
        }
        assert_eq!(std::fs::read_dir(root.path()).expect("list").count(), stale.len() + 1, "nothing else is left");
    }

    #[test]
    fn a_path_climbs_out_by_more_parents_than_names_before_them() {
        for (path, out) in [
            ("a/../..", true),
            ("/a", true),
            ("..", true),
            ("a/b/../..", false),
            ("./a/..", false),
            ("a/./../b", false),
        ] {
            assert_eq!(climbs_out(Path::new(path)), out, "{path}");
        }
    }
}
