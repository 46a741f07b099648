//! Unit tests of the notification feed: topics, the bounded log, lag,
//! and what subscribers see.

use super::*;
use crate::{Step, state_machine};

// Only some variants are built here.
#[allow(dead_code, unreachable_pub)]
#[state_machine(fallback = Dropped)]
mod ab {
    #[states]
    #[derive(Clone, PartialEq)]
    pub enum State {
        #[initial]
        A,
        B,
    }
    #[events]
    pub enum Event {
        E,
    }
    #[actions]
    pub enum Action {
        Call,
        Ignored,
        Dropped,
    }
    transitions! {
        A + E => B / Call,
        B + E => A / Ignored,
    }
}
use ab::{ActionKind, EventKind, Machine, StateKind};

type Note = Notification<Machine, ()>;

fn hop(row: usize) -> Note {
    Notification::Transition(Step {
        from: StateKind::A,
        event: Some(EventKind::E),
        to: StateKind::B,
        action: None,
        row,
    })
}

fn rows(subscription: &mut Subscription<Machine, ()>) -> Vec<Result<usize, u64>> {
    std::iter::from_fn(|| subscription.try_recv().ok())
        .map(|n| match n {
            Notification::Transition(step) => Ok(step.row),
            Notification::Lagged(missed) => Err(missed),
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

/// A feed and its worker side, with `capacity`.
fn feed(capacity: usize) -> (Arc<Feed<Machine, ()>>, Notifier<Machine, ()>) {
    let feed = Arc::new(Feed::new(capacity));
    let mut notifier = Notifier::new();
    notifier.attach(Arc::clone(&feed));
    (feed, notifier)
}

#[test]
fn nothing_is_recorded_without_subscribers_and_a_subscription_starts_at_the_next_one() {
    let (feed, mut notifier) = feed(8);
    notifier.publish(Topics::TRANSITIONS, || hop(0));
    notifier.flush();
    let mut first = feed.subscribe(Topics::ALL);
    notifier.publish(Topics::TRANSITIONS, || hop(1));
    // Subscribed between a record and its flush: sees nothing before it.
    let mut second = feed.subscribe(Topics::ALL);
    notifier.publish(Topics::TRANSITIONS, || hop(2));
    assert_eq!(first.try_recv(), Err(TryRecvError::Empty), "nothing is visible before a flush");
    notifier.flush();
    assert_eq!(rows(&mut first), [Ok(1), Ok(2)]);
    assert_eq!(rows(&mut second), [Ok(2)]);
}

fn action(action: ActionKind) -> Note {
    Notification::Action { action, performed: true }
}

#[test]
fn a_subscription_receives_its_topics_only_and_unwanted_topics_are_not_built() {
    let (feed, mut notifier) = feed(64);
    let built = std::cell::Cell::new(0);
    let mut hops = feed.subscribe(Topics::TRANSITIONS);
    notifier.publish(Topics::TRANSITIONS, || hop(0));
    notifier.publish(Topics::ACTIONS, || {
        built.set(built.get() + 1);
        action(ActionKind::Ignored)
    });
    notifier.flush();
    assert_eq!(built.get(), 0, "nobody wants actions, so none is built");
    assert_eq!(rows(&mut hops), [Ok(0)]);

    // A second subscription wants everything: the log holds both
    // topics, and each subscription reads its own.
    let mut all = feed.subscribe(Topics::TRANSITIONS | Topics::ACTIONS);
    notifier.publish(Topics::TRANSITIONS, || hop(1));
    notifier.publish(Topics::ACTIONS, || action(ActionKind::Call));
    notifier.publish(Topics::TRANSITIONS, || hop(2));
    notifier.flush();
    assert_eq!(rows(&mut hops), [Ok(1), Ok(2)]);
    let read: Vec<_> = std::iter::from_fn(|| all.try_recv().ok()).collect();
    assert_eq!(read, [hop(1), action(ActionKind::Call), hop(2)]);
    assert_eq!(hops.topics(), Topics::TRANSITIONS);

    // Once it is gone, actions are no longer built.
    drop(all);
    notifier.publish(Topics::ACTIONS, || {
        built.set(built.get() + 1);
        action(ActionKind::Dropped)
    });
    notifier.publish(Topics::TRANSITIONS, || hop(3));
    notifier.flush();
    assert_eq!(built.get(), 0);
    assert_eq!(rows(&mut hops), [Ok(3)]);
}

#[test]
fn states_are_copied_only_while_a_subscription_asked_for_them() {
    let (feed, mut notifier) = feed(8);
    let mut plain = feed.subscribe(Topics::ALL);
    notifier.publish_state(&ab::State::B);
    notifier.publish(Topics::TRANSITIONS, || hop(0));
    notifier.flush();
    assert_eq!(rows(&mut plain), [Ok(0)], "no state without a subscription that asked for it");

    let mut full = feed.subscribe_with_states(Topics::TRANSITIONS);
    assert!(full.topics().contains(Topics::STATES));
    notifier.publish(Topics::TRANSITIONS, || hop(1));
    notifier.publish_state(&ab::State::B);
    notifier.flush();
    assert_eq!(full.try_recv(), Ok(hop(1)));
    let state = full.try_recv();
    assert_eq!(state, Ok(Notification::State(StateCopy::new(&ab::State::B))));
    assert_eq!(rows(&mut plain), [Ok(1)], "the plain subscription does not see the state");

    drop(full);
    let produced = feed.produced.load(Ordering::SeqCst);
    notifier.publish_state(&ab::State::A);
    notifier.flush();
    assert_eq!(feed.produced.load(Ordering::SeqCst), produced, "no copy once it is gone");
    assert_eq!(plain.try_recv(), Err(TryRecvError::Empty));
}

#[tokio::test(start_paused = true)]
async fn recv_skips_a_batch_of_other_topics_and_waits_for_its_own() {
    let (feed, mut notifier) = feed(64);
    let _all = feed.subscribe(Topics::ALL);
    let mut hops = feed.subscribe(Topics::TRANSITIONS);
    notifier.publish(Topics::ACTIONS, || action(ActionKind::Call));
    notifier.flush();
    // Only an action in the log: nothing for this subscription yet.
    let waiting = tokio::time::timeout(std::time::Duration::from_millis(1), hops.recv()).await;
    assert!(waiting.is_err(), "a batch of other topics is not a notification");
    notifier.publish(Topics::ACTIONS, || action(ActionKind::Ignored));
    notifier.publish(Topics::TRANSITIONS, || hop(7));
    notifier.flush();
    assert_eq!(hops.recv().await, Some(hop(7)));
    notifier.close();
    assert_eq!(hops.recv().await, None);
}

#[test]
fn every_subscription_reads_every_notification_in_order() {
    let (feed, mut notifier) = feed(64);
    let mut a = feed.subscribe(Topics::ALL);
    let mut b = feed.subscribe(Topics::ALL);
    for row in 0..5 {
        notifier.publish(Topics::TRANSITIONS, || hop(row));
    }
    notifier.flush();
    assert_eq!(rows(&mut a), [Ok(0), Ok(1), Ok(2), Ok(3), Ok(4)]);
    notifier.publish(Topics::TRANSITIONS, || hop(5));
    notifier.flush();
    assert_eq!(rows(&mut a), [Ok(5)]);
    assert_eq!(rows(&mut b), [Ok(0), Ok(1), Ok(2), Ok(3), Ok(4), Ok(5)]);
    drop(b);
    // Alone now, `a` takes the log whole; nothing is lost or repeated.
    for row in 6..9 {
        notifier.publish(Topics::TRANSITIONS, || hop(row));
    }
    notifier.flush();
    assert_eq!(rows(&mut a), [Ok(6), Ok(7), Ok(8)]);
}

#[test]
fn a_subscription_behind_by_more_than_the_capacity_lags_by_what_it_missed() {
    let (feed, mut notifier) = feed(3);
    let mut slow = feed.subscribe(Topics::ALL);
    for row in 0..5 {
        notifier.publish(Topics::TRANSITIONS, || hop(row));
        notifier.flush();
    }
    assert_eq!(rows(&mut slow), [Err(2), Ok(2), Ok(3), Ok(4)]);
    // What a subscription has taken is not lost by later overflows.
    for row in 5..7 {
        notifier.publish(Topics::TRANSITIONS, || hop(row));
    }
    notifier.flush();
    assert_eq!(slow.try_recv(), Ok(hop(5)));
    for row in 7..12 {
        notifier.publish(Topics::TRANSITIONS, || hop(row));
    }
    notifier.flush();
    assert_eq!(rows(&mut slow), [Ok(6), Err(2), Ok(9), Ok(10), Ok(11)]);
}

#[test]
fn the_log_keeps_what_woken_subscriptions_have_not_read_until_the_worker_yields() {
    let (feed, mut notifier) = feed(4);
    let mut parked = feed.subscribe(Topics::ALL);
    let waker = futures::task::noop_waker();
    assert!(parked.poll_feed(Some(&waker)).is_pending(), "waiting, registered");
    // The fourth fills the log and wakes it; the rest of the step
    // follows before the worker yields, and the log keeps it all.
    for row in 0..7 {
        notifier.publish(Topics::TRANSITIONS, || hop(row));
    }
    notifier.flush();
    assert!(notifier.take_woke(), "the worker owes the subscription a turn");
    assert!(!notifier.take_woke());
    assert_eq!(rows(&mut parked), (0..7).map(Ok).collect::<Vec<_>>());
    // Once it has yielded, the log is back to its capacity: a
    // subscription that did not wait lags as before.
    let mut idle = feed.subscribe(Topics::ALL);
    for row in 7..13 {
        notifier.publish(Topics::TRANSITIONS, || hop(row));
    }
    notifier.flush();
    assert!(!notifier.take_woke(), "nobody was waiting");
    assert_eq!(rows(&mut idle), [Err(2), Ok(9), Ok(10), Ok(11), Ok(12)]);
}

#[test]
fn closing_ends_subscriptions_after_what_is_kept() {
    let (feed, mut notifier) = feed(8);
    let mut subscription = feed.subscribe(Topics::ALL);
    notifier.publish(Topics::TRANSITIONS, || hop(0));
    notifier.close();
    assert_eq!(subscription.try_recv(), Ok(hop(0)));
    assert_eq!(subscription.try_recv(), Err(TryRecvError::Closed), "read to the end");
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    assert_eq!(rt.block_on(subscription.recv()), None);
    assert_eq!(rt.block_on(Feed::<Machine, ()>::ended().recv()), None);
}

#[test]
fn a_waiting_subscription_is_woken_by_a_flush() {
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    rt.block_on(async {
        let (feed, mut notifier) = feed(8);
        let mut subscription = feed.subscribe(Topics::ALL);
        let reader = tokio::spawn(async move { subscription.recv().await });
        tokio::task::yield_now().await;
        notifier.publish(Topics::TRANSITIONS, || hop(7));
        notifier.flush();
        assert_eq!(reader.await.ok().flatten(), Some(hop(7)));
    });
}
