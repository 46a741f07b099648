//! Times in the history under paused tokio time: each hop's `start` and
//! `duration` and the time summed per state, for hops that change state
//! and for self-loops, within one burst of events and across bursts (the
//! worker reads the clock once per burst and computes the current stay
//! once per burst, not per hop); and long runs of one self-loop, which the
//! worker keeps as one record until read, read back hop by hop.

mod support;

use std::time::Duration;

use agent_fsm::runtime::{self, ExecutorConfig, History};
use agent_fsm::state_machine;
use tokio::time::{Instant, advance, timeout};

#[allow(unreachable_pub)] // the generated items are `pub` in a private module
#[state_machine(fallback = Stay)]
mod job {
    #[states]
    #[derive(Debug)]
    pub enum State {
        #[initial]
        Idle,
        Busy {
            ticks: u32,
        },
    }
    #[events]
    #[derive(Debug, Clone)]
    pub enum Event {
        Go,
        Tick,
        Stop,
    }
    #[actions]
    #[derive(Debug)]
    pub enum Action {
        Start,
        Stay,
        Halt,
    }
    transitions! {
        Idle + Go => Busy { ticks: 0 } / Start,
        Busy { ticks } + Tick => { *ticks += 1; } Busy / Stay,
        Busy + Stop => Idle / Halt,
        Idle + Tick => ignore,
        Idle + Stop => ignore,
        Busy + Go => ignore,
    }
}

use job::{Event, StateKind};

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn hops_and_self_loops_carry_the_stay_up_to_them() {
    timeout(Duration::from_secs(600), async {
        let handle = runtime::spawn(job::Machine::new(), (), ExecutorConfig::new());
        // Let the worker start (and take its start time) at t0.
        crate::support::within(handle.wait_idle()).await.unwrap();
        let t0 = Instant::now();

        advance(2 * SECOND).await;
        crate::support::within(handle.call(Event::Go)).await.unwrap(); // Idle -> Busy at t0+2
        advance(3 * SECOND).await;
        crate::support::within(handle.call(Event::Tick)).await.unwrap(); // self-loop at t0+5, a burst of its own
        advance(4 * SECOND).await;
        // One burst at t0+9: two self-loops, then a change of state.
        for event in [Event::Tick, Event::Tick, Event::Stop] {
            handle.send(event).await.unwrap();
        }
        crate::support::within(handle.wait_idle()).await.unwrap();
        advance(SECOND).await;
        // One burst at t0+10: a change of state, then a self-loop of the
        // state just entered, whose stay is empty.
        for event in [Event::Go, Event::Tick] {
            handle.send(event).await.unwrap();
        }
        crate::support::within(handle.wait_idle()).await.unwrap();
        advance(6 * SECOND).await;

        let history = crate::support::within(handle.history()).await.unwrap();
        let hops: Vec<_> =
            history.transitions().map(|t| (t.from, t.to, t.start.duration_since(t0), t.duration)).collect();
        let (idle, busy) = (StateKind::Idle, StateKind::Busy);
        assert_eq!(
            hops,
            [
                (idle, busy, Duration::ZERO, 2 * SECOND),
                (busy, busy, 2 * SECOND, 3 * SECOND),
                (busy, busy, 2 * SECOND, 7 * SECOND),
                (busy, busy, 2 * SECOND, 7 * SECOND),
                (busy, idle, 2 * SECOND, 7 * SECOND),
                (idle, busy, 9 * SECOND, SECOND),
                (busy, busy, 10 * SECOND, Duration::ZERO),
            ]
        );
        // Idle: 2 s, then 1 s; Busy: 7 s, then 6 s up to the read.
        assert_eq!(history.time_in(idle), 3 * SECOND);
        assert_eq!(history.time_in(busy), 13 * SECOND);
        let entries: Vec<_> = history.time_in_state().iter().map(|s| (s.state, s.entries)).collect();
        assert_eq!(entries, [(idle, 2), (busy, 2)]);
        assert_eq!(history.current(), (agent_fsm::Status::In(busy), t0 + 10 * SECOND));
    })
    .await
    .expect("the test does not hang");
}

/// Each hop as `(step, from, event, to, start, duration)`, times from `t0`.
type Hop = (u64, StateKind, Option<job::EventKind>, StateKind, Duration, Duration);

fn hops(history: &History<job::Machine>, t0: Instant) -> Vec<Hop> {
    history.transitions().map(|t| (t.step, t.from, t.event, t.to, t.start.duration_since(t0), t.duration)).collect()
}

/// A burst of 150 self-loops (the worker reads the clock again every 64
/// events), a refused event in the middle of it, another burst, and reads
/// in between: every hop reads back with its own step and the stay of its
/// burst, the latest ten of them, and the rest counted as evicted.
#[tokio::test(start_paused = true)]
async fn long_runs_of_self_loops_read_back_hop_by_hop() {
    timeout(Duration::from_secs(600), async {
        let handle = runtime::spawn(job::Machine::new(), (), ExecutorConfig::new().history_capacity(10));
        crate::support::within(handle.wait_idle()).await.unwrap();
        let t0 = Instant::now();
        advance(SECOND).await;
        crate::support::within(handle.call(Event::Go)).await.unwrap(); // step 1, at t0+1
        advance(2 * SECOND).await;
        // One burst at t0+3: steps 2 to 151, step 77 refused.
        for n in 2..=151 {
            handle.send(if n == 77 { Event::Go } else { Event::Tick }).await.unwrap();
        }
        crate::support::within(handle.wait_idle()).await.unwrap();
        let (tick, busy) = (Some(job::EventKind::Tick), StateKind::Busy);
        let at = |step: u64, stay: Duration| (step, busy, tick, busy, SECOND, stay);
        // Read in the middle: the latest ten hops, the last one step 151.
        let read = handle.with_history(move |h| (hops(h, t0), h.evicted(), h.steps())).await.unwrap();
        assert_eq!(read, ((142..=151).map(|s| at(s, 2 * SECOND)).collect::<Vec<_>>(), 140, 151));

        advance(4 * SECOND).await;
        // One burst at t0+7: two self-loops, then a change of state.
        for event in [Event::Tick, Event::Tick, Event::Stop] {
            handle.send(event).await.unwrap();
        }
        crate::support::within(handle.wait_idle()).await.unwrap();
        let history = crate::support::within(handle.history()).await.unwrap();
        let mut expected: Vec<Hop> = (145..=151).map(|s| at(s, 2 * SECOND)).collect();
        expected.extend([at(152, 6 * SECOND), at(153, 6 * SECOND)]);
        expected.push((154, busy, Some(job::EventKind::Stop), StateKind::Idle, SECOND, 6 * SECOND));
        assert_eq!(hops(&history, t0), expected);
        // Every hop but the refused event's: 153, of which ten are kept.
        assert_eq!(history.evicted(), 143);
        assert_eq!(history.time_in(busy), 6 * SECOND);
    })
    .await
    .expect("the test does not hang");
}
