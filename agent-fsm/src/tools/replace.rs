//! Replacing a file of the workspace in one step: the new contents
//! written to a new file beside it, flushed, then renamed over it, so that
//! a write that fails or is killed part way leaves the file as it was;
//! and the sweep that removes the new files of writers killed before their
//! rename.

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

/// How many times a write looks again at a symlink whose target appears
/// and disappears under it before giving up.
const TRIES: usize = 8;

/// Replaces the regular file at `p` (or creates it) with `contents`: a new
/// file beside it, written and flushed, renamed over it. False if what is
/// at `p` turns out not to be a regular file.
pub(super) fn replace(dir: &Dir, p: &Path, contents: &[u8]) -> io::Result<bool> {
    for _ in 0..TRIES {
        if let Some(done) = replace_once(dir, p, contents)? {
            return Ok(done);
        }
    }
    Err(io::Error::other("the symlink's target kept appearing and disappearing while it was written"))
}

/// One try of [`replace`]; `None` when a symlink's missing target turned
/// out to be there after all, to be looked at again.
fn replace_once(dir: &Dir, p: &Path, contents: &[u8]) -> io::Result<Option<bool>> {
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
        Ok(None) => return Ok(Some(false)),
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
    written.map(|()| Some(true))
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
///
/// The file is locked (`flock`) while this process holds it: the lock
/// ends with the process, so [`sweep`] tells a writer that is gone from
/// one still writing. Another process may take the lock between the
/// file's creation and this process's: a sweep, which then removes it,
/// or any process that opened it, which may hold it for good. Either way
/// the file is passed over for another, without waiting for the lock
/// (see [`claim`]); a write whose new files are all taken so, one after
/// another, fails rather than trying for ever.
fn new_file(dir: &Dir, target: &Path, options: &OpenOptions) -> io::Result<(PathBuf, File)> {
    #[cfg(unix)]
    let claim_it = claim;
    // Without `flock`, nothing to claim.
    #[cfg(not(unix))]
    let claim_it = |_: &File| Ok(true);
    new_file_claimed(dir, target, options, claim_it)
}

/// [`new_file`], with `claim` taking each new file's lock (a parameter,
/// so that a test can play the other process).
fn new_file_claimed(
    dir: &Dir,
    target: &Path,
    options: &OpenOptions,
    claim: impl Fn(&File) -> io::Result<bool>,
) -> io::Result<(PathBuf, File)> {
    let mut taken = 0;
    loop {
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = target.with_file_name(format!("{PREFIX}{}-{n}", std::process::id()));
        match dir.open_with(&temp, options) {
            Ok(file) => {
                if !claim(&file)? {
                    taken += 1;
                    if taken == TAKEN_TRIES {
                        return Err(io::Error::new(
                            io::ErrorKind::WouldBlock,
                            "another process took the lock of each new file of the write",
                        ));
                    }
                    continue;
                }
                return Ok((temp, file));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
}

/// How many new files whose lock another process took a write passes
/// over before it fails: a sweep takes one now and then, a process that
/// takes each one is not a sweep.
const TAKEN_TRIES: u32 = 16;

/// Takes the lock of the new file `file` without waiting: false if
/// another process holds it, or if the file has no name left (a sweep
/// took the lock and removed it). A lock that another process holds for
/// as long as it likes (any process may open the file and `flock` it)
/// would otherwise hold the write, and every write of the workspace
/// queued behind it, as long.
#[cfg(unix)]
fn claim(file: &File) -> io::Result<bool> {
    match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(rustix::fs::fstat(file)?.st_nlink != 0),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Removes, in the directory `p` and every directory beneath it (symlinks
/// are not followed), the new files that writers killed before their
/// rename left behind: the regular files named as [`left_behind`] says
/// whose lock nobody holds. A file a write still holds is left alone,
/// whichever process makes it. Returns how many were removed.
pub(super) fn sweep(dir: &Dir, p: &Path) -> io::Result<usize> {
    let mut removed = 0;
    let mut pending = vec![p.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in dir.read_dir(&at)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = at.join(entry.file_name());
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file()
                && left_behind(&entry.file_name().to_string_lossy())
                && let Some(locked) = unheld(dir, &path)?
            {
                match dir.remove_file(&path) {
                    Ok(()) => removed += 1,
                    // Removed by another sweep meanwhile.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
                drop(locked);
            }
        }
    }
    Ok(removed)
}

/// The new file at `p`, locked, if no writer holds its lock: `None` for
/// one a write still holds, one that is gone meanwhile (renamed into
/// place by its writer), and one this process may not open (another
/// user's). The caller keeps it open until the name is removed, so that a
/// writer that had not locked it yet finds it without a name.
fn unheld(dir: &Dir, p: &Path) -> io::Result<Option<File>> {
    let file = match open_regular(dir, p, OpenOptions::new().read(true)) {
        Ok(Some((file, _))) => file,
        Ok(None) => return Ok(None),
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied) => return Ok(None),
        Err(e) => return Err(e),
    };
    #[cfg(unix)]
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(file)),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
        Err(e) => Err(e.into()),
    }
    #[cfg(not(unix))]
    Ok(Some(file))
}

/// Writes `contents` through the symlink at `p`, whose target did not
/// exist a moment ago, creating it; `None` when the open found a file
/// there after all.
fn write_in_place(dir: &Dir, p: &Path, contents: &[u8]) -> io::Result<Option<bool>> {
    let mut options = OpenOptions::new();
    // Not truncated on opening: what the target is by now is looked at
    // first.
    options.write(true).create(true);
    let Some((mut file, len)) = open_regular(dir, p, &mut options)? else {
        return Ok(Some(false));
    };
    // Only a file with nothing in it and no other name is written in
    // place. One that appeared at the target in between (a file with
    // contents, or a hard link of a file elsewhere, which a command still
    // running can make) is replaced by the rename, as any existing file
    // is: nothing of it is truncated, and its other names keep it as it
    // was.
    #[cfg(unix)]
    let others = rustix::fs::fstat(&file)?.st_nlink != 1;
    #[cfg(not(unix))]
    let others = false;
    if len != 0 || others {
        return Ok(None);
    }
    file.write_all(contents).map(|()| Some(true))
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

    /// A symlink's target that was missing when the write looked, and is
    /// by the time it opens a hard link of a file elsewhere (which a
    /// command still running can make) or a file with contents: neither is
    /// written in place. The write looks again and replaces the name by
    /// the rename, so the file elsewhere keeps what it held.
    #[cfg(unix)]
    #[test]
    fn a_target_that_appeared_under_the_link_is_not_written_in_place() {
        let root = tempfile::tempdir().expect("a temp dir");
        let (inside, outside) = (root.path().join("ws"), root.path().join("outside"));
        std::fs::create_dir(&inside).expect("ws");
        std::fs::create_dir(&outside).expect("outside");
        std::fs::write(outside.join("secret"), "kept").expect("secret");
        let dir = Dir::open_ambient_dir(&inside, ambient_authority()).expect("the dir");
        std::os::unix::fs::symlink("target", inside.join("link")).expect("a dangling link");
        // As if it appeared between the look and the open.
        std::fs::hard_link(outside.join("secret"), inside.join("target")).expect("a hard link");
        assert_eq!(write_in_place(&dir, Path::new("link"), b"new").expect("opened"), None);
        assert_eq!(std::fs::read_to_string(outside.join("secret")).expect("read"), "kept");
        assert!(replace(&dir, Path::new("link"), b"new").expect("replaced"));
        assert_eq!(std::fs::read_to_string(outside.join("secret")).expect("read"), "kept");
        assert_eq!(std::fs::read_to_string(inside.join("target")).expect("read"), "new");
        // Nor an empty one elsewhere, which only its other name tells apart.
        std::fs::remove_file(inside.join("target")).expect("removed");
        std::fs::write(outside.join("empty"), "").expect("an empty file");
        std::fs::hard_link(outside.join("empty"), inside.join("target")).expect("a hard link");
        assert_eq!(write_in_place(&dir, Path::new("link"), b"new").expect("opened"), None);
        assert_eq!(std::fs::read_to_string(outside.join("empty")).expect("read"), "");
        // A file with contents that appeared there is not truncated either.
        std::fs::remove_file(inside.join("target")).expect("removed");
        std::fs::write(inside.join("target"), "contents").expect("a file");
        assert_eq!(write_in_place(&dir, Path::new("link"), b"x").expect("opened"), None);
        assert_eq!(std::fs::read_to_string(inside.join("target")).expect("read"), "contents");
        // Nothing there: created through the link, as before.
        std::fs::remove_file(inside.join("target")).expect("removed");
        assert!(replace(&dir, Path::new("link"), b"made").expect("written"));
        assert_eq!(std::fs::read_to_string(inside.join("target")).expect("read"), "made");
        assert!(std::fs::symlink_metadata(inside.join("link")).expect("the link").is_symlink());
    }

    /// The sweep removes, beneath the directory, the new files no writer
    /// holds, and leaves alone one still held (by a lock on another open
    /// of it, as another process's write holds it), names that are not
    /// new files, and a directory or a symlink under such a name.
    #[cfg(unix)]
    #[test]
    fn the_sweep_removes_only_what_no_writer_holds() {
        let root = tempfile::tempdir().expect("a temp dir");
        let dir = Dir::open_ambient_dir(root.path(), ambient_authority()).expect("the dir");
        let at = |name: &str| root.path().join(name);
        std::fs::create_dir_all(at("sub/deeper")).expect("dirs");
        let dead = [format!("{PREFIX}1-0"), format!("sub/{PREFIX}2-5"), format!("sub/deeper/{PREFIX}3-9")];
        for name in &dead {
            std::fs::write(at(name), "half").expect("a file left behind");
        }
        let held = format!("sub/{PREFIX}4-1");
        std::fs::write(at(&held), "being written").expect("a file being written");
        let writer = std::fs::File::open(at(&held)).expect("open");
        rustix::fs::flock(&writer, rustix::fs::FlockOperation::LockExclusive).expect("the writer's lock");
        let kept = ["f.txt".to_owned(), format!("{PREFIX}x-1"), format!("sub/{PREFIX}7")];
        for name in &kept {
            std::fs::write(at(name), "mine").expect("a file");
        }
        std::fs::create_dir(at(&format!("{PREFIX}5-5"))).expect("a directory so named");
        std::os::unix::fs::symlink("f.txt", at(&format!("sub/{PREFIX}6-6"))).expect("a symlink so named");

        assert_eq!(sweep(&dir, Path::new(".")).expect("swept"), dead.len());
        for name in &dead {
            assert!(!at(name).exists(), "{name} is left");
        }
        for name in kept.iter().chain([&held]) {
            assert!(at(name).is_file(), "{name} was removed");
        }
        assert!(at(&format!("{PREFIX}5-5")).is_dir());
        assert!(at(&format!("sub/{PREFIX}6-6")).symlink_metadata().expect("the link").is_symlink());
        drop(writer);
        assert_eq!(sweep(&dir, Path::new("sub")).expect("swept"), 1, "its writer is gone");
        assert!(!at(&held).exists());
    }

    /// A write's new file is locked while the write holds it, so a sweep
    /// (here, a lock on another open of it) passes it over; a sweep that
    /// took it first and removed it leaves the write another name.
    #[cfg(unix)]
    #[test]
    fn a_new_file_is_locked_while_its_write_holds_it() {
        use rustix::fs::{FlockOperation, flock};
        let root = tempfile::tempdir().expect("a temp dir");
        let dir = Dir::open_ambient_dir(root.path(), ambient_authority()).expect("the dir");
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let (temp, file) = new_file(&dir, Path::new("f.txt"), &options).expect("a new file");
        let other = std::fs::File::open(root.path().join(&temp)).expect("another open");
        assert_eq!(flock(&other, FlockOperation::NonBlockingLockExclusive), Err(rustix::io::Errno::WOULDBLOCK));
        assert_eq!(sweep(&dir, Path::new(".")).expect("swept"), 0);
        drop(file);
        flock(&other, FlockOperation::NonBlockingLockExclusive).expect("free once the write is done");
    }

    /// A new file whose lock another process took (any process may open
    /// it and hold its lock for good) is given up at once, not waited for.
    #[cfg(unix)]
    #[test]
    fn a_new_file_locked_by_another_is_given_up_without_waiting() {
        use rustix::fs::{FlockOperation, flock};
        let root = tempfile::tempdir().expect("a temp dir");
        let dir = Dir::open_ambient_dir(root.path(), ambient_authority()).expect("the dir");
        let name = format!("{PREFIX}1-1");
        std::fs::write(root.path().join(&name), "").expect("a new file");
        let holder = std::fs::File::open(root.path().join(&name)).expect("another open");
        flock(&holder, FlockOperation::LockExclusive).expect("another's lock");
        let file = dir.open(&name).expect("the write's open");
        let (sent, claimed) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = sent.send(claim(&file).map_err(|e| e.to_string()).map(|claimed| (claimed, file)));
        });
        let (claimed, file) = claimed
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the claim waited for the other's lock")
            .expect("no error");
        assert!(!claimed, "the other holds the lock");
        drop(holder);
        assert!(claim(&file).expect("no error"), "free once the other lets go");
        std::fs::remove_file(root.path().join(&name)).expect("removed");
        assert!(!claim(&file).expect("no error"), "a file removed has no name left");
    }

    /// A write passes over each new file another process holds, and
    /// fails once it has passed over [`TAKEN_TRIES`] in a row.
    #[test]
    fn a_write_passes_over_taken_new_files_and_gives_up_after_so_many() {
        let root = tempfile::tempdir().expect("a temp dir");
        let dir = Dir::open_ambient_dir(root.path(), ambient_authority()).expect("the dir");
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let tries = std::cell::Cell::new(0u32);
        let taken_twice = |_: &File| {
            tries.set(tries.get() + 1);
            Ok(tries.get() > 2)
        };
        let (temp, _file) =
            new_file_claimed(&dir, Path::new("f.txt"), &options, taken_twice).expect("the third is claimed");
        assert_eq!(tries.get(), 3);
        assert!(root.path().join(&temp).is_file());

        tries.set(0);
        let always_taken = |_: &File| {
            tries.set(tries.get() + 1);
            // Bounded here, so that a loop that never gives up fails.
            assert!(tries.get() <= TAKEN_TRIES, "tried past the limit");
            Ok(false)
        };
        let error = new_file_claimed(&dir, Path::new("f.txt"), &options, always_taken).expect_err("every one taken");
        assert_eq!(error.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(tries.get(), TAKEN_TRIES);
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
