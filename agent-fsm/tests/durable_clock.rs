//! Durable agents whose wall clock moves: a timer written before a crash
//! and re-armed after the clock was set back (an NTP correction, a host
//! whose clock ran ahead) fires no later than the delay it was set for,
//! rather than waiting out the hour the clock went back as well; a clock
//! set forward fires it at once, as a deadline that passed while the agent
//! was down. Each test runs on every store (`stores()`).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime};

use agent_fsm::store::{CheckpointStore, Durable};

#[path = "stores/mod.rs"]
mod stores;

// The desk's other helpers serve the durable tests.
#[allow(dead_code)]
#[path = "durable/desk.rs"]
mod desk;

use desk::{Event, Gated, Running, State, WINDOW, stores};

/// A wall clock that follows tokio's paused one, set back or forward by
/// the seconds in `offset`.
fn movable_clock(offset: &Arc<AtomicI64>) -> impl Fn() -> SystemTime + Send + Sync + 'static {
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let start = tokio::time::Instant::now();
    let offset = Arc::clone(offset);
    move || {
        let now = base + start.elapsed();
        let by = offset.load(Ordering::SeqCst);
        let shift = Duration::from_secs(by.unsigned_abs());
        if by < 0 { now - shift } else { now + shift }
    }
}

/// Asks for approval (a 30 s deadline), lets 10 s pass, crashes, and moves
/// the clock by `by` seconds before the agent is spawned again.
async fn crash_and_move_clock(store: &Arc<dyn CheckpointStore>, by: i64) -> Running {
    let offset = Arc::new(AtomicI64::new(0));
    let durable = Durable::new(Arc::clone(store), "desk").clock(movable_clock(&offset));
    let agent = Running::spawn(&durable, Gated::new());
    agent.handle.send(Event::Ask).await.expect("sent");
    agent.idle().await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    agent.crash().await;
    offset.store(by, Ordering::SeqCst);
    Running::spawn(&durable, Gated::new())
}

#[tokio::test(start_paused = true)]
async fn a_deadline_after_the_clock_was_set_back_fires_within_its_delay() {
    for (store, _keep) in stores() {
        let agent = crash_and_move_clock(&store, -3600).await;
        assert_eq!(agent.state().await, State::Asking { request: 0 });
        // Set 30 s before the crash, 10 s of which had passed: whatever the
        // clock says now, it is due within its 30 s, not an hour later.
        tokio::time::sleep(WINDOW + Duration::from_millis(100)).await;
        assert_eq!(agent.state().await, State::Idle, "the deadline fired within its delay");
        assert_eq!(agent.taken().await.timeouts, 1);
        agent.handle.shutdown().await.expect("stops");
    }
}

#[tokio::test(start_paused = true)]
async fn a_deadline_after_the_clock_was_set_forward_fires_at_once() {
    for (store, _keep) in stores() {
        let agent = crash_and_move_clock(&store, 3600).await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(agent.state().await, State::Idle);
        assert_eq!(agent.taken().await.timeouts, 1);
        agent.handle.shutdown().await.expect("stops");
    }
}
