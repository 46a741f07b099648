//! Attaching an agent: one subscription to its notifications, taken
//! between two of its steps together with the hops its history already
//! holds, and a task that turns each notification into a change of the
//! agent's [`Log`] for the open pages.
//!
//! Everything here runs on the inspector's side of the subscription: the
//! worker's only extra work is the notifications it builds for a live
//! subscription (and, with approvals, one copy of the state per step).

use std::sync::Arc;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::control::{Pending, Typed};
use super::log::{Agent, Hop, Log, millis};
use super::view::{AgentView, Shown};
use super::{InspectorError, Shared};
use crate::runtime::{MachineHandle, Notification, RequestError, Subscription, Topics};
use crate::{Kind, StateMachine, Status};

/// The hops a history holds and the state it ends in, by name.
struct Past {
    hops: Vec<(Hop, Instant)>,
    state: &'static str,
    entered: Instant,
}

/// Attaches the agent behind `handle` to `shared`, returning its id.
pub(super) async fn attach<M, O>(
    shared: &Arc<Shared>,
    handle: &MachineHandle<M, O>,
    view: AgentView<M, O>,
) -> Result<usize, InspectorError>
where
    M: StateMachine + Send + 'static,
    M::State: Clone + Send + Sync + 'static,
    M::Event: Clone + Send + Sync + 'static,
    O: Clone + Send + Sync + 'static,
{
    let with_states = view.approvals.is_some();
    // Only what the page shows: not the actions (one notification per
    // event saved), the outputs only if they can be read.
    let mut topics = Topics::TRANSITIONS | Topics::UNHANDLED | Topics::FAULTS;
    if view.outputs.is_some() {
        topics = topics | Topics::OUTPUT;
    }
    let subscriber = handle.clone();
    // Read on the worker, between two steps: the subscription starts right
    // after the last hop the history holds, so no hop is lost or shown twice.
    let (past, subscription) = handle
        .with_history(move |history| {
            let subscription: Subscription<M, O> =
                if with_states { subscriber.subscribe_with_states(topics) } else { subscriber.subscribe_to(topics) };
            let hops = history
                .transitions()
                .map(|t| {
                    let at = t.start + t.duration;
                    let hop = Hop {
                        n: 0,
                        from: t.from.name(),
                        event: t.event.map(|e| e.name()),
                        to: t.to.name(),
                        action: t.action.map(|a| a.name()),
                        row: t.row,
                        at: 0.0,
                        spent: 0.0,
                    };
                    (hop, at)
                })
                .collect();
            let (status, entered) = history.current();
            let state = match status {
                Status::In(kind) => kind.name(),
                _ => "<poisoned>",
            };
            (Past { hops, state, entered }, subscription)
        })
        .await
        .map_err(|_| InspectorError::Failed)?;
    let epoch = shared.epoch;
    let first = past.hops.first().map_or(past.entered, |(_, at)| *at);
    let mut log = Log::new(epoch, past.hops.first().map_or(past.state, |(h, _)| h.from), first);
    for (hop, at) in past.hops {
        log.hop(hop.from, hop.event, hop.to, hop.action, hop.row, millis(epoch, at));
    }
    let pending = Arc::new(Pending::new());
    // The approval pending now, if any: the subscription's states carry
    // it on from here. No page can be open yet, so the log takes it as is.
    if let Some(find) = &view.approvals
        && let Ok(state) = handle.inspect(|m| m.state().clone()).await
        && let Some(shown) = pending.update(find(&state))
    {
        log.approval(shown);
    }
    let control = Typed { handle: handle.clone(), pending: Arc::clone(&pending) };
    // The id is taken only now, with the agent added under the same lock:
    // an attach awaiting the worker above must not hand out an id another
    // attach takes meanwhile.
    let agent = shared.add(|id| Arc::new(Agent::new(id, view.name.clone(), M::DESCRIPTION, log, Box::new(control))));
    let id = agent.id;
    tokio::spawn(follow(agent, subscription, view, pending, handle.clone(), shared.stop.clone()));
    Ok(id)
}

/// Feeds the agent's notifications into its log until its worker exits,
/// and says why if it failed; a panic in the view's readings is noted,
/// and the following goes on. Stops, dropping the subscription, once the
/// inspector stops (`stop`): nobody can see the log any more, and the
/// agent, which outlives the inspector, would otherwise go on building
/// notifications (and copying its state each step) for it, one more
/// subscription for each inspector it was ever attached to.
async fn follow<M, O>(
    agent: Arc<Agent>,
    mut subscription: Subscription<M, O>,
    view: AgentView<M, O>,
    pending: Arc<Pending<M::Event>>,
    handle: MachineHandle<M, O>,
    stop: CancellationToken,
) where
    M: StateMachine + Send + 'static,
    M::State: Clone + Send + 'static,
    M::Event: Clone + Send + 'static,
    O: Clone + Send + 'static,
{
    loop {
        let notification = tokio::select! {
            notification = subscription.recv() => notification,
            () = stop.cancelled() => return,
        };
        let Some(notification) = notification else {
            break;
        };
        match notification {
            Notification::Transition(step) => {
                let (from, event, to, action) = step.names();
                agent.apply(|log| {
                    let at = log.now();
                    log.hop(from, event, to, action, step.row, at)
                });
            }
            Notification::State(state) => {
                if let Some(find) = &view.approvals {
                    // An approval that cannot be read from this state is
                    // withdrawn rather than left answerable.
                    let found = caught(&agent, "approvals", || find(&state)).flatten();
                    if let Some(shown) = pending.update(found) {
                        agent.apply(|log| log.approval(shown));
                    }
                }
            }
            Notification::Output(output) => {
                let Some(read) = view.outputs.as_ref() else {
                    continue;
                };
                let Some(shown) = caught(&agent, "outputs", || read(&output)).flatten() else {
                    continue;
                };
                agent.apply(|log| match shown {
                    Shown::TextDelta(delta) => log.text(delta),
                    Shown::ToolStarted { id, label } => log.tool_started(id, label),
                    Shown::ToolFinished { id } => log.tool_finished(&id),
                    Shown::Note(text) => log.note(text),
                });
            }
            Notification::Unhandled(unhandled) => {
                let text = format!("refused: {} + {} ({})", unhandled.state, unhandled.event.name(), unhandled.reason);
                agent.apply(|log| log.note(text));
            }
            Notification::EffectFailed { key, failure } => {
                let text = format!("{} failed: {failure}", key.as_deref().unwrap_or("a stream"));
                agent.apply(|log| log.note(text));
            }
            Notification::Interrupted { cause } => {
                agent.apply(|log| log.note(format!("interrupted: {cause}")));
            }
            Notification::Lagged(missed) => {
                // The hops missed may have left the page on a state the
                // agent has left (a step whose outputs overflow the log
                // drops its own hop): take the one it is in now, and since
                // when, from its history. The hops still to come are newer
                // than those missed.
                let current = handle.with_history(|history| {
                    let (status, entered) = history.current();
                    let state = match status {
                        Status::In(kind) => kind.name(),
                        _ => "<poisoned>",
                    };
                    (state, entered)
                });
                if let Ok((state, entered)) = current.await {
                    agent.resync(|log| log.now_in(state, entered));
                }
                // The states missed may have replaced or withdrawn the
                // approval shown (a step whose outputs overflow the log
                // drops its own state first): the one shown would then
                // answer a request the user never saw. Read the one
                // pending now; the states still to come are newer than
                // those missed.
                if let Some(find) = &view.approvals {
                    let found = match handle.inspect(|m| m.state().clone()).await {
                        Ok(state) => caught(&agent, "approvals", || find(&state)).flatten(),
                        Err(_) => None,
                    };
                    if let Some(shown) = pending.update(found) {
                        agent.apply(|log| log.approval(shown));
                    }
                }
                agent.apply(|log| log.note(format!("the inspector missed {missed} notifications")));
            }
            _ => {}
        }
    }
    // The worker has exited: a failure (a row that panicked) would
    // otherwise show as a plain "finished".
    if let Err(RequestError::Failed(cause)) = handle.wait_finished().await {
        agent.apply(|log| log.note(format!("the agent's worker failed: {cause}")));
    }
    agent.apply(|log| log.finish());
}

/// Runs one of the view's readings (`what`): a panic in it, the
/// application's code run on what the agent holds or streams, is noted on
/// the page and reads as nothing, rather than ending the task that
/// follows the agent (its page would then freeze as it was, the approval
/// shown still answerable).
fn caught<T>(agent: &Agent, what: &str, read: impl FnOnce() -> T) -> Option<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)) {
        Ok(value) => Some(value),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string panic".to_owned());
            tracing::warn!(agent = agent.name, what, message, "the inspector's view panicked");
            agent.apply(|log| log.note(format!("the view's {what} reading panicked: {message}")));
            None
        }
    }
}
