//! The updates of one agent waiting for each of its open pages: one queue
//! per page, bounded by count ([`UPDATES_KEPT`]) and by bytes
//! ([`PAGE_BACKLOG`]). A page whose queue would pass either bound has it
//! emptied and is sent a fresh snapshot when it reads again, as a page
//! that fell behind is: a page that stops reading (a tab put to sleep, a
//! client that never reads) costs the process at most that many bytes,
//! not a thousand updates of up to 128 KiB of streamed text each.
//!
//! [`Agent`](super::log::Agent) sends each change here under its log's
//! lock, and a page's stream opens its queue under the same lock, so that
//! a page's snapshot and the updates after it never overlap.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::Notify;

/// How many updates an open page may fall behind before it is sent a
/// fresh snapshot instead.
pub(super) const UPDATES_KEPT: usize = 1024;

/// How many bytes of updates the inspector holds for one open page that
/// has not read them yet (beyond what its connection's buffers hold):
/// past them, they are dropped and the page is sent a fresh snapshot
/// when it reads again, as a page that fell behind by
/// a thousand updates is. A page that stops reading costs no more than
/// this, whatever the agent streams.
pub const PAGE_BACKLOG: usize = 4 * 1024 * 1024;

/// The open pages' queues.
#[derive(Default)]
pub(super) struct Feed {
    /// Each open page's queue; a page that closed drops its own, and its
    /// entry goes at the next update.
    pages: Mutex<Vec<Weak<Queue>>>,
    /// How many pages are open: read on every change of the agent, which
    /// is not written out at all while no page is open, without taking
    /// the lock above.
    open: Arc<AtomicUsize>,
}

/// One page's queue, shared by the feed (which fills it) and the page's
/// stream (which empties it).
#[derive(Default)]
struct Queue {
    waiting: Mutex<Waiting>,
    /// Told of each update queued, and of the page falling behind.
    ready: Notify,
}

#[derive(Default)]
struct Waiting {
    updates: VecDeque<Arc<str>>,
    /// The bytes of `updates`.
    bytes: usize,
    /// The page fell behind: `updates` were dropped, and it is to be
    /// sent a fresh snapshot instead.
    behind: bool,
}

/// What a page reads next.
pub(super) enum Read {
    /// The next update.
    Update(Arc<str>),
    /// The page fell behind: it is to be sent a fresh snapshot, from a
    /// queue opened anew.
    Behind,
}

/// One open page's end of the feed; dropping it closes the page's queue.
pub(super) struct Page(Arc<Queue>, Arc<AtomicUsize>);

impl Drop for Page {
    fn drop(&mut self) {
        self.1.fetch_sub(1, Ordering::AcqRel);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain data behind: a panic while it was held leaves nothing half
    // done that matters more than going on.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Feed {
    /// Whether no page is open.
    pub(super) fn is_empty(&self) -> bool {
        self.open.load(Ordering::Acquire) == 0
    }

    /// Queues `update` for each open page; a page whose queue would pass
    /// [`UPDATES_KEPT`] updates or [`PAGE_BACKLOG`] bytes falls behind
    /// instead.
    pub(super) fn send(&self, update: &Arc<str>) {
        self.each(|waiting| {
            if waiting.behind {
                // Its snapshot, taken when it reads again, holds this.
                return;
            }
            if waiting.updates.len() >= UPDATES_KEPT || waiting.bytes + update.len() > PAGE_BACKLOG {
                fall_behind(waiting);
                return;
            }
            waiting.bytes += update.len();
            waiting.updates.push_back(Arc::clone(update));
        });
    }

    /// Has each open page sent a fresh snapshot when it reads again,
    /// instead of the updates queued for it.
    pub(super) fn resync(&self) {
        self.each(fall_behind);
    }

    fn each(&self, mut change: impl FnMut(&mut Waiting)) {
        let mut pages = lock(&self.pages);
        pages.retain(|page| {
            let Some(page) = page.upgrade() else {
                return false;
            };
            change(&mut lock(&page.waiting));
            page.ready.notify_one();
            true
        });
    }

    /// A queue for a page that opens now.
    pub(super) fn open(&self) -> Page {
        let queue = Arc::new(Queue::default());
        let mut pages = lock(&self.pages);
        // Pages that closed while no change was sent are forgotten here.
        pages.retain(|page| page.strong_count() > 0);
        pages.push(Arc::downgrade(&queue));
        self.open.fetch_add(1, Ordering::AcqRel);
        Page(queue, Arc::clone(&self.open))
    }
}

fn fall_behind(waiting: &mut Waiting) {
    waiting.updates = VecDeque::new();
    waiting.bytes = 0;
    waiting.behind = true;
}

impl Page {
    /// The next update for this page, once there is one.
    ///
    /// # Cancel safety
    /// Cancel safe: an update is taken from the queue only when returned.
    pub(super) async fn next(&self) -> Read {
        loop {
            {
                let mut waiting = lock(&self.0.waiting);
                if waiting.behind {
                    return Read::Behind;
                }
                if let Some(update) = waiting.updates.pop_front() {
                    waiting.bytes -= update.len();
                    return Read::Update(update);
                }
            }
            // A permit is stored if the update came since the check above.
            self.0.ready.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(page: &Page) -> (usize, usize, bool) {
        let waiting = lock(&page.0.waiting);
        (waiting.updates.len(), waiting.bytes, waiting.behind)
    }

    #[test]
    fn a_page_past_the_bytes_kept_falls_behind_and_holds_nothing() {
        let feed = Feed::default();
        let page = feed.open();
        let big: Arc<str> = Arc::from("a".repeat(PAGE_BACKLOG / 4));
        for _ in 0..4 {
            feed.send(&big);
        }
        assert_eq!(waiting(&page), (4, PAGE_BACKLOG, false), "exactly the bound is kept");
        feed.send(&Arc::from("b"));
        assert_eq!(waiting(&page), (0, 0, true), "one byte more: dropped, to be resent as a snapshot");
        feed.send(&big);
        assert_eq!(waiting(&page), (0, 0, true), "nothing queued while behind");
    }

    #[test]
    fn a_page_past_the_updates_kept_falls_behind() {
        let feed = Feed::default();
        let page = feed.open();
        for _ in 0..UPDATES_KEPT {
            feed.send(&Arc::from("x"));
        }
        assert_eq!(waiting(&page), (UPDATES_KEPT, UPDATES_KEPT, false));
        feed.send(&Arc::from("x"));
        assert_eq!(waiting(&page), (0, 0, true));
    }

    #[test]
    fn a_closed_page_is_forgotten() {
        let feed = Feed::default();
        assert!(feed.is_empty());
        let page = feed.open();
        assert!(!feed.is_empty());
        drop(page);
        assert!(feed.is_empty());
        let pages: Vec<Page> = (0..3).map(|_| feed.open()).collect();
        drop(pages);
        let _page = feed.open();
        assert_eq!(lock(&feed.pages).len(), 1, "the closed pages' entries went when the next opened");
    }
}
