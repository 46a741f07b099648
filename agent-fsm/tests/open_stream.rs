//! `EffectContext::open_stream`: effects that must await before they have
//! a stream. The opening future is awaited as the stream's first poll; its
//! stream's items, or the one event it fails with, follow in order; the
//! stream's timeout covers the opening. On paused tokio time.

use std::time::Duration;

use agent_fsm::runtime::{self, EffectContext, EffectFailure, ExecutorConfig, MachineHandle};
use agent_fsm::state_machine;
use tokio::time::{Instant, sleep, timeout};

#[state_machine(fallback = Nothing, name = Reader)]
mod reader {
    #[states]
    #[derive(Debug)]
    pub(crate) enum State {
        #[initial]
        Idle,
        Reading,
    }

    #[events]
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) enum Event {
        /// Open a stream whose opening takes this long, then fails or not.
        Open {
            delay_ms: u64,
            fail: bool,
        },
        Item(u32),
        Failed(String),
    }

    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
        Read { delay_ms: u64, fail: bool },
    }

    transitions! {
        Idle + Open { delay_ms, fail } => Reading / Read { delay_ms, fail },
        Reading + Item(_) => Reading / Nothing,
        Reading + Failed(_) => Idle / Nothing,
        Reading + Open { .. } => Idle / Nothing,
    }
}

use reader::{Event, Reader};

fn spawn(config: ExecutorConfig<Reader>) -> MachineHandle<Reader> {
    let effects = runtime::from_fn(|action, cx: &mut EffectContext<'_, Reader, ()>| {
        if let reader::Action::Read { delay_ms, fail } = action {
            cx.open_stream_keyed(
                "reply",
                async move {
                    sleep(Duration::from_millis(delay_ms)).await;
                    if fail {
                        return Err(Event::Failed("refused".to_owned()));
                    }
                    Ok(futures::stream::iter([Event::Item(1), Event::Item(2)]))
                },
                |failure: EffectFailure| Some(Event::Failed(failure.to_string())),
            );
        }
    });
    runtime::spawn(Reader::new(), effects, config.record_events())
}

async fn received(handle: &MachineHandle<Reader>) -> Vec<Event> {
    timeout(Duration::from_secs(60), handle.wait_idle()).await.expect("the work ends").expect("running");
    let history = timeout(Duration::from_secs(60), handle.history()).await.expect("answered").expect("running");
    history.events().expect("recorded").iter().map(|r| r.event.clone()).collect()
}

#[tokio::test(start_paused = true)]
async fn the_opened_streams_items_follow_the_opening() {
    let handle = spawn(ExecutorConfig::new());
    let started = Instant::now();
    handle.send(Event::Open { delay_ms: 50, fail: false }).await.expect("sent");
    let events = received(&handle).await;
    assert_eq!(events, [Event::Open { delay_ms: 50, fail: false }, Event::Item(1), Event::Item(2)]);
    assert_eq!(started.elapsed(), Duration::from_millis(50), "the opening was awaited");
}

#[tokio::test(start_paused = true)]
async fn an_opening_that_fails_delivers_its_one_event() {
    let handle = spawn(ExecutorConfig::new());
    handle.send(Event::Open { delay_ms: 5, fail: true }).await.expect("sent");
    let events = received(&handle).await;
    assert_eq!(events, [Event::Open { delay_ms: 5, fail: true }, Event::Failed("refused".to_owned())]);
}

#[tokio::test(start_paused = true)]
async fn the_streams_timeout_covers_the_opening() {
    let handle = spawn(ExecutorConfig::new().stream_timeout(Duration::from_millis(10)));
    handle.send(Event::Open { delay_ms: 1_000, fail: false }).await.expect("sent");
    let events = received(&handle).await;
    assert_eq!(events, [Event::Open { delay_ms: 1_000, fail: false }, Event::Failed("timed out".to_owned())]);
}
