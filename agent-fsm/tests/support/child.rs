//! What the tests that kill their own child processes share: waiting for a
//! child with a limit, killing it with SIGKILL, and a small seeded
//! generator so that the kill points repeat from run to run.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use std::process::Child;
use std::time::{Duration, Instant};

/// Waits for `child` up to `limit`; `Some(success)` if it exited.
pub(crate) fn wait_for(child: &mut Child, limit: Duration) -> Option<bool> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("the child's status") {
            return Some(status.success());
        }
        if start.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// [`wait_for`], killing `child` if it has not exited: a test that fails
/// on that leaves no process behind (holding the test's output open).
pub(crate) fn finishes(child: &mut Child, limit: Duration) -> Option<bool> {
    let exited = wait_for(child, limit);
    if exited.is_none() {
        kill(child);
    }
    exited
}

/// Kills `child` with SIGKILL (no handler runs, nothing is flushed) and
/// reaps it.
pub(crate) fn kill(child: &mut Child) {
    child.kill().expect("SIGKILL");
    let _ = child.wait();
}

/// A small seeded generator (SplitMix64): the kill points repeat.
pub(crate) struct Seeded(pub(crate) u64);

impl Seeded {
    /// The next number.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number from `low` to `high`, both included.
    pub(crate) fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }
}
