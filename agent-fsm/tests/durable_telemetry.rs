//! A durable agent's metrics and spans across a restart: the steps its
//! log holds, fed again to rebuild it, were counted and their hops
//! exported by the run that took them, and are not counted (transitions,
//! refused events) nor given `transition` spans again; the steps after
//! the restart are. A turn is neither exported twice nor lost across a
//! restart, nor opened for an agent rebuilt between turns.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig};
use agent_fsm::store::{CheckpointStore, Durable, MemoryStore, SnapshotPolicy};
use agent_fsm::telemetry::names;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

#[path = "support/clerk.rs"]
mod clerk_machine;
use clerk_machine::clerk;

/// Starts a lookup that answers `Add(10)` once the gate lets it (a tool
/// still running at the stop, which makes the restart feed the log again
/// from before the call), and sends two adds and an event the table
/// refuses.
#[derive(Clone)]
struct Lookups(Arc<tokio::sync::Semaphore>);

impl Effects<clerk::Clerk> for Lookups {
    type Output = ();

    fn perform(&mut self, action: clerk::Action, cx: &mut EffectContext<'_, clerk::Clerk, ()>) {
        if matches!(action, clerk::Action::Lookup) {
            let gate = Arc::clone(&self.0);
            let lookup = async move {
                let _permit = gate.acquire().await;
                clerk::Event::Add(10)
            };
            cx.spawn_task("lookup", lookup, |_, _| clerk::Event::Add(0));
            cx.send(clerk::Event::Add(1));
            cx.send(clerk::Event::Add(2));
            cx.send(clerk::Event::Call);
        }
    }
}

/// A recorder that sums each counter, by name and labels.
#[derive(Default)]
struct Counts(Mutex<BTreeMap<String, Arc<AtomicU64>>>);

impl Counts {
    /// The sum of every series of `name`.
    fn total(&self, name: &str) -> u64 {
        let counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        counts.iter().filter(|(k, _)| k.split('{').next() == Some(name)).map(|(_, c)| c.load(Ordering::SeqCst)).sum()
    }
}

impl Recorder for Counts {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        let mut counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        Counter::from_arc(Arc::clone(counts.entry(name).or_default()))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// Counts the `transition` spans opened.
#[derive(Clone, Default)]
struct Hops(Arc<AtomicU64>);

impl<S: tracing::Subscriber> Layer<S> for Hops {
    fn on_new_span(&self, attrs: &tracing::span::Attributes<'_>, _: &tracing::span::Id, _: Context<'_, S>) {
        if attrs.metadata().name() == "transition" {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Fails a test whose agent hangs, instead of stalling the suite.
#[track_caller]
fn within<T>(future: impl std::future::Future<Output = T>) -> impl std::future::Future<Output = T> {
    let caller = std::panic::Location::caller();
    async move {
        match tokio::time::timeout(Duration::from_secs(20), future).await {
            Ok(out) => out,
            Err(_) => panic!("the agent did not answer in time, at {caller}"),
        }
    }
}

/// Waits until the agent is `Calling { adds }`.
async fn until_called(handle: &agent_fsm::runtime::MachineHandle<clerk::Clerk>, adds: u32) {
    within(async {
        while handle.state().await.expect("runs") != (clerk::State::Calling { adds }) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
}

// Current-thread: the worker runs on this thread, where each recorder is set.
#[tokio::test(flavor = "current_thread")]
async fn the_steps_a_restart_feeds_again_are_not_counted_or_exported_again() {
    let store = Arc::new(MemoryStore::new());
    let durable = || {
        let store: Arc<dyn CheckpointStore> = store.clone();
        Durable::new(store, "clerk")
    };

    let lookups = Lookups(Arc::new(tokio::sync::Semaphore::new(0)));
    let first = Counts::default();
    {
        let _local = metrics::set_default_local_recorder(&first);
        let (handle, _) = durable().spawn(clerk::Clerk::new, lookups.clone(), ExecutorConfig::new()).expect("new");
        handle.send(clerk::Event::Call).await.expect("sent");
        until_called(&handle, 3).await;
        within(handle.shutdown()).await.expect("stops");
    }
    // The call, two adds, the lookup's end at the stop; the second call
    // refused.
    assert_eq!((first.total(names::TRANSITIONS), first.total(names::REFUSED_EVENTS)), (4, 1));

    let second = Counts::default();
    let _local = metrics::set_default_local_recorder(&second);
    let hops = Hops::default();
    let _spans = tracing::subscriber::set_default(tracing_subscriber::registry().with(hops.clone()));
    let (handle, _) = durable().spawn(clerk::Clerk::new, lookups.clone(), ExecutorConfig::new()).expect("resumes");
    until_called(&handle, 3).await;
    assert_eq!((second.total(names::TRANSITIONS), second.total(names::REFUSED_EVENTS)), (0, 0));
    assert_eq!(hops.0.load(Ordering::SeqCst), 0, "no span for a hop fed again");
    // The lookup started again answers: a step of this run.
    lookups.0.add_permits(1);
    until_called(&handle, 13).await;
    // The lookup's answer only: the logged steps were counted by the
    // first run.
    assert_eq!(second.total(names::TRANSITIONS), 1);
    assert_eq!(hops.0.load(Ordering::SeqCst), 1, "the answer's hop has its span");
    within(handle.shutdown()).await.expect("stops");
}

/// What a span layer saw: each `invoke_agent` span's turn number, and for
/// each `transition` span the turn of the `invoke_agent` span it is in.
#[derive(Clone, Default)]
struct Turns(Arc<Mutex<Seen>>);

/// The turn numbers of the `invoke_agent` spans, then the turn each
/// `transition` span is in.
type Seen = (Vec<u64>, Vec<Option<u64>>);

/// Reads a span's `agent_fsm.turn`.
#[derive(Default)]
struct TurnField(Option<u64>);

impl tracing::field::Visit for TurnField {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        if field.name() == "agent_fsm.turn" {
            self.0 = Some(value);
        }
    }
    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

impl<S> Layer<S> for Turns
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    fn on_new_span(&self, attrs: &tracing::span::Attributes<'_>, id: &tracing::span::Id, cx: Context<'_, S>) {
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match attrs.metadata().name() {
            "invoke_agent" => {
                let mut turn = TurnField::default();
                attrs.record(&mut turn);
                let turn = turn.0.expect("a turn span has its number");
                cx.span(id).expect("the new span").extensions_mut().insert(TurnNumber(turn));
                seen.0.push(turn);
            }
            "transition" => {
                let span = cx.span(id).expect("the new span");
                let turn = span.scope().skip(1).find_map(|s| s.extensions().get::<TurnNumber>().map(|t| t.0));
                seen.1.push(turn);
            }
            _ => {}
        }
    }
}

/// The turn number stored on an `invoke_agent` span.
struct TurnNumber(u64);

/// Runs turn 1 whole (`Call` .. `Hang`) and starts turn 2, stops, then
/// spawns the agent again with `snapshots` and a span layer, and ends
/// turn 2: what the layer saw.
async fn restart_in_a_turn(snapshots: SnapshotPolicy) -> Seen {
    use clerk::Event::{Add, Call, Hang};
    restart(snapshots, [Call, Add(1), Hang, Call], [Add(5), Hang]).await
}

/// Sends `before` to a new agent, stops it, then spawns it again with
/// `snapshots` and a span layer and sends `after`: what the layer saw.
async fn restart(
    snapshots: SnapshotPolicy,
    before: impl IntoIterator<Item = clerk::Event>,
    after: impl IntoIterator<Item = clerk::Event>,
) -> Seen {
    use agent_fsm::telemetry::AgentTurns;
    let store = Arc::new(MemoryStore::new());
    let durable = || {
        let store: Arc<dyn CheckpointStore> = store.clone();
        Durable::new(store, "clerk").snapshots(snapshots)
    };
    let config = || {
        let turns = AgentTurns::new("clerk").starts_on([clerk::EventKind::Call]).ends_in([clerk::StateKind::Ready]);
        ExecutorConfig::new().agent_turns(turns)
    };
    {
        let (handle, _) = durable().spawn(clerk::Clerk::new, (), config()).expect("new");
        for event in before {
            within(handle.call(event)).await.expect("handled");
        }
        within(handle.shutdown()).await.expect("stops");
    }

    let seen = Turns::default();
    let _spans = tracing::subscriber::set_default(tracing_subscriber::registry().with(seen.clone()));
    let (handle, _) = durable().spawn(clerk::Clerk::new, (), config()).expect("resumes");
    for event in after {
        within(handle.call(event)).await.expect("handled");
    }
    within(handle.shutdown()).await.expect("stops");
    seen.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

// Current-thread: the worker runs on this thread, where the subscriber is set.
#[tokio::test(flavor = "current_thread")]
async fn an_agent_rebuilt_between_turns_is_in_none() {
    use clerk::Event::{Add, Call, Hang};
    // Rebuilt in an end state, from a snapshot and from the whole log: an
    // event that starts no turn is outside any (no span), and the next
    // turn opens with its input.
    let every = SnapshotPolicy::Every(std::num::NonZeroU64::MIN);
    assert_eq!(restart(every, [Call, Hang], [Add(1)]).await, (vec![], vec![]));
    assert_eq!(restart(SnapshotPolicy::Never, [Call, Hang], [Add(1)]).await, (vec![], vec![]));
    assert_eq!(restart(every, [Call, Hang], [Add(1), Call, Hang]).await, (vec![1], vec![Some(1), Some(1)]));
}

// Current-thread: the worker runs on this thread, where the subscriber is set.
#[tokio::test(flavor = "current_thread")]
async fn a_turn_fed_again_whole_is_not_exported_again_and_one_left_open_is() {
    // The whole log fed again: turn 1 was exported by the first run; turn
    // 2, which that run left unfinished, is exported now, under its
    // number, with this run's two steps in it.
    assert_eq!(restart_in_a_turn(SnapshotPolicy::Never).await, (vec![2], vec![Some(2), Some(2)]));
}

// Current-thread: the worker runs on this thread, where the subscriber is set.
#[tokio::test(flavor = "current_thread")]
async fn an_agent_rebuilt_from_a_snapshot_in_a_turn_goes_on_in_that_turn() {
    // Rebuilt from the snapshot of its last step, mid-turn: no step of the
    // turn is fed again, yet the steps that follow are in a turn (this
    // worker's first), not outside any.
    let every = SnapshotPolicy::Every(std::num::NonZeroU64::MIN);
    assert_eq!(restart_in_a_turn(every).await, (vec![1], vec![Some(1), Some(1)]));
}
