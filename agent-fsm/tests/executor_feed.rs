//! The notification feed under load and around the clock: a subscriber
//! parked in `recv` keeps up with a burst bigger than the log, and timing
//! and subscriptions around the worker's yields and a first subscription
//! made in the middle of a step.

mod support;

mod eager_subscriber {
    //! A subscriber parked in `recv` keeps up with a burst bigger than the
    //! notification log: the worker yields each time it fills the log.

    use super::support::parked_reader;
    use agent_fsm::runtime::{self, EffectContext, ExecutorConfig, Notification};

    // Public enums in a test's private module, as a user's crate has them.
    #[allow(unreachable_pub)]
    #[agent_fsm::state_machine(fallback = Nothing)]
    pub mod bounce {
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            #[initial]
            A,
            B,
        }

        #[events]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            Go,
            Flip,
            Stop,
        }

        #[actions]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            Nothing,
            Start,
            Flipped,
        }

        transitions! {
            A + Go => B / Start,
            B + Flip => A / Flipped,
            A + Flip => B / Flipped,
            A | B + Stop => A / Nothing,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_subscriber_that_keeps_up_never_lags_behind_a_ready_stream() {
        use bounce::{Action, Event, Machine};
        const ITEMS: usize = 300;
        let fx = runtime::from_fn(|action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
            // Three notifications per step (transition, action, output):
            // 300 ready items make 900, more than three logs of 256.
            cx.output(());
            if action == Action::Start {
                cx.stream(futures::stream::iter(vec![Event::Flip; ITEMS]), |_| None);
            }
        });
        let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new());
        let reader = parked_reader(&handle).await;
        handle.send(Event::Go).await.unwrap();
        crate::support::within(handle.wait_idle()).await.unwrap();
        crate::support::within(handle.shutdown()).await.unwrap();
        assert_eq!(reader.await.unwrap(), (ITEMS + 1, 0));
    }

    /// Queues `events` Flips before the worker runs (one burst), each step
    /// publishing `outputs` outputs (so `outputs + 2` notifications) into a
    /// log of `capacity`, and returns what a parked reader counted.
    async fn full_inbox(events: usize, outputs: usize, capacity: usize) -> (usize, u64) {
        use bounce::{Action, Event, Machine};
        let fx = runtime::from_fn(move |_: Action, cx: &mut EffectContext<'_, Machine, ()>| {
            for _ in 0..outputs {
                cx.output(());
            }
        });
        let config = ExecutorConfig::new().inbox_capacity(events).notification_capacity(capacity);
        let handle = runtime::spawn(Machine::new(), fx, config);
        let reader = parked_reader(&handle).await;
        for _ in 0..events {
            handle.try_send(Event::Flip).unwrap();
        }
        crate::support::within(handle.wait_idle()).await.unwrap();
        crate::support::within(handle.shutdown()).await.unwrap();
        reader.await.unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_subscriber_that_keeps_up_never_lags_behind_a_full_inbox() {
        assert_eq!(full_inbox(600, 1, 256).await, (600, 0));
    }

    /// A subscriber woken because a step filled the log runs while the
    /// worker pauses, so the status it reads (state name, steps) already
    /// counts every transition it has been handed.
    #[tokio::test(start_paused = true)]
    async fn a_subscriber_woken_by_a_full_log_reads_a_current_status() {
        use bounce::{Action, Event, Machine};
        for (outputs, capacity, flips) in [(300, 256, 0), (0, 1, 20), (3, 4, 20)] {
            let fx = runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
                for _ in 0..outputs {
                    cx.output(());
                }
                // More input is waiting after the step: the worker yields
                // to the subscriber instead of going to sleep.
                if action == Action::Start {
                    cx.stream(futures::stream::iter(vec![Event::Flip; flips + 1]), |_| None);
                }
            });
            let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new().notification_capacity(capacity));
            let mut subscription = handle.subscribe();
            let reader_handle = handle.clone();
            let reader = tokio::spawn(async move {
                let (mut seen, mut stale) = (0_u64, Vec::new());
                while let Some(n) = subscription.recv().await {
                    if let Notification::Transition(step) = n {
                        seen += 1;
                        let (name, steps) = (reader_handle.status().to_string(), reader_handle.steps());
                        if steps < seen || (seen == 1 && name != step.to.name()) {
                            stale.push((seen, step.to, name, steps));
                        }
                    }
                }
                (seen, stale)
            });
            tokio::task::yield_now().await;
            handle.send(Event::Go).await.unwrap();
            crate::support::within(handle.wait_idle()).await.unwrap();
            crate::support::within(handle.shutdown()).await.unwrap();
            let (seen, stale) = reader.await.unwrap();
            assert_eq!(seen, flips as u64 + 2, "outputs {outputs}, capacity {capacity}");
            assert_eq!(stale, [], "outputs {outputs}, capacity {capacity}: (transition, to, state_name, steps)");
        }
    }
    /// An event an action sends is delivered right after its step, even
    /// when that step's flush (a round trip's reply, or a log it filled)
    /// woke a subscriber and nothing else is waiting: the worker must not
    /// go to sleep with it queued, and `wait_idle` must not answer first.
    #[tokio::test(start_paused = true)]
    async fn an_event_sent_by_a_step_that_woke_a_subscriber_is_still_delivered() {
        use bounce::{Action, Event, Machine, State};
        let sender = |outputs: usize| {
            runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
                for _ in 0..outputs {
                    cx.output(());
                }
                if action == Action::Start {
                    cx.send(Event::Flip);
                }
            })
        };
        // The reply's flush wakes the reader; then nothing else comes.
        let handle = runtime::spawn(Machine::new(), sender(0), ExecutorConfig::new());
        let reader = parked_reader(&handle).await;
        crate::support::within(handle.call(Event::Go)).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        assert_eq!(handle.steps(), 2, "the sent Flip still waits a minute later");
        crate::support::within(handle.shutdown()).await.unwrap();
        assert_eq!(reader.await.unwrap().0, 2);
        // The step fills a log of 4; `wait_idle` is already queued.
        let config = ExecutorConfig::new().notification_capacity(4);
        let handle = runtime::spawn(Machine::new(), sender(6), config);
        let reader = parked_reader(&handle).await;
        handle.send(Event::Go).await.unwrap();
        crate::support::within(handle.wait_idle()).await.unwrap();
        assert_eq!(handle.steps(), 2, "idle with the sent Flip undelivered");
        assert_eq!(handle.state().await.unwrap(), State::A);
        crate::support::within(handle.shutdown()).await.unwrap();
        reader.await.unwrap();
    }

    /// An action that sends the event that leads to it again makes a chain
    /// of sends that never ends. The worker still yields to the other tasks
    /// of its thread, and still serves control requests and its
    /// cancellation token between two steps of the chain. Run on a thread
    /// of its own, so that a worker that never yields fails the test rather
    /// than hanging it.
    #[test]
    fn an_endless_chain_of_sends_still_yields_and_stops() {
        use bounce::{Action, Event, Machine};
        let endless = || {
            runtime::from_fn(|action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
                if action != Action::Nothing {
                    cx.send(Event::Flip);
                }
            })
        };
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
            rt.block_on(async {
                // Interrupt ends the chain: the events it had sent are dropped.
                let config = ExecutorConfig::new().interrupt_event(bounce::EventKind::Stop, |_| Event::Stop);
                let handle = runtime::spawn(Machine::new(), endless(), config);
                handle.send(Event::Go).await.unwrap();
                tokio::spawn(async {}).await.unwrap();
                assert!(handle.steps() > 1, "the chain ran before the other task");
                handle.interrupt("stop").await.unwrap();
                crate::support::within(handle.wait_idle()).await.unwrap();
                let after = handle.steps();
                tokio::task::yield_now().await;
                assert_eq!(handle.steps(), after, "the chain went on after the interrupt");
                crate::support::within(handle.shutdown()).await.unwrap();
                // Shutdown and the cancellation token stop a chain running.
                let handle = runtime::spawn(Machine::new(), endless(), ExecutorConfig::new());
                handle.send(Event::Go).await.unwrap();
                crate::support::within(handle.shutdown()).await.unwrap();
                let token = tokio_util::sync::CancellationToken::new();
                let handle = runtime::spawn(Machine::new(), endless(), ExecutorConfig::new().cancel_on(token.clone()));
                handle.send(Event::Go).await.unwrap();
                tokio::task::yield_now().await;
                token.cancel();
                crate::support::within(handle.wait_finished()).await.unwrap();
                // A subscriber the chain's notifications keep waking makes
                // the worker yield to it again and again; the chain is
                // still cut for shutdown and the token.
                let handle = runtime::spawn(Machine::new(), endless(), ExecutorConfig::new());
                let reader = parked_reader(&handle).await;
                handle.send(Event::Go).await.unwrap();
                crate::support::within(handle.shutdown()).await.unwrap();
                reader.await.unwrap();
                let token = tokio_util::sync::CancellationToken::new();
                let handle = runtime::spawn(Machine::new(), endless(), ExecutorConfig::new().cancel_on(token.clone()));
                let reader = parked_reader(&handle).await;
                handle.send(Event::Go).await.unwrap();
                tokio::task::yield_now().await;
                token.cancel();
                crate::support::within(handle.wait_finished()).await.unwrap();
                reader.await.unwrap();
            });
            let _ = done.send(());
        });
        finished
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("the worker never yielded, or never stopped, in an endless chain of sends");
    }

    /// What one action sends at once is delivered as one burst, however
    /// long: only a chain whose own steps keep sending is cut. A task the
    /// first action spawns runs only after the burst.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_long_burst_from_one_action_is_not_cut() {
        use bounce::{Action, Event, Machine};
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        const BURST: usize = 3000;
        let other_ran = Arc::new(AtomicBool::new(false));
        let seen_mid_burst = Arc::new(AtomicUsize::new(0));
        let (flag, seen) = (Arc::clone(&other_ran), Arc::clone(&seen_mid_burst));
        let fx = runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| match action {
            Action::Start => {
                let flag = Arc::clone(&flag);
                tokio::spawn(async move { flag.store(true, Ordering::SeqCst) });
                for _ in 0..BURST {
                    cx.send(Event::Flip);
                }
            }
            _ if flag.load(Ordering::SeqCst) => {
                seen.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        });
        let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new());
        handle.send(Event::Go).await.unwrap();
        crate::support::within(handle.wait_idle()).await.unwrap();
        assert_eq!(handle.steps(), 1 + BURST as u64);
        assert!(other_ran.load(Ordering::SeqCst));
        assert_eq!(seen_mid_burst.load(Ordering::SeqCst), 0, "the burst was cut");
        crate::support::within(handle.shutdown()).await.unwrap();
    }

    /// Runs a stream of `items` Flips whose every step publishes `outputs`
    /// outputs (so `outputs + 2` notifications a step), with a log of
    /// `capacity`, and returns what a parked reader counted.
    async fn stream_with_outputs(capacity: usize, outputs: usize, items: usize, paced: bool) -> (usize, u64) {
        use bounce::{Action, Event, Machine};
        use futures::StreamExt;
        let fx = runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
            for _ in 0..outputs {
                cx.output(());
            }
            if action == Action::Start {
                let flips = futures::stream::iter(vec![Event::Flip; items]);
                if paced {
                    // Each item behind a timer that is already due, as a
                    // network stream delivers chunk by chunk.
                    cx.stream(
                        flips.then(|e| async move {
                            tokio::time::sleep(std::time::Duration::ZERO).await;
                            e
                        }),
                        |_| None,
                    );
                } else {
                    cx.stream(flips, |_| None);
                }
            }
        });
        let config = ExecutorConfig::new().notification_capacity(capacity);
        let handle = runtime::spawn(Machine::new(), fx, config);
        let reader = parked_reader(&handle).await;
        handle.send(Event::Go).await.unwrap();
        crate::support::within(handle.wait_idle()).await.unwrap();
        crate::support::within(handle.shutdown()).await.unwrap();
        reader.await.unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_subscriber_that_keeps_up_never_lags_behind_a_small_log_and_chatty_steps() {
        // Six notifications a step against a log of 16: the log fills in
        // the middle of a step.
        for paced in [false, true] {
            assert_eq!(stream_with_outputs(16, 4, 500, paced).await, (501, 0), "paced: {paced}");
        }
        // As many notifications a step as the log holds.
        assert_eq!(stream_with_outputs(16, 14, 200, false).await, (201, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_subscriber_that_keeps_up_never_lags_behind_the_default_log_and_chatty_steps() {
        for paced in [false, true] {
            assert_eq!(stream_with_outputs(256, 3, 1000, paced).await, (1001, 0), "paced: {paced}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_subscriber_that_keeps_up_never_lags_behind_a_small_log_and_a_full_inbox() {
        // Five notifications a step into a log of 16.
        assert_eq!(full_inbox(600, 3, 16).await, (600, 0));
    }
}

/// Timing and subscriptions around the worker's yields and a first
/// subscription made in the middle of a step.
mod feed_and_clock {
    use std::sync::{Arc, Mutex, OnceLock};
    use std::time::Duration;

    use agent_fsm::runtime::{self, EffectContext, ExecutorConfig, MachineHandle, Notification, Subscription};
    use tokio::time::Instant;

    #[allow(unreachable_pub)]
    #[agent_fsm::state_machine(fallback = Nop)]
    mod pinger {
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            #[initial]
            Idle,
            Busy,
        }
        #[events]
        #[derive(Debug, Clone)]
        pub enum Event {
            Go,
            Tick,
            Done,
            Ping,
        }
        #[actions]
        #[derive(Debug)]
        pub enum Action {
            Nop,
            Start,
            Show,
            Pong,
        }
        transitions! {
            Idle + Go => Busy / Start,
            Busy + Tick => Busy / Show,
            Busy + Done => Idle / Show,
            Idle + Ping => Idle / Pong,
        }
    }
    use pinger::{Action, Event, Machine};

    /// Records when each hop really happened.
    struct At(Arc<Mutex<Vec<(&'static str, Instant)>>>);

    impl agent_fsm::Observer<Machine> for At {
        fn on_transition(&mut self, step: &agent_fsm::StepOf<Machine>) {
            self.0.lock().unwrap().push((step.to.name(), Instant::now()));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn time_spent_while_the_worker_yields_to_a_subscriber_is_charged_to_the_right_state() {
        let effects = runtime::from_fn(|action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
            if let Action::Start = action {
                cx.stream(futures::stream::iter([Event::Tick, Event::Tick, Event::Done]), |_| None);
            }
        });
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorder = Arc::clone(&seen);
        // Two notifications a step fill a log of two: the flush wakes the
        // reader and the worker yields to it.
        let config = ExecutorConfig::new().notification_capacity(2).observer(move || At(Arc::clone(&recorder)));
        let handle = runtime::spawn(Machine::new(), effects, config);
        let mut subscription = handle.subscribe();
        let reader = tokio::spawn(async move {
            let mut first = true;
            while subscription.recv().await.is_some() {
                if first {
                    first = false;
                    // A reader busy for a second of the worker's time.
                    tokio::time::advance(Duration::from_secs(1)).await;
                }
            }
        });
        tokio::task::yield_now().await;
        handle.send(Event::Go).await.unwrap();
        crate::support::within(handle.wait_idle()).await.unwrap();
        let history = crate::support::within(handle.history()).await.unwrap();
        let seen = seen.lock().unwrap().clone();
        let busy = seen.last().unwrap().1 - seen[0].1;
        assert_eq!(busy, Duration::from_secs(1), "{seen:?}");
        assert_eq!(history.time_in(pinger::StateKind::Busy), busy, "{:?}", history.time_in_state());
        crate::support::within(handle.shutdown()).await.unwrap();
        reader.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_first_subscription_made_during_a_step_sees_the_rest_of_it() {
        let handle: Arc<OnceLock<MachineHandle<Machine, ()>>> = Arc::new(OnceLock::new());
        let slot: Arc<Mutex<Option<Subscription<Machine, ()>>>> = Arc::new(Mutex::new(None));
        let (own, put) = (Arc::clone(&handle), Arc::clone(&slot));
        let effects = runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
            if let Action::Pong = action {
                // A watcher attaching lazily, from inside the step.
                *put.lock().unwrap() = Some(own.get().unwrap().subscribe());
                cx.output(());
            }
        });
        let agent = runtime::spawn(Machine::new(), effects, ExecutorConfig::new());
        assert!(handle.set(agent.clone()).is_ok());
        crate::support::within(agent.call(Event::Ping)).await.unwrap();
        crate::support::within(agent.shutdown()).await.unwrap();
        let mut subscription = slot.lock().unwrap().take().unwrap();
        let mut got = Vec::new();
        while let Some(notification) = subscription.recv().await {
            got.push(notification);
        }
        assert!(got.contains(&Notification::Output(())), "{got:?}");
    }
}
