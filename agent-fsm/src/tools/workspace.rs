//! The file tools: a directory handle, and every path resolved beneath it
//! (cap-std), never by its text.

use super::replace::{climbs_out, escape, left_behind, replace, sweep};
use super::{Listing, ToolError};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, OpenOptions};
use std::io::{self, Read as _};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A directory an agent's tools work in, and nothing outside it.
///
/// Every path is relative to the directory and resolved beneath it through
/// a handle opened once by [`Workspace::open`]: no absolute path, no `..`
/// above it and no symlink leading out of it is followed (see the
/// [module docs](crate::tools) for exactly what is and is not confined).
/// The calls run on tokio's blocking pool, so they must be awaited inside a
/// tokio runtime. Cloning is cheap and shares the handle, and the turn
/// that writes and edits take (see [`write_file`](Workspace::write_file)).
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    dir: Arc<Dir>,
    max_file_bytes: u64,
    max_listed: usize,
    /// Held by each write and edit while it reads and replaces its file.
    writes: Arc<Mutex<()>>,
}

/// The largest file [`Workspace::read_file`] reads unless told otherwise:
/// 1 MiB, far more than a model's context holds in one tool result.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1 << 20;

/// The most names [`Workspace::listing`] returns unless told otherwise:
/// 1,000, a page a model can read; a directory holding more (a
/// `node_modules`, a build's output) is summed up by how many are left out.
pub const DEFAULT_MAX_LISTED: usize = 1_000;

/// A path-level failure for the model: the escape cap-std refuses, the
/// usual kinds, and the rest as it is.
fn classify(path: &str, error: io::Error) -> ToolError {
    let path = path.to_owned();
    match error.kind() {
        // cap-std reports an escape (an absolute path, `..` above the
        // root, a symlink out) as a permission error of its own, with no
        // OS error code; a denied permission from the OS carries one.
        io::ErrorKind::PermissionDenied if error.raw_os_error().is_none() => ToolError::OutsideWorkspace { path },
        io::ErrorKind::NotFound => ToolError::NotFound { path },
        _ => ToolError::Io { path, source: error },
    }
}

/// Marks its flag when dropped: held by a write's or an edit's future, so
/// that the work it handed to the blocking pool, which runs on once
/// started whatever becomes of the future, learns that its call was
/// dropped (an interrupt, a timeout or a shutdown cancelled it).
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Takes the workspace's write turn for a write or edit whose future
/// holds `dropped`'s [`Dropped`]: `None` when the call was dropped while
/// it waited for the turn, so that a change the model was told was
/// cancelled is not made after all, once the writes before it are done.
fn turn<'a>(writes: &'a Mutex<()>, dropped: &AtomicBool) -> Option<std::sync::MutexGuard<'a, ()>> {
    let held = writes.lock().unwrap_or_else(PoisonError::into_inner);
    (!dropped.load(Ordering::SeqCst)).then_some(held)
}

/// The error of a write or edit dropped before its turn, which no one
/// reads: its future is gone.
fn dropped_before_its_turn() -> io::Error {
    io::Error::other("the call was dropped before its turn to write")
}

/// What reading a file found, decided on the blocking pool.
enum Read {
    Bytes(Vec<u8>),
    NotAFile,
    TooLarge(u64),
}

/// Opens `path` with `options` and returns it if it is a regular file,
/// `None` if it is anything else.
///
/// The caller's check of the path comes first, but the path can be swapped
/// in between (a FIFO renamed over the file by a shell command), so the
/// kind is checked again on the handle opened. The open itself must not
/// block: opening a FIFO waits for its other end unless `O_NONBLOCK` is
/// set, which is cleared again once the handle is known to be a file.
pub(super) fn open_regular(dir: &Dir, path: &Path, options: &mut OpenOptions) -> io::Result<Option<(File, u64)>> {
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = dir.open_with(path, options)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(None);
    }
    #[cfg(unix)]
    {
        let flags = rustix::fs::fcntl_getfl(&file)?;
        rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)?;
    }
    Ok(Some((file, meta.len())))
}

/// How many times the non-empty `old` occurs in `text`, for an edit: the
/// occurrences that do not overlap, and when that is one, 2 if another
/// occurrence starts inside it (`aa` in `aaa`), since either could be the
/// one meant. Two linear searches, however many times `old` overlaps
/// itself.
fn occurrences(text: &str, old: &str) -> usize {
    let mut found = text.match_indices(old);
    let Some((first, _)) = found.next() else { return 0 };
    match found.count() {
        0 => {
            let next = first + text[first..].chars().next().map_or(0, char::len_utf8);
            if text[next..].contains(old) { 2 } else { 1 }
        }
        more => more + 1,
    }
}

/// `bytes` as text, or [`ToolError::NotUtf8`].
fn utf8(path: &str, bytes: Vec<u8>) -> Result<String, ToolError> {
    String::from_utf8(bytes).map_err(|_| ToolError::NotUtf8 { path: path.to_owned() })
}

/// The text of the file at `path`, from what [`read_regular`] found, or
/// why there is none.
fn text_of(path: &str, read: Read, max: u64) -> Result<String, ToolError> {
    match read {
        Read::Bytes(bytes) => utf8(path, bytes),
        Read::NotAFile => Err(ToolError::NotAFile { path: path.to_owned() }),
        Read::TooLarge(size) => Err(ToolError::TooLarge { path: path.to_owned(), size, max }),
    }
}

/// Reads the regular file at `p`, at most `max` bytes of it; see
/// [`Workspace::read_file`].
fn read_regular(dir: &Dir, p: &Path, max: u64) -> io::Result<Read> {
    let meta = dir.metadata(p)?;
    if !meta.is_file() {
        return Ok(Read::NotAFile);
    }
    if meta.len() > max {
        return Ok(Read::TooLarge(meta.len()));
    }
    let Some((file, len)) = open_regular(dir, p, OpenOptions::new().read(true))? else {
        return Ok(Read::NotAFile);
    };
    if len > max {
        return Ok(Read::TooLarge(len));
    }
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Ok(Read::TooLarge(bytes.len() as u64));
    }
    Ok(Read::Bytes(bytes))
}

/// Whether the text of `p` names a directory whatever is there: it ends
/// with a separator, `.` or `..` (`new/`, `src/.`). `Path` drops a
/// trailing `/` and `.`, so such a path would be written as the file
/// `new` or `src`, a name the model did not give, which its own path then
/// fails to read back.
fn names_a_directory(p: &Path) -> bool {
    let text = p.as_os_str().as_encoded_bytes();
    !text.is_empty()
        && matches!(text.rsplit(|&b| std::path::is_separator(char::from(b))).next(), Some(b"" | b"." | b".."))
}

/// Replaces the regular file at `p` with `contents`, making the
/// directories it needs; false if something else is at `p`. See
/// [`Workspace::write_file`].
fn write_regular(dir: &Dir, p: &Path, contents: &[u8]) -> io::Result<bool> {
    if names_a_directory(p) {
        // Refused for what it is where that is known: a path that leads
        // out (by its text or through a symlink), a file on the way.
        if climbs_out(p) {
            return Err(escape());
        }
        return match dir.metadata(p) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(false),
        };
    }
    if let Some(parent) = p.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        // Resolved first (following symlinks, beneath the root), so that a
        // symlinked directory on the way is either followed inside or
        // refused as an escape, rather than reported by `create_dir_all` as
        // a file that exists. A parent that is a file fails the write below.
        match dir.metadata(parent) {
            Ok(_) => {}
            // A path that climbs out by its text is refused before anything
            // is made: `create_dir_all` would make the missing directories
            // before the `..` that leads out.
            Err(e) if e.kind() == io::ErrorKind::NotFound && climbs_out(parent) => return Err(escape()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => dir.create_dir_all(parent)?,
            Err(e) => return Err(e),
        }
    }
    // Writing to a FIFO would block until something reads it.
    match dir.metadata(p) {
        Ok(meta) if !meta.is_file() => return Ok(false),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    replace(dir, p, contents)
}

impl Workspace {
    /// Opens the directory `root` (which must exist) as a workspace.
    ///
    /// A relative `root` is made absolute against the current directory
    /// now (symlinks left as they are): the file tools hold the directory
    /// itself, and the shell and [`host_path`](Self::host_path), which go
    /// by its path, must keep naming the same directory after the process
    /// changes its current directory.
    ///
    /// # Errors
    /// `root` cannot be opened as a directory.
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = std::path::absolute(root.as_ref())?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority())?;
        Ok(Workspace {
            root,
            dir: Arc::new(dir),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_listed: DEFAULT_MAX_LISTED,
            writes: Arc::default(),
        })
    }

    /// The same workspace, reading files of at most `max` bytes (see
    /// [`read_file`](Self::read_file); [`DEFAULT_MAX_FILE_BYTES`] unless
    /// set).
    #[must_use]
    pub fn with_max_file_bytes(mut self, max: u64) -> Self {
        self.max_file_bytes = max;
        self
    }

    /// The same workspace, listing at most `max` names of a directory (see
    /// [`listing`](Self::listing); [`DEFAULT_MAX_LISTED`] unless set).
    #[must_use]
    pub fn with_max_listed(mut self, max: usize) -> Self {
        self.max_listed = max;
        self
    }

    /// The directory, as the path it was opened by, made absolute (see
    /// [`open`](Self::open)).
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Runs `op` on the directory handle and `path`, on the blocking pool.
    async fn blocking<T: Send + 'static>(
        &self,
        path: &str,
        op: impl FnOnce(&Dir, &Path) -> io::Result<T> + Send + 'static,
    ) -> Result<T, ToolError> {
        let dir = Arc::clone(&self.dir);
        let owned = path.to_owned();
        match tokio::task::spawn_blocking(move || op(&dir, Path::new(&owned))).await {
            Ok(result) => result.map_err(|e| classify(path, e)),
            Err(join) => Err(ToolError::Io { path: path.to_owned(), source: io::Error::other(join) }),
        }
    }

    /// The text of the file at `path`.
    ///
    /// Only a regular file is read, and only up to the workspace's size
    /// limit ([`with_max_file_bytes`](Self::with_max_file_bytes)): a FIFO
    /// that a shell command made would block a thread of the blocking pool
    /// until something writes to it, and a device or a huge file would fill
    /// memory. The file's kind is checked before it is opened and its size
    /// again while it is read, so a file that grows past the limit in
    /// between is refused too; a FIFO swapped in for the file after the
    /// check is found on the handle, opened without waiting, and refused.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`], [`ToolError::NotFound`],
    /// [`ToolError::NotAFile`] (a directory, a FIFO, a device),
    /// [`ToolError::TooLarge`], [`ToolError::NotUtf8`], or
    /// [`ToolError::Io`] (no permission).
    pub async fn read_file(&self, path: &str) -> Result<String, ToolError> {
        let max = self.max_file_bytes;
        let read = self.blocking(path, move |dir, p| read_regular(dir, p, max)).await?;
        text_of(path, read, max)
    }

    /// Writes `contents` to the file at `path`, replacing it, and creates
    /// the directories it needs first (inside the workspace).
    ///
    /// The file is replaced in one step: the contents go to a new file
    /// beside it, flushed to the disk, which is then renamed over it. A
    /// write that fails part way (a full disk) or a process killed during
    /// it leaves the file as it was, never truncated or half written (a
    /// process killed before the rename may leave the new file behind, a
    /// hidden name starting with `.agent-fsm-write-`, which the listings
    /// leave out and [`remove_left_behind`](Self::remove_left_behind)
    /// removes). The file keeps its permissions, and its owner where this
    /// process may set it (as root); a symlink at `path` is followed, and
    /// its target replaced. A symlink whose target does not exist is
    /// written through, creating the target; a file that appears there
    /// meanwhile (with contents, or a hard link of a file elsewhere) is
    /// replaced as any existing file is, never written in place, and a
    /// target that keeps appearing and disappearing fails the write with
    /// [`ToolError::Io`] after a few tries. A file this process may not write is refused
    /// as before, though the directory would let it be renamed over.
    ///
    /// The writes and edits of one workspace (and of its clones) take
    /// turns, so that an [`edit_file`](Self::edit_file) running beside a
    /// write of the same file does not undo it; a shell command or another
    /// process writing the file meanwhile is not held off. A write whose
    /// future is dropped (an interrupt, a timeout or a shutdown cancelled
    /// the call) while it waits for its turn is not made; one already
    /// writing when its future is dropped finishes.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] (a symlinked directory or file on
    /// the way leads out), [`ToolError::NotAFile`] (something other than a
    /// regular file is at `path`: a directory, a FIFO; or `path` names a
    /// directory by its text, ending with `/`, `.` or `..`, and nothing is
    /// made), or [`ToolError::Io`].
    pub async fn write_file(&self, path: &str, contents: &str) -> Result<(), ToolError> {
        let contents = contents.to_owned();
        let writes = Arc::clone(&self.writes);
        let dropped = Arc::new(AtomicBool::new(false));
        let _armed = Dropped(Arc::clone(&dropped));
        self.blocking(path, move |dir, p| {
            let _held = turn(&writes, &dropped).ok_or_else(dropped_before_its_turn)?;
            write_regular(dir, p, contents.as_bytes())
        })
        .await?
        .then_some(())
        .ok_or_else(|| ToolError::NotAFile { path: path.to_owned() })
    }

    /// Replaces the one occurrence of `old` in the file at `path` with
    /// `new`. Two occurrences that overlap (`aa` twice in `aaa`) are two:
    /// the edit is refused as ambiguous rather than made at the first.
    ///
    /// The file is read and written back with no other write or edit of
    /// the workspace in between (see [`write_file`](Self::write_file)):
    /// several edits of one file made at once, as a model's reply with
    /// several `edit_file` calls runs them, each land, rather than each
    /// writing back the file as it was before the others. As with a
    /// write, an edit whose future is dropped while it waits for its turn
    /// is not made.
    ///
    /// # Errors
    /// [`ToolError::EditNotFound`] when `old` does not occur,
    /// [`ToolError::EditAmbiguous`] when it occurs more than once,
    /// [`ToolError::EditEmpty`] when it is empty (the file is then
    /// unchanged), and the errors of [`read_file`](Self::read_file) and
    /// [`write_file`](Self::write_file).
    pub async fn edit_file(&self, path: &str, old: &str, new: &str) -> Result<(), ToolError> {
        if old.is_empty() {
            return Err(ToolError::EditEmpty { path: path.to_owned() });
        }
        let (max, writes, owned) = (self.max_file_bytes, Arc::clone(&self.writes), path.to_owned());
        let (old, new) = (old.to_owned(), new.to_owned());
        let dropped = Arc::new(AtomicBool::new(false));
        let _armed = Dropped(Arc::clone(&dropped));
        // Read and written under the workspace's write lock, in one step on
        // the blocking pool: another edit of the file (a second edit in the
        // same reply of the model) cannot write between this one's read and
        // its write, which would be lost; and a call dropped meanwhile
        // still lets go of the lock only once its write is done.
        self.blocking(path, move |dir, p| {
            let _held = turn(&writes, &dropped).ok_or_else(dropped_before_its_turn)?;
            let text = match text_of(&owned, read_regular(dir, p, max)?, max) {
                Ok(text) => text,
                Err(error) => return Ok(Err(error)),
            };
            Ok(match occurrences(&text, &old) {
                0 => Err(ToolError::EditNotFound { path: owned }),
                1 if write_regular(dir, p, text.replacen(&old, &new, 1).as_bytes())? => Ok(()),
                1 => Err(ToolError::NotAFile { path: owned }),
                count => Err(ToolError::EditAmbiguous { path: owned, count }),
            })
        })
        .await?
    }

    /// The names in the directory at `path` (`""` or `"."` for the
    /// workspace itself), sorted. A name that is not UTF-8 is shown with
    /// U+FFFD in place of the bytes that are not. The new file of a write
    /// whose process was killed before its rename (see
    /// [`write_file`](Self::write_file)) is not listed: it is no file of
    /// the agent's, and a run that was killed and resumed lists what a run
    /// never killed lists.
    ///
    /// Every name is returned, however many the directory holds; what a
    /// model is shown should come from [`listing`](Self::listing), which
    /// bounds it.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`], [`ToolError::NotFound`], or
    /// [`ToolError::Io`] (not a directory, no permission).
    pub async fn list_files(&self, path: &str) -> Result<Vec<String>, ToolError> {
        let path = if path.is_empty() { "." } else { path };
        self.blocking(path, |dir, p| {
            let mut names = Vec::new();
            for entry in dir.read_dir(p)? {
                let name = entry?.file_name().to_string_lossy().into_owned();
                if !left_behind(&name) {
                    names.push(name);
                }
            }
            names.sort();
            Ok(names)
        })
        .await
    }

    /// The names in the directory at `path`, as [`list_files`](Self::list_files)
    /// gives them, but at most the workspace's limit of them
    /// ([`with_max_listed`](Self::with_max_listed)): the first in sorted
    /// order, with the count of the rest. Only that many names are held at
    /// once while the directory is read, however large it is.
    ///
    /// # Errors
    /// As [`list_files`](Self::list_files).
    pub async fn listing(&self, path: &str) -> Result<Listing, ToolError> {
        let path = if path.is_empty() { "." } else { path };
        let max = self.max_listed;
        self.blocking(path, move |dir, p| {
            // The `max` smallest names so far, the largest on top, so that
            // each name read past the limit costs one comparison.
            let mut kept = std::collections::BinaryHeap::with_capacity(max.min(4_096).saturating_add(1));
            let mut more = 0usize;
            for entry in dir.read_dir(p)? {
                let name = entry?.file_name().to_string_lossy().into_owned();
                if left_behind(&name) {
                    continue;
                }
                if kept.len() < max {
                    kept.push(name);
                } else if kept.peek().is_some_and(|largest| name < *largest) {
                    kept.pop();
                    kept.push(name);
                    more += 1;
                } else {
                    more += 1;
                }
            }
            Ok(Listing { names: kept.into_sorted_vec(), more })
        })
        .await
    }

    /// Removes the new files that writes killed before their rename left
    /// behind (see [`write_file`](Self::write_file)), in the directory at
    /// `path` and every directory beneath it ("" or "." for the whole
    /// workspace; symlinks are not followed). A write in progress holds a
    /// lock on its new file until its rename, which ends with its process,
    /// so only the files of writers that are gone are removed, whichever
    /// process (or container, on the same machine) writes. For a process
    /// starting again after a crash: a shell command (`git add -A`) would
    /// otherwise see those files. It reads every directory beneath `path`.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`], [`ToolError::NotFound`], or
    /// [`ToolError::Io`] (a directory that cannot be read).
    pub async fn remove_left_behind(&self, path: &str) -> Result<usize, ToolError> {
        let path = if path.is_empty() { "." } else { path };
        self.blocking(path, sweep).await
    }

    /// The path on the host of `path`, for handing to another program (a
    /// formatter, a compiler), after checking that it resolves inside the
    /// workspace now. A path that does not exist yet is accepted when the
    /// walk to it stays inside.
    ///
    /// This is a check, then a use by the other program: a symlink swapped
    /// in between is not caught. The workspace's own path is checked to
    /// still lead to the directory the file tools hold, else
    /// [`ToolError::Moved`]. Prefer the file methods, which resolve and
    /// open in one step. The check is a blocking file-system call.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`], or [`ToolError::Io`].
    pub fn host_path(&self, path: &str) -> Result<PathBuf, ToolError> {
        self.still_at_root()?;
        match self.dir.metadata(path) {
            Ok(_) => Ok(self.root.join(path)),
            Err(e) => match classify(path, e) {
                // Not there yet: the rest of the walk cannot be checked, so
                // it must be plain names (a `..` after a missing directory
                // would be resolved by the other program, not here).
                ToolError::NotFound { .. }
                    if Path::new(path).components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) =>
                {
                    Ok(self.root.join(path))
                }
                ToolError::NotFound { .. } => Err(ToolError::OutsideWorkspace { path: path.to_owned() }),
                other => Err(other),
            },
        }
    }

    /// Runs `command` with `sh -c` in the workspace directory; see
    /// [`run_command`](super::run_command), and the module docs for why a
    /// shell is not confined to the workspace.
    ///
    /// # Errors
    /// As [`run_command`](super::run_command), and [`ToolError::Moved`]
    /// when the workspace's path no longer leads to the directory the file
    /// tools hold (nothing is run then).
    #[cfg(unix)]
    pub async fn run_command(
        &self,
        command: &str,
        options: &super::ShellOptions,
    ) -> Result<super::CommandOutput, ToolError> {
        self.still_at_root()?;
        super::shell::run_in(&self.held_cwd(), &self.root, command, options).await
    }

    /// Where the shell starts: on Linux, the directory the file tools hold,
    /// by its handle (`/proc/self/fd/N`, which the child, a copy of this
    /// process until it runs `sh`, enters before the handle closes on
    /// `exec`), so that a symlink repointed after the check above cannot
    /// send the command elsewhere; the workspace's path where `/proc` is
    /// not mounted, or elsewhere.
    #[cfg(unix)]
    fn held_cwd(&self) -> PathBuf {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::{AsFd as _, AsRawFd as _};
            let by_handle = PathBuf::from(format!("/proc/self/fd/{}", self.dir.as_fd().as_raw_fd()));
            if by_handle.is_dir() {
                return by_handle;
            }
        }
        self.root.clone()
    }

    /// Whether the workspace's path, followed now, still leads to the
    /// directory the file tools hold (the same device and inode): the
    /// path is what the shell and `host_path` hand on. (Unix only: the
    /// shell is, and elsewhere the path is taken as it is.)
    fn still_at_root(&self) -> Result<(), ToolError> {
        #[cfg(unix)]
        {
            use cap_std::fs::MetadataExt as _;
            use std::os::unix::fs::MetadataExt as _;
            let held = self.dir.dir_metadata().map_err(|source| ToolError::Io { path: ".".to_owned(), source })?;
            // Gone, or something else there: either way not the workspace.
            match std::fs::metadata(&self.root) {
                Ok(now) if now.dev() == held.dev() && now.ino() == held.ino() => {}
                _ => return Err(ToolError::Moved { root: self.root.clone() }),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "workspace_dropped.rs"]
mod dropped;

#[cfg(all(test, unix))]
#[path = "workspace_held.rs"]
mod held;
