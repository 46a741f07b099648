//! Order of delivery: tool results found together, input sent during
//! tools, interrupts during streaming and tools, events sent by effects
//! (depth first), results still owed when a chain of sends is cut, and a
//! property test over random interleavings of input, outcomes, interrupts
//! and time.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use agent_fsm::StateMachine;
use agent_fsm::runtime::{EffectFailure, Notification, Topics, replay};
use support::run::{event_log, input, start};
use support::{ActionKind, Agent, End, Event, Reply, Scripted, assert_chained, config};
use tokio::time::sleep;

/// Two tools that end within one jump of the clock are found finished
/// together: their results come in the order they ended, not spawn order.
#[tokio::test(start_paused = true)]
async fn tool_results_found_together_come_in_the_order_they_ended() {
    let script = Scripted::new([Reply::tools(&["slow:10", "fast:5"]), Reply::text(&["done"])]);
    let handle = start(&script, config());
    let mut actions = handle.subscribe_to(Topics::ACTIONS);
    handle.send(input("go")).await.unwrap();
    // The tools are spawned (at 0 ms of their own) once the action is
    // reported performed; then the clock jumps past both their ends.
    while let Some(notification) = actions.recv().await {
        if matches!(notification, Notification::Action { action: ActionKind::ExecuteTools, performed: true }) {
            break;
        }
    }
    tokio::time::advance(Duration::from_millis(10)).await;
    crate::support::within(handle.wait_idle()).await.unwrap();
    let done: Vec<String> = event_log(&handle)
        .await
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolDone { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    assert_eq!(done, ["fast:5", "slow:10"]);
}

#[tokio::test(start_paused = true)]
async fn input_sent_during_tools_is_delivered_after_them_in_order() {
    let script = Scripted::new([
        Reply::tools(&["a:100", "b:150"]),
        Reply::text(&["r1"]),
        Reply::text(&["r2"]),
        Reply::text(&["r3"]),
    ]);
    let handle = start(&script, config());
    handle.send(input("first")).await.unwrap();
    sleep(Duration::from_millis(60)).await;
    assert_eq!(handle.status().to_string(), "ExecutingTools");
    handle.send(input("second")).await.unwrap();
    handle.send(input("third")).await.unwrap();
    crate::support::within(handle.wait_idle()).await.unwrap();

    let inputs = crate::support::within(handle.inspect(|m| m.context().inputs.clone())).await.unwrap();
    assert_eq!(inputs, ["first", "second", "third"]);
    let names: Vec<_> = event_log(&handle).await.iter().map(agent_fsm::Named::name).collect();
    assert_eq!(
        names,
        [
            "UserInput",
            "Delta",
            "Completed",
            "ToolDone",
            "ToolDone", // first turn and its tools
            "Delta",
            "Completed", // the follow-up LLM call after the tools
            "UserInput",
            "Delta",
            "Completed", // second
            "UserInput",
            "Delta",
            "Completed", // third
        ]
    );
    let transcript = crate::support::within(handle.inspect(|m| m.context().transcript.clone())).await.unwrap();
    assert_eq!(transcript, ["calling tools", "r1", "r2", "r3"]);
}

#[tokio::test(start_paused = true)]
async fn interrupt_during_streaming_keeps_the_partial_text() {
    let script = Scripted::new([Reply {
        deltas: ["Hel", "lo ", "wor", "ld"].map(str::to_owned).to_vec(),
        end: End::Completed(Vec::new()),
    }]);
    let handle = start(&script, config());
    handle.send(input("hi")).await.unwrap();
    sleep(Duration::from_millis(25)).await; // two deltas, 10 ms apart
    handle.interrupt("user pressed escape").await.unwrap();

    assert_eq!(handle.status().to_string(), "Waiting");
    sleep(Duration::from_secs(1)).await;
    crate::support::within(handle.wait_idle()).await.unwrap();
    let transcript = crate::support::within(handle.inspect(|m| m.context().transcript.clone())).await.unwrap();
    assert_eq!(transcript, ["Hello  [interrupted]"]);
    // The stream was dropped: nothing after the two deltas was produced.
    assert_eq!(script.produced().stream_events, BTreeMap::from([("Delta", 2)]));
    let history = crate::support::within(handle.history()).await.unwrap();
    let causes: Vec<_> = history.interrupts().map(|i| i.cause.to_string()).collect();
    assert_eq!(causes, ["user pressed escape"]);
}

#[tokio::test(start_paused = true)]
async fn interrupt_during_tools_gives_every_pending_call_a_result() {
    let script = Scripted::new([Reply::tools(&["a:100", "b:hang", "c:300", "d:50"])]);
    let handle = start(&script, config());
    handle.send(input("go")).await.unwrap();
    // Tools start at 20 ms (one delta, then Completed); a and d are done by 170.
    sleep(Duration::from_millis(170)).await;
    handle.interrupt("stop").await.unwrap();
    assert_eq!(handle.status().to_string(), "Waiting");

    let batches = crate::support::within(handle.inspect(|m| m.context().tool_batches.clone())).await.unwrap();
    let expected: Vec<(String, bool)> = [("d:50", true), ("a:100", true), ("b:hang", false), ("c:300", false)]
        .map(|(id, ok)| (id.to_owned(), ok))
        .to_vec();
    assert_eq!(batches, [expected]);
    let produced = script.produced();
    assert_eq!(
        produced.tool_failures,
        [("b:hang".to_owned(), EffectFailure::Cancelled), ("c:300".to_owned(), EffectFailure::Cancelled)]
    );
    // The last ToolDone completed the batch and returned SendLlmRequest,
    // which an interrupt does not perform.
    assert_eq!(produced.llm_requests, 1);

    let tracker = handle.tracker().clone();
    assert_eq!(handle.shutdown().await.unwrap(), support::StateKind::Done);
    tracker.close();
    crate::support::within(tracker.wait()).await;
    assert!(tracker.is_empty());
}

mod interleavings {
    //! Random interleavings of user input, LLM outcomes, tool outcomes,
    //! interrupts and time: nothing panics, every produced or sent event
    //! reaches the machine exactly once, history chains and replay
    //! reproduces the final state.

    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Input,
        Interrupt,
        Advance(u64),
    }

    #[derive(Debug, Clone)]
    enum Tool {
        Sleep(u64),
        Panic,
        Hang,
    }

    #[derive(Debug, Clone)]
    enum Outcome {
        Text,
        Tools(Vec<Tool>),
        Error,
        Hang,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => Just(Op::Input),
            1 => Just(Op::Interrupt),
            3 => (0u64..400).prop_map(Op::Advance),
        ]
    }

    fn tool() -> impl Strategy<Value = Tool> {
        prop_oneof![
            4 => (0u64..200).prop_map(Tool::Sleep),
            1 => Just(Tool::Panic),
            1 => Just(Tool::Hang),
        ]
    }

    fn outcome() -> impl Strategy<Value = (usize, Outcome)> {
        let end = prop_oneof![
            3 => Just(Outcome::Text),
            3 => prop::collection::vec(tool(), 1..4).prop_map(Outcome::Tools),
            2 => Just(Outcome::Error),
            1 => Just(Outcome::Hang),
        ];
        (0usize..3, end)
    }

    fn replies(outcomes: &[(usize, Outcome)]) -> Vec<Reply> {
        outcomes
            .iter()
            .enumerate()
            .map(|(i, (deltas, outcome))| Reply {
                deltas: (0..*deltas).map(|d| format!("r{i}d{d} ")).collect(),
                end: match outcome {
                    Outcome::Text => End::Completed(Vec::new()),
                    Outcome::Error => End::Error,
                    Outcome::Hang => End::Hang,
                    Outcome::Tools(tools) => End::Completed(
                        tools
                            .iter()
                            .enumerate()
                            .map(|(j, t)| match t {
                                Tool::Sleep(ms) => format!("r{i}t{j}:{ms}"),
                                Tool::Panic => format!("r{i}t{j}:panic"),
                                Tool::Hang => format!("r{i}t{j}:hang"),
                            })
                            .collect(),
                    ),
                },
            })
            .collect()
    }

    fn count(log: &[Event], name: &str) -> u32 {
        u32::try_from(log.iter().filter(|e| agent_fsm::Named::name(*e) == name).count()).unwrap()
    }

    async fn run(ops: Vec<Op>, outcomes: Vec<(usize, Outcome)>) {
        let script = Scripted::new(replies(&outcomes));
        let tracker = tokio_util::task::TaskTracker::new();
        let handle = start(
            &script,
            config()
                .tracker(tracker.clone())
                .history_capacity(100_000)
                .concurrency_limit(2)
                .task_timeout(Duration::from_millis(500))
                .stream_timeout(Duration::from_secs(1)),
        );
        let mut sent = Vec::new();
        let mut interrupts = 0;
        for op in ops {
            match op {
                Op::Input => {
                    let text = format!("in{}", sent.len());
                    handle.send(input(&text)).await.unwrap();
                    sent.push(text);
                }
                Op::Interrupt => {
                    handle.interrupt("random").await.unwrap();
                    interrupts += 1;
                }
                Op::Advance(ms) => sleep(Duration::from_millis(ms)).await,
            }
        }
        crate::support::within(handle.wait_idle()).await.unwrap();

        let history = crate::support::within(handle.history()).await.unwrap();
        let log: Vec<Event> = history.events().unwrap().iter().map(|r| r.event.clone()).collect();
        let produced = script.produced();

        // Sent input: every one delivered once, in order.
        let inputs: Vec<_> = log
            .iter()
            .filter_map(|e| match e {
                Event::UserInput(text) => Some(text.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(inputs, sent);
        // Stream items: what the streams yielded, plus failure events.
        for name in ["Delta", "Completed"] {
            assert_eq!(count(&log, name), produced.stream_events.get(name).copied().unwrap_or(0), "{name}");
        }
        assert_eq!(
            count(&log, "LlmError"),
            produced.stream_events.get("LlmError").copied().unwrap_or(0) + produced.stream_failure_events
        );
        // Tools: every spawned call produced exactly one event, received once.
        let mut received: BTreeMap<String, u32> = BTreeMap::new();
        for e in &log {
            if let Event::ToolDone { id, .. } = e {
                *received.entry(id.clone()).or_default() += 1;
            }
        }
        assert_eq!(received, produced.tool_events);
        assert!(produced.tool_events.values().all(|n| *n == 1));
        assert_eq!(produced.tools_spawned.len(), produced.tool_events.len());
        // Timers fire at most once per retry scheduled; interrupts each
        // deliver their event.
        assert!(count(&log, "RetryFired") <= produced.retries_scheduled);
        assert_eq!(count(&log, "Interrupted"), interrupts);
        assert_eq!(log.len() as u64, history.steps());

        assert_chained(&history);
        let mut fresh = Agent::new(3);
        replay(&mut fresh, history.events().unwrap()).unwrap();
        assert_eq!(fresh.state(), &handle.state().await.unwrap());
        // The context too: inputs, transcript (partial texts included) and
        // tool batches in arrival order.
        let context = crate::support::within(handle.inspect(|m| m.context().clone())).await.unwrap();
        assert_eq!(fresh.context(), &context);

        assert_eq!(handle.shutdown().await.unwrap(), support::StateKind::Done);
        tracker.close();
        crate::support::within(tracker.wait()).await;
        assert!(tracker.is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        #[test]
        fn random_interleavings_lose_and_duplicate_nothing(
            ops in prop::collection::vec(op(), 1..16),
            outcomes in prop::collection::vec(outcome(), 0..8),
        ) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .unwrap();
            rt.block_on(run(ops, outcomes));
        }
    }
}

mod nested_sends {
    //! Events sent by effects are delivered depth first: what a step's
    //! action sends comes before what earlier steps sent and is still
    //! waiting, so it is taken in the state that step left.

    use agent_fsm::runtime::{self, EffectContext, ExecutorConfig};

    // Public enums in a test's private module, as a user's crate has them.
    #[allow(unreachable_pub)]
    #[agent_fsm::state_machine(fallback = Nothing)]
    pub mod chain {
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            #[initial]
            A,
            B {
                n: u32,
            },
        }

        #[events]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            Go(u32),
            Back,
        }

        #[actions]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            Nothing,
            Went(u32),
            Returned(u32),
        }

        transitions! {
            A + Go(n) => B { n } / Went(n),
            B { n } + Back => A / Returned(n),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_follow_up_is_taken_in_the_state_its_step_left() {
        use chain::{Action, Event, Machine, State};
        let fx = runtime::from_fn(|action: Action, cx: &mut EffectContext<'_, Machine, ()>| match action {
            // Go(1) leads to B; Back then returns to A, whose action sends
            // Go(99) for A; Go(7) was sent before it, by the first step.
            Action::Went(1) => {
                cx.send(Event::Back);
                cx.send(Event::Go(7));
            }
            Action::Returned(1) => cx.send(Event::Go(99)),
            _ => {}
        });
        let handle = runtime::spawn(Machine::new(), fx, ExecutorConfig::new());
        handle.send(Event::Go(1)).await.unwrap();
        crate::support::within(handle.wait_idle()).await.unwrap();
        // Go(1), Back, Go(99) (taken in A), then Go(7) (refused in B).
        assert_eq!(handle.state().await.unwrap(), State::B { n: 99 });
        let history = crate::support::within(handle.history()).await.unwrap();
        let events: Vec<Option<&str>> = history.transitions().map(|t| t.event.map(|e| e.name())).collect();
        assert_eq!(events, [Some("Go"), Some("Back"), Some("Go")]);
        crate::support::within(handle.shutdown()).await.unwrap();
    }
}

mod owed_through_a_cut_chain {
    //! A chain of sends that cancels its task and spawns a new one at every
    //! step, cut by an interrupt or a shutdown at one of its pauses: the
    //! result the last cancelled task still owed is delivered, not dropped
    //! with the chain's sent events. Every task spawned yields one result.

    use agent_fsm::runtime::{self, EffectContext, ExecutorConfig};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[allow(unreachable_pub)]
    #[agent_fsm::state_machine(fallback = Nothing)]
    pub mod relay {
        #[states]
        #[derive(Debug, Clone, PartialEq)]
        pub enum State {
            #[initial]
            Idle,
            Looping,
        }

        #[events]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            Start,
            Tick,
            ToolDone,
            Interrupted,
        }

        #[actions]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            Nothing,
            Begin,
            Again,
        }

        transitions! {
            Idle + Start => Looping / Begin,
            Looping + Tick => Looping / Again,
            Looping | Idle + ToolDone => ignore,
            Looping + Interrupted => Idle / Nothing,
            Idle + Interrupted => ignore,
        }
    }
    use relay::{Action, Event, EventKind, Machine};

    /// Each step gives up its tool call for a fresh one and sends `Tick`.
    fn effects(spawned: Arc<AtomicU64>) -> impl runtime::Effects<Machine, Output = ()> {
        runtime::from_fn(move |action: Action, cx: &mut EffectContext<'_, Machine, ()>| {
            if action == Action::Nothing {
                return;
            }
            if action == Action::Again {
                assert!(cx.cancel_task("tool"));
            }
            spawned.fetch_add(1, Ordering::SeqCst);
            cx.spawn_task("tool", std::future::pending(), |_, _| Event::ToolDone);
            cx.send(Event::Tick);
        })
    }

    async fn results(handle: &runtime::MachineHandle<Machine, ()>) -> u64 {
        let history = crate::support::within(handle.history()).await.unwrap();
        history.events().unwrap().iter().filter(|r| r.event == Event::ToolDone).count() as u64
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn an_interrupt_or_a_shutdown_at_a_pause_keeps_every_owed_result() {
        for shutdown in [false, true] {
            let spawned = Arc::new(AtomicU64::new(0));
            let config =
                ExecutorConfig::new().record_events().interrupt_event(EventKind::Interrupted, |_| Event::Interrupted);
            let handle = runtime::spawn(Machine::new(), effects(Arc::clone(&spawned)), config);
            handle.send(Event::Start).await.unwrap();
            // The worker runs the chain to its first pause.
            tokio::task::yield_now().await;
            assert!(handle.steps() > 1, "the chain has not started");
            if shutdown {
                crate::support::within(handle.shutdown()).await.unwrap();
            } else {
                handle.interrupt("runaway").await.unwrap();
                crate::support::within(handle.wait_idle()).await.unwrap();
            }
            assert_eq!(results(&handle).await, spawned.load(Ordering::SeqCst), "shutdown: {shutdown}");
            crate::support::within(handle.shutdown()).await.unwrap();
        }
    }
}
