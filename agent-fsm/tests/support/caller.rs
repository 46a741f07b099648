//! A tiny machine that calls a model, for the provider tests: it opens the
//! provider's stream through the effects context, logs every item it
//! receives (so a test asserts exactly what the machine saw), and on a
//! retryable error waits [`RetryPolicy::delay_for`] the attempt and the
//! server's `retry-after`, then calls again, up to `max_attempts`.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use std::time::Duration;

use agent_fsm::llm::{ErrorKind, Provider, ProviderError, Request, StreamEvent};
use agent_fsm::runtime::{EffectContext, Effects, ExecutorConfig, RetryPolicy, spawn};
use futures::StreamExt;

#[agent_fsm::state_machine(fallback = Nothing)]
pub(crate) mod caller {
    use agent_fsm::llm::{ProviderError, StreamEvent};
    use std::time::Duration;

    /// The retry budget.
    #[context]
    pub(crate) struct Config {
        /// Attempts, the first included.
        pub(crate) max_attempts: u32,
    }

    /// Where the call is.
    #[states]
    #[carry(log: Vec<Result<StreamEvent, ProviderError>>)]
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum State {
        /// Nothing asked yet.
        #[initial]
        Idle,
        /// A stream is open.
        Calling {
            /// 1 for the first attempt.
            attempt: u32,
        },
        /// Waiting to retry.
        Backoff {
            /// The attempt that failed.
            attempt: u32,
        },
        /// The reply completed, or failed for good.
        Done,
    }

    /// What the machine hears.
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        /// Call the model.
        Start,
        /// One item of the provider's stream.
        Llm(Result<StreamEvent, ProviderError>),
        /// The backoff is over.
        RetryFired,
    }

    /// What the effects do.
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        /// Nothing.
        Nothing,
        /// Open the stream (attempt number).
        Call(u32),
        /// Wait, then send `RetryFired`.
        Retry {
            /// The attempt that failed.
            attempt: u32,
            /// The server's wait, if it gave one.
            hint: Option<Duration>,
        },
    }

    transitions! {
        Idle | Done + Start => Calling { attempt: 1 } / Call(1),
        Calling + Llm(Ok(event)) [matches!(event, StreamEvent::Completed { .. })] => { log.push(Ok(event)); } Done / Nothing,
        Calling + Llm(Ok(event)) => { log.push(Ok(event)); } Calling / Nothing,
        Calling { attempt } + Llm(Err(error)) [error.is_retryable() && *attempt < ctx.max_attempts]
            => { let hint = error.retry_after(); log.push(Err(error)); } Backoff { attempt } / Retry { attempt, hint },
        Calling + Llm(Err(error)) => { log.push(Err(error)); } Done / Nothing,
        Backoff { attempt } + RetryFired => Calling { attempt: attempt + 1 } / Call(attempt + 1),
    }
}

/// One item of a provider's stream.
pub(crate) type Item = Result<StreamEvent, ProviderError>;

/// Opens `provider`'s stream for each call; waits per `policy` to retry.
pub(crate) struct CallerEffects<P> {
    provider: P,
    request: Request,
    policy: RetryPolicy,
}

impl<P: Provider> Effects<caller::Machine> for CallerEffects<P> {
    type Output = ();

    fn perform(&mut self, action: caller::Action, cx: &mut EffectContext<'_, caller::Machine, ()>) {
        match action {
            caller::Action::Call(_) => {
                cx.stream_keyed("llm", self.provider.stream(&self.request).map(caller::Event::Llm), |_| None);
            }
            caller::Action::Retry { attempt, hint } => {
                cx.cancel_task("llm");
                cx.pause(self.policy.delay_for(attempt, hint), caller::Event::RetryFired);
            }
            caller::Action::Nothing => {}
        }
    }
}

/// Everything the machine received, calling `provider` with `request` and
/// up to `max_attempts` attempts (backoff: 200 ms, doubling, no jitter,
/// so that a server's `retry-after` is told apart from it).
pub(crate) async fn run<P: Provider>(
    provider: P,
    request: Request,
    max_attempts: u32,
) -> Vec<Result<StreamEvent, ProviderError>> {
    let policy = RetryPolicy::default().jitter(0.0).cap(Duration::from_secs(30));
    let machine = caller::Machine::new(caller::Config { max_attempts });
    let handle = spawn(machine, CallerEffects { provider, request, policy }, ExecutorConfig::new());
    let run = async {
        handle.send(caller::Event::Start).await.expect("the machine takes Start");
        handle.wait_idle().await.expect("the machine goes idle");
        handle.state().await.expect("the machine's state")
    };
    // A reply that never ends fails the test rather than hanging it.
    let state = tokio::time::timeout(Duration::from_secs(30), run).await.expect("the call ends");
    handle.shutdown().await.expect("the machine shuts down");
    match state {
        caller::State::Done { log } => log,
        other => panic!("the machine stopped in {other:?}"),
    }
}

/// A log with each error replaced by its kind (transport errors' messages
/// come from the HTTP stack and are not asserted).
pub(crate) fn kinds(log: Vec<Result<StreamEvent, ProviderError>>) -> Vec<Result<StreamEvent, ErrorKind>> {
    log.into_iter().map(|item| item.map_err(|e| e.kind().clone())).collect()
}
