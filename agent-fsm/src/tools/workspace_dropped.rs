//! Unit tests of the workspace's write turn: a write or edit whose call is
//! dropped while another holds the turn is not made once the turn is free
//! (a child of `workspace`, to hold the turn itself).

use super::Workspace;
use std::future::Future;
use std::task::{Context, Poll, Waker};

/// A runtime with one blocking thread: the blocking pool then runs the
/// file operations one after another in the order they were handed to
/// it, so that a write started last ends last.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().max_blocking_threads(1).build().expect("a runtime")
}

/// Polls `call` once, which hands its work to the blocking pool, then
/// drops it, as an interrupt or a timeout drops a tool's future.
fn start_and_drop<F: Future>(call: F) {
    let mut call = std::pin::pin!(call);
    let polled = call.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    assert!(matches!(polled, Poll::Pending), "the call waits for its turn");
}

/// `run` with the workspace's write turn held meanwhile (as a long write
/// holds it), then let go.
fn while_the_turn_is_held(workspace: &Workspace, run: impl FnOnce()) {
    let held = workspace.writes.lock().expect("the turn");
    run();
    drop(held);
}

#[test]
fn a_write_dropped_while_waiting_for_its_turn_is_not_made() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join("a.txt"), "before\n").expect("a file");
    let workspace = Workspace::open(dir.path()).expect("the workspace");
    let runtime = runtime();
    let _entered = runtime.enter();
    while_the_turn_is_held(&workspace, || {
        start_and_drop(workspace.write_file("a.txt", "overwritten\n"));
        start_and_drop(workspace.edit_file("a.txt", "before", "edited"));
    });
    // Handed to the one blocking thread after the dropped calls: once it
    // is done, so are they.
    runtime.block_on(workspace.write_file("marker.txt", "done\n")).expect("a later write");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).expect("the file"), "before\n");
}
