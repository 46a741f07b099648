//! Timers and the end of the clock: task and stream timeouts there never
//! come, a retry scheduled past it never fires and harms nothing;
//! `deadline` and `pause` marks let input through or hold it back while
//! they wait, and are cancelled with the state the reply leaves; timers
//! fire in deadline order, whatever order they were armed in.

mod support;

use std::time::Duration;

use agent_fsm::StateMachine;
use agent_fsm::runtime::RetryPolicy;
use support::run::{input, start};
use support::{Reply, Scripted, config};

/// Task and stream timeouts at, or within a millisecond of, the end of the
/// clock never come: the work runs as without one.
#[tokio::test(start_paused = true)]
async fn timeouts_at_the_end_of_the_clock_never_come() {
    let longest = deadlines::longest_delay();
    for limit in [longest, longest - Duration::from_micros(500)] {
        let script = Scripted::new([Reply::tools(&["a:10"]), Reply::text(&["done"])]);
        let handle = start(&script, config().task_timeout(limit).stream_timeout(limit));
        handle.send(input("go")).await.unwrap();
        crate::support::within(handle.wait_idle()).await.unwrap();
        let batches = crate::support::within(handle.inspect(|m| m.context().tool_batches.clone())).await.unwrap();
        assert_eq!(batches, [vec![("a:10".to_owned(), true)]], "{limit:?}");
        let transcript = crate::support::within(handle.inspect(|m| m.context().transcript.clone())).await.unwrap();
        assert_eq!(transcript, ["calling tools", "done"], "{limit:?}");
        crate::support::within(handle.shutdown()).await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn a_timer_past_the_end_of_the_clock_never_fires_and_harms_nothing() {
    let mut script = Scripted::new([Reply::error(), Reply::text(&["ok"])]);
    script.policy = RetryPolicy::default().base(Duration::MAX).cap(Duration::MAX).jitter(0.0);
    assert_eq!(script.policy.delay(1), Duration::MAX);
    let handle = start(&script, config());
    handle.send(input("hi")).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    // The retry was scheduled but never fires; the agent waits, alive.
    assert_eq!(script.produced().retries_scheduled, 1);
    assert_eq!(handle.status().to_string(), "Error");
    assert!(!handle.is_finished());
    crate::support::within(handle.shutdown()).await.unwrap();
}

mod deadlines {
    //! A `deadline` lets input through while it waits, and is cancelled
    //! with the state the reply leaves; a `pause` holds input back until it
    //! fires.

    use agent_fsm::runtime::{self, EffectContext, ExecutorConfig};
    use std::time::Duration;
    use tokio::time::Instant;

    #[allow(unreachable_pub)]
    #[agent_fsm::state_machine(fallback = Nothing)]
    pub mod desk {
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            #[initial]
            Idle,
            Waiting,
        }

        #[events]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            Ask,
            Reply,
            Timeout,
        }

        #[actions]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            Nothing,
            AskHuman,
            Answered,
            TimedOut,
        }

        transitions! {
            Idle + Ask => Waiting / AskHuman,
            Waiting + Reply => Idle / Answered,
            Waiting + Timeout => Idle / TimedOut,
        }
    }

    /// A `Timeout` in 30 s: a pause, which holds input back, if `holds`,
    /// otherwise a deadline, which lets it through.
    fn set_deadline(cx: &mut EffectContext<'_, desk::Machine, ()>, holds: bool) {
        if holds {
            cx.pause(Duration::from_secs(30), desk::Event::Timeout);
        } else {
            cx.deadline(Duration::from_secs(30), desk::Event::Timeout);
        }
    }

    /// Asks, sends the reply after one second, and returns the hops (event
    /// and the second it came at) and how many events the machine took.
    async fn ask_then_reply(holds: bool) -> (Vec<(&'static str, u64)>, u64) {
        use desk::{Action, Event, Machine};
        let fx = runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
            if action == Action::AskHuman {
                set_deadline(cx, holds);
            }
        });
        let start = Instant::now();
        let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new());
        handle.send(Event::Ask).await.unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        handle.send(Event::Reply).await.unwrap();
        tokio::time::sleep(Duration::from_secs(60)).await;
        let history = crate::support::within(handle.history()).await.unwrap();
        crate::support::within(handle.shutdown()).await.unwrap();
        let hops = history
            .transitions()
            .map(|t| (t.event.map_or("-", |e| e.name()), (t.start + t.duration - start).as_secs()))
            .collect();
        (hops, history.steps())
    }

    #[tokio::test(start_paused = true)]
    async fn a_reply_beats_a_pending_deadline_and_cancels_it() {
        // The timer died with the state: no `Timeout` a minute later.
        assert_eq!(ask_then_reply(false).await, (vec![("Ask", 0), ("Reply", 1)], 2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_pending_pause_holds_the_reply_back_until_it_fires() {
        // The reply waited for the timer, then found the machine back in
        // `Idle`, which refuses it (no hop, one more step).
        assert_eq!(ask_then_reply(true).await, (vec![("Ask", 0), ("Timeout", 30)], 3));
    }

    /// The reply window, asked through `call`: the reply sent one second
    /// in is applied at once (its outcome says the machine moved
    /// `Waiting -> Idle` by `Answered`, one second after the ask, 29 s
    /// before the deadline), and the deadline is cancelled with the state:
    /// asking again later starts a fresh window that the old one cannot
    /// cut short. With a pause in its place, the same reply comes back only
    /// once the pause fired, and finds nothing to answer.
    #[tokio::test(start_paused = true)]
    async fn a_reply_in_the_window_is_applied_before_the_deadline_fires() {
        use agent_fsm::runtime::Outcome;
        use desk::{Action, ActionKind, Event, Machine, StateKind};
        for holds in [false, true] {
            let fx = runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
                if action == Action::AskHuman {
                    set_deadline(cx, holds);
                }
            });
            let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new());
            let start = Instant::now();
            handle.send(Event::Ask).await.unwrap();
            tokio::time::sleep(Duration::from_secs(1)).await;
            let reply = tokio::time::timeout(Duration::from_secs(120), handle.call(Event::Reply))
                .await
                .expect("the reply is answered")
                .unwrap();
            if holds {
                assert_eq!(start.elapsed(), Duration::from_secs(30), "the pause held the reply back");
                // The pause's event took the machine back first.
                assert_eq!(reply.outcome, Outcome::NoRow { state: StateKind::Idle, action: ActionKind::Nothing });
                crate::support::within(handle.shutdown()).await.unwrap();
                continue;
            }
            assert_eq!(start.elapsed(), Duration::from_secs(1), "applied as it came");
            let answered =
                Outcome::Moved { from: StateKind::Waiting, to: StateKind::Idle, action: ActionKind::Answered };
            assert_eq!(reply.outcome, answered);
            // Ask again at 20 s: the first window would have closed at 30 s.
            tokio::time::sleep(Duration::from_secs(19)).await;
            handle.send(Event::Ask).await.unwrap();
            tokio::time::sleep(Duration::from_secs(15)).await;
            assert_eq!(handle.status().state(), Some(StateKind::Waiting), "the old deadline was cancelled");
            assert_eq!(handle.steps(), 3);
            tokio::time::sleep(Duration::from_secs(16)).await;
            assert_eq!(handle.status().state(), Some(StateKind::Idle), "the new one fired at 50 s");
            crate::support::within(handle.shutdown()).await.unwrap();
        }
    }

    /// Dropping every handle cancels nothing: a pending deadline still
    /// fires, as a pause does, and only then does the worker stop.
    #[tokio::test(start_paused = true)]
    async fn dropped_handles_leave_a_pending_deadline_to_fire() {
        use desk::{Action, Event, Machine};
        use std::sync::{Arc, Mutex};
        for holds in [false, true] {
            let performed = Arc::new(Mutex::new(Vec::new()));
            let seen = Arc::clone(&performed);
            let fx = runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
                if action == Action::AskHuman {
                    set_deadline(cx, holds);
                }
                seen.lock().unwrap().push(action);
            });
            let start = Instant::now();
            let (handle, worker) = runtime::pair(Machine::new(), fx, ExecutorConfig::new());
            let worker = tokio::spawn(worker);
            handle.send(Event::Ask).await.unwrap();
            drop(handle);
            crate::support::within(worker).await.unwrap();
            assert_eq!(start.elapsed(), Duration::from_secs(30), "holds: {holds}");
            assert_eq!(*performed.lock().unwrap(), [Action::AskHuman, Action::TimedOut], "holds: {holds}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_fires_when_nothing_comes_and_does_not_keep_the_agent_busy() {
        use desk::{Action, Event, Machine, State};
        let fx = runtime::from_fn(|action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
            if action == Action::AskHuman {
                cx.deadline(Duration::from_secs(30), Event::Timeout);
            }
        });
        let start = Instant::now();
        let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new());
        handle.send(Event::Ask).await.unwrap();
        // Idle while it waits: nothing is in flight that holds input back.
        crate::support::within(handle.wait_idle()).await.unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO);
        assert_eq!(handle.state().await.unwrap(), State::Waiting);
        tokio::time::sleep(Duration::from_secs(31)).await;
        assert_eq!(handle.state().await.unwrap(), State::Idle);
        assert_eq!(handle.steps(), 2);
        crate::support::within(handle.shutdown()).await.unwrap();
    }

    fn nanos(n: u128) -> Duration {
        Duration::new((n / 1_000_000_000) as u64, (n % 1_000_000_000) as u32)
    }

    /// The longest delay the clock can add to now, found by bisection.
    pub(crate) fn longest_delay() -> Duration {
        let now = Instant::now();
        let (mut short, mut long) = (0_u128, u128::from(u64::MAX) * 1_000_000_000);
        while short < long {
            let mid = short + (long - short).div_ceil(2);
            if now.checked_add(nanos(mid)).is_some() { short = mid } else { long = mid - 1 }
        }
        nanos(short)
    }

    /// Delays that end at, or within a millisecond of, the end of the
    /// clock: tokio's timer rounds a deadline up to the next millisecond,
    /// which overflowed there and took the worker down.
    #[tokio::test(start_paused = true)]
    async fn timers_at_the_end_of_the_clock_are_dropped_and_the_worker_lives_on() {
        use desk::{Action, Event, Machine, State};
        let longest = longest_delay();
        for delay in [longest, longest - Duration::from_micros(500), longest - Duration::from_millis(1)] {
            for holds in [false, true] {
                let fx = runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
                    if action == Action::AskHuman {
                        if holds {
                            cx.pause(delay, Event::Timeout);
                        } else {
                            cx.deadline(delay, Event::Timeout);
                        }
                    }
                });
                let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new());
                handle.send(Event::Ask).await.unwrap();
                // Dropped, so even a pause holds nothing back.
                crate::support::within(handle.wait_idle()).await.unwrap();
                let delivered = crate::support::within(handle.call(Event::Reply)).await.unwrap();
                assert_eq!(delivered.state(), Some(desk::StateKind::Idle), "{delay:?}, holds: {holds}");
                assert_eq!(handle.state().await.unwrap(), State::Idle);
                assert_eq!(handle.shutdown().await.unwrap(), desk::StateKind::Idle);
            }
        }
    }
}

mod order {
    //! Timers fire in deadline order, whatever order they were armed in.

    use agent_fsm::runtime::{self, EffectContext, ExecutorConfig};
    use std::time::Duration;

    #[allow(unreachable_pub)]
    #[agent_fsm::state_machine(fallback = Nothing)]
    pub mod clock {
        #[context]
        pub type Context = Vec<&'static str>;
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            #[initial]
            Waiting,
        }
        #[events]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            Arm,
            Early,
            Late,
        }
        #[actions]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            Nothing,
            ArmBoth,
        }
        transitions! {
            Waiting + Arm => Waiting / ArmBoth,
            Waiting + Early => { ctx.push("early"); } Waiting / Nothing,
            Waiting + Late => { ctx.push("late"); } Waiting / Nothing,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_shorter_timer_armed_after_a_longer_one_fires_first() {
        let effects = runtime::from_fn(|action, cx: &mut EffectContext<'_, clock::Machine, ()>| {
            if action == clock::Action::ArmBoth {
                cx.deadline(Duration::from_secs(10), clock::Event::Late);
                cx.deadline(Duration::from_secs(5), clock::Event::Early);
            }
        });
        let handle = runtime::spawn(clock::Machine::new(Vec::new()), effects, ExecutorConfig::new());
        handle.send(clock::Event::Arm).await.unwrap();
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert_eq!(crate::support::within(handle.inspect(|m| m.context().clone())).await.unwrap(), ["early"]);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(crate::support::within(handle.inspect(|m| m.context().clone())).await.unwrap(), ["early", "late"]);
        crate::support::within(handle.shutdown()).await.unwrap();
    }
}
