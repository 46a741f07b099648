//! Ending an MCP server and every process it started: the [`Group`] an
//! [`McpServer`](super::McpServer)'s connection holds kills them all when
//! dropped, and [`kill_all`] does so when the server exits on its own.
//!
//! The server runs in its own process group, and killing the group ends
//! whatever stayed in it. A descendant that left the group (`setsid`, a
//! daemon's double fork) would outlive it, so on Linux each descendant is
//! also found by what leaving the group does not change: its parent (a
//! process already found, the server first) or its environment, inherited
//! from the server's, which holds [`MARK`] set to a value of that server's
//! own (a descendant whose parent has exited, adopted by init, is still
//! found). Each process found is stopped at once, so that it cannot start
//! more while the search goes on; the search repeats until it finds no
//! new one, then every one is killed. Each is signalled through a pidfd
//! opened before it was checked: a pid that a process outside the tree
//! took in the meantime is never signalled.
//!
//! A descendant that both clears its environment and loses its parent
//! (a double fork under `env -i`) is beyond reach; so is one on another
//! Unix than Linux that left the group.

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The variable set in the server's environment, and so, unless they
/// change it, in its descendants': its value names the server.
pub(super) const MARK: &str = "AGENT_FSM_MCP_SERVER";

/// A value of [`MARK`] no other server has: this process's id, a count
/// and a random number.
pub(super) fn new_mark() -> Arc<str> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}-{n}-{:016x}", std::process::id(), RandomState::new().hash_one(n)).into()
}

/// The server and what it started, killed whole when dropped.
pub(super) struct Group {
    /// The server's pid; 0 if it has none, or once it has been reaped.
    pid: Arc<AtomicU32>,
    /// The server's value of [`MARK`].
    mark: Arc<str>,
}

impl Group {
    pub(super) fn new(pid: Option<u32>, mark: Arc<str>) -> Group {
        Group { pid: Arc::new(AtomicU32::new(pid.unwrap_or(0))), mark }
    }

    /// The server's pid, until it has been reaped.
    pub(super) fn pid(&self) -> Option<u32> {
        Some(self.pid.load(Ordering::Acquire)).filter(|&pid| pid != 0)
    }

    /// The cell holding the pid: the task that reaps the server clears it.
    pub(super) fn pid_cell(&self) -> Arc<AtomicU32> {
        Arc::clone(&self.pid)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        kill_all(self.pid(), &self.mark);
    }
}

/// Kills every process the server `mark` started, and the server `pid`
/// with its process group if it has not been reaped (`None`: it has,
/// and its pid may be another process's).
pub(super) fn kill_all(pid: Option<u32>, mark: &str) {
    #[cfg(target_os = "linux")]
    linux::kill_descendants(pid, &format!("{MARK}={mark}"));
    #[cfg(not(target_os = "linux"))]
    let _ = mark;
    if let Some(pid) = pid {
        kill_group(pid);
    }
}

/// Kills the process group `pid` (`SIGKILL`); one already gone is no error.
pub(super) fn kill_group(pid: u32) {
    // No server is init, and group 1 would be signalled as `kill(-1)`:
    // every process the agent may signal.
    if pid <= 1 {
        return;
    }
    #[cfg(not(unix))]
    let _ = pid;
    #[cfg(unix)]
    if let Some(pid) = rustix::process::Pid::from_raw(pid.cast_signed()) {
        // ESRCH: the group is gone already.
        if let Err(error) = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL)
            && error != rustix::io::Errno::SRCH
        {
            tracing::warn!(pid = pid.as_raw_nonzero().get(), %error, "cannot kill the MCP server's process group");
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::{HashMap, HashSet};

    use rustix::fd::OwnedFd;
    use rustix::process::{Pid, PidfdFlags, Signal, kill_process, pidfd_open, pidfd_send_signal};

    /// The most rounds of the search: each finds what the processes found
    /// in the round before started before they stopped. A tree still
    /// growing after that many is killed as far as it was found.
    const ROUNDS: usize = 64;

    /// A process found, to be signalled.
    enum Found {
        /// Through its pidfd: never another process.
        Fd(OwnedFd),
        /// By its pid, where pidfds are missing (Linux before 5.3).
        Pid(Pid),
    }

    impl Found {
        fn signal(&self, signal: Signal) {
            let _ = match self {
                Found::Fd(fd) => pidfd_send_signal(fd, signal),
                Found::Pid(pid) => kill_process(*pid, signal),
            };
        }
    }

    /// Stops, then kills, the server `server` (unless reaped) and every
    /// process found as its descendant: a child of one found, or one
    /// whose environment holds `needle` (the server's mark, as
    /// `NAME=value`).
    pub(super) fn kill_descendants(server: Option<u32>, needle: &str) {
        let mut found: HashMap<u32, Found> = HashMap::new();
        // The server first: stopped, it starts no more.
        if let Some(pid) = server.and_then(|pid| Pid::from_raw(pid.cast_signed())) {
            let server = pidfd_open(pid, PidfdFlags::empty()).map_or(Found::Pid(pid), Found::Fd);
            server.signal(Signal::STOP);
            found.insert(pid.as_raw_nonzero().get().cast_unsigned(), server);
        }
        for _ in 0..ROUNDS {
            let new = search(needle.as_bytes(), &found);
            if new.is_empty() {
                break;
            }
            for (pid, process) in new {
                process.signal(Signal::STOP);
                found.insert(pid, process);
            }
        }
        for process in found.values() {
            process.signal(Signal::KILL);
        }
        if found.len() > 1 {
            tracing::debug!(processes = found.len(), "an MCP server and its descendants are killed");
        }
    }

    /// The processes not yet `found` that are a child of one found (or of
    /// one of these), or whose environment holds `needle`; each opened as
    /// a pidfd, then checked again.
    fn search(needle: &[u8], found: &HashMap<u32, Found>) -> Vec<(u32, Found)> {
        let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
        let me = std::process::id();
        let parents: HashMap<u32, u32> = entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != me && !found.contains_key(&pid))
            .filter_map(|pid| Some((pid, parent(pid)?)))
            .collect();
        // Descendants of those found, however deep, then the marked.
        let mut members: HashSet<u32> = found.keys().copied().collect();
        let mut new: Vec<u32> = Vec::new();
        loop {
            let before = new.len();
            new.extend(
                parents
                    .iter()
                    .filter(|(pid, ppid)| members.contains(ppid) && !members.contains(pid))
                    .map(|(pid, _)| *pid),
            );
            members.extend(&new[before..]);
            if new.len() == before {
                break;
            }
        }
        new.extend(parents.keys().filter(|pid| !members.contains(pid) && marked(**pid, needle)));
        members.extend(&new);
        new.into_iter()
            .filter_map(|pid| {
                let raw = Pid::from_raw(pid.cast_signed())?;
                let process = match pidfd_open(raw, PidfdFlags::empty()) {
                    Ok(fd) => Found::Fd(fd),
                    Err(rustix::io::Errno::SRCH) => return None,
                    Err(_) => Found::Pid(raw),
                };
                // Checked again now that the pidfd holds the process: the
                // pid was read before, and may have been taken since.
                let still = parent(pid).is_some_and(|ppid| members.contains(&ppid)) || marked(pid, needle);
                still.then_some((pid, process))
            })
            .collect()
    }

    /// The parent of `pid`, from `/proc/{pid}/stat` (after the command's
    /// name, which may hold anything: the state, then the parent).
    fn parent(pid: u32) -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()
    }

    /// Whether the environment of `pid` holds `needle` (a process of
    /// another user's cannot be read, and is none of the server's).
    fn marked(pid: u32, needle: &[u8]) -> bool {
        std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|environ| environ.split(|&b| b == 0).any(|v| v == needle))
    }
}
