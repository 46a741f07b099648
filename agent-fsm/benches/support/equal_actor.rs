//! The fair baseline of the executor benches: a bare tokio actor that uses
//! the same channel operations as the executor, over any machine.
//!
//! Sending, as the executor's handle does: one unit of tokio's cooperative
//! budget, then `try_send`, awaiting `send` only when the inbox is full; a
//! round trip checks the budget, `try_send`s the request with a oneshot
//! and awaits the reply. Receiving, as the worker does: seven messages in
//! eight with `try_recv`, the eighth, and the first after a reply, with
//! `recv().await` (which spends budget and registers the task). Between
//! the two, `handle_event` without an observer: no history, status,
//! notifications or effects. Included with `#[path]`.

use std::future::poll_fn;
use std::hint::black_box;

use agent_fsm::{ActionKindOf, Kinded, StateMachine};
use tokio::sync::{mpsc, oneshot};

/// A message to the actor.
pub(crate) enum Msg<E, K> {
    /// One-way event.
    Event(E),
    /// Event whose action's kind is sent back.
    Call(E, oneshot::Sender<K>),
    /// Answered once every earlier message is handled.
    Flush(oneshot::Sender<()>),
}

/// The actor's message for machine `M`.
type MsgOf<M> = Msg<<M as StateMachine>::Event, ActionKindOf<M>>;

/// A handle to an equal-channel actor over machine `M`.
pub(crate) struct Equal<M: StateMachine>(mpsc::Sender<MsgOf<M>>);

impl<M: StateMachine> Clone for Equal<M> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

/// Starts an actor owning `machine`, with the executor's default inbox
/// capacity (32).
pub(crate) fn equal_spawn<M>(mut machine: M) -> Equal<M>
where
    M: StateMachine + Send + 'static,
    M::Event: Send + 'static,
{
    let (tx, mut rx) = mpsc::channel::<MsgOf<M>>(32);
    tokio::spawn(async move {
        let mut taken: u64 = 0;
        let mut after_call = false;
        loop {
            let msg = if !after_call
                && !taken.is_multiple_of(8)
                && let Ok(msg) = rx.try_recv()
            {
                msg
            } else {
                match rx.recv().await {
                    Some(msg) => msg,
                    None => break,
                }
            };
            taken += 1;
            after_call = false;
            match msg {
                Msg::Event(event) => {
                    black_box(machine.handle_event(event));
                }
                Msg::Call(event, reply) => {
                    let action = machine.handle_event(event).kind();
                    let _ = reply.send(action);
                    after_call = true;
                }
                Msg::Flush(reply) => {
                    let _ = reply.send(());
                }
            }
        }
    });
    Equal(tx)
}

impl<M: StateMachine> Equal<M> {
    /// Sends one event as the executor's `send` does.
    pub(crate) async fn send(&self, event: M::Event) {
        let coop = poll_fn(tokio::task::coop::poll_proceed).await;
        let msg = match self.0.try_send(Msg::Event(event)) {
            Ok(()) => {
                coop.made_progress();
                return;
            }
            Err(mpsc::error::TrySendError::Full(msg)) => msg,
            Err(mpsc::error::TrySendError::Closed(_)) => panic!("the actor stopped"),
        };
        drop(coop);
        assert!(self.0.send(msg).await.is_ok(), "the actor stopped");
    }

    /// Sends `event` as the executor's `call` does and waits for its
    /// action's kind.
    pub(crate) async fn call(&self, event: M::Event) -> ActionKindOf<M> {
        let (tx, rx) = oneshot::channel();
        let msg = Msg::Call(event, tx);
        let queued = if tokio::task::coop::has_budget_remaining() {
            match self.0.try_send(msg) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(msg)) => self.0.send(msg).await.is_ok(),
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        } else {
            self.0.send(msg).await.is_ok()
        };
        assert!(queued, "the actor stopped");
        rx.await.expect("the actor replies")
    }

    /// Waits until every message sent before is handled.
    pub(crate) async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        assert!(self.0.send(Msg::Flush(tx)).await.is_ok(), "the actor stopped");
        rx.await.expect("the actor replies");
    }
}
