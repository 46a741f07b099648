//! The input lane: user events delivered to the machine as a stream while a
//! turn is in flight.

use crate::sketch::SketchEvent;
use futures::Stream;
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding the lock; the queue is consistent anyway.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The input lane: user events for the turn in flight (see the `sketch_agent` module docs).
///
/// The agent's side offers events; the effects open the lane (a stream on
/// the executor) when a turn starts and close it when the turn ends. A
/// closed lane refuses offers, which then go through the inbox. A lane
/// stream yields what the lane holds before it ends; opening a new lane
/// ends the old stream (its generation is stale) and hands the queue on.
#[derive(Debug, Clone, Default)]
pub(super) struct InputLane {
    shared: Arc<Mutex<Lane>>,
}

#[derive(Debug, Default)]
struct Lane {
    open: bool,
    /// Incremented by every `open`; a stream of an older one ends.
    generation: u64,
    pending: VecDeque<SketchEvent>,
    /// The current stream's waker.
    waker: Option<Waker>,
}

impl InputLane {
    /// Queues `event` for the turn in flight, or hands it back if the lane
    /// is closed.
    pub(super) fn offer(&self, event: SketchEvent) -> Result<(), SketchEvent> {
        let waker = {
            let mut lane = lock(&self.shared);
            if !lane.open {
                return Err(event);
            }
            lane.pending.push_back(event);
            lane.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    pub(super) fn is_open(&self) -> bool {
        lock(&self.shared).open
    }

    pub(super) fn has_pending(&self) -> bool {
        !lock(&self.shared).pending.is_empty()
    }

    /// Opens the lane and returns the stream that delivers it.
    pub(super) fn open(&self) -> LaneStream {
        let (generation, waker) = {
            let mut lane = lock(&self.shared);
            lane.generation += 1;
            lane.open = true;
            (lane.generation, lane.waker.take())
        };
        // An older stream still open sees its generation is stale and ends.
        if let Some(waker) = waker {
            waker.wake();
        }
        LaneStream { lane: self.clone(), generation }
    }

    /// Closes the lane; its stream ends once it has yielded what it holds.
    pub(super) fn close(&self) {
        let waker = {
            let mut lane = lock(&self.shared);
            lane.open = false;
            lane.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The lane as a stream of events, for
/// [`EffectContext::stream`](agent_fsm::runtime::EffectContext::stream).
pub(super) struct LaneStream {
    lane: InputLane,
    generation: u64,
}

impl Stream for LaneStream {
    type Item = SketchEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<SketchEvent>> {
        let mut lane = lock(&self.lane.shared);
        if lane.generation != self.generation {
            return Poll::Ready(None);
        }
        if let Some(event) = lane.pending.pop_front() {
            return Poll::Ready(Some(event));
        }
        if !lane.open {
            return Poll::Ready(None);
        }
        lane.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for LaneStream {
    /// A stream dropped while its lane is open was cancelled (interrupt,
    /// shutdown): close the lane so that input goes through the inbox until
    /// the effects open it again. What it held stays for the next stream.
    fn drop(&mut self) {
        let mut lane = lock(&self.lane.shared);
        if lane.generation == self.generation {
            lane.open = false;
            lane.waker = None;
        }
    }
}
